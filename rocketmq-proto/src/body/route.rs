//! [`TopicRouteData`]: the name server's answer to `GET_ROUTEINFO_BY_TOPIC` (105).
//!
//! Java: `TopicRouteData.java`, `QueueData.java`, `BrokerData.java` (`remoting/protocol/route/`);
//! the client-side derivations are in `MQClientInstance.java` (`remoting-protocol.md` §3.1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{BodyError, decode_json, encode_json, encode_with, nullable};
use crate::json::{self, JsonError, ObjectWriter};
use crate::queue::{MessageQueue, java_string_cmp};

/// The most queues one broker may declare for a topic in a route this client accepts. Java
/// sets no limit; real topics have at most a few hundred queues per broker.
pub const MAX_QUEUES_PER_BROKER: i32 = 65_536;

/// `PermName.PERM_PRIORITY`.
pub const PERM_PRIORITY: i32 = 8;
/// `PermName.PERM_READ`: consumers may pull from the queues.
pub const PERM_READ: i32 = 4;
/// `PermName.PERM_WRITE`: producers may send to the queues.
pub const PERM_WRITE: i32 = 2;
/// `PermName.PERM_INHERIT`.
pub const PERM_INHERIT: i32 = 1;
/// `MixAll.MASTER_ID`: the broker id of a broker group's master; slaves have ids ≥ 1.
pub const MASTER_ID: i64 = 0;

/// The route of one topic: which broker groups host it, with how many queues, at which addresses.
///
/// Decodes both the standard JSON of name servers ≥ 4.9.4 (`{"0":"host:port"}`) and the fastjson
/// form of older ones (`{0:"host:port"}`); [`TopicRouteData::encode`] and
/// [`TopicRouteData::encode_fastjson`] write each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "TopicRouteDataWire")]
pub struct TopicRouteData {
    /// `"brokerA:4;brokerB:4"`: set only when the name server has order-message KV config; the
    /// producer then uses it instead of `queue_datas`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    /// One entry per broker group hosting the topic.
    pub queue_datas: Vec<QueueData>,
    /// The broker groups' addresses.
    pub broker_datas: Vec<BrokerData>,
    /// Legacy class-filter servers per broker address; normally empty.
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    /// 5.x static-topic mapping (`TopicQueueMappingInfo` per broker name), kept raw: a client
    /// that does not implement logic queues should refuse topics where it is non-empty (see
    /// [`TopicRouteData::has_static_queue_mapping`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub topic_queue_mapping_by_broker: BTreeMap<String, Value>,
}

impl TopicRouteData {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "TopicRouteData";

    /// Reads a route body.
    ///
    /// A queue count outside `0..=`[`MAX_QUEUES_PER_BROKER`] is refused: the counts decide how
    /// many queues a client creates, so a garbled route must not make it allocate millions.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        let route: Self = decode_json(Self::NAME, body)?;
        for q in &route.queue_datas {
            for (field, count) in [
                ("readQueueNums", q.read_queue_nums),
                ("writeQueueNums", q.write_queue_nums),
            ] {
                if !(0..=MAX_QUEUES_PER_BROKER).contains(&count) {
                    return Err(BodyError::Json {
                        body: Self::NAME,
                        source: JsonError::Shape(format!(
                            "{field} {count} of broker {} is outside 0..={MAX_QUEUES_PER_BROKER}",
                            q.broker_name
                        )),
                    });
                }
            }
        }
        Ok(route)
    }

    /// Standard JSON, as name servers ≥ 4.9.4 answer clients that ask for it (string
    /// `brokerAddrs` keys).
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// fastjson's default form, as older name servers (and `GET_BROKER_CLUSTER_INFO`) write it:
    /// `brokerAddrs` keys unquoted (`{0:"host:port"}`).
    pub fn encode_fastjson(&self) -> Vec<u8> {
        encode_with(|route| {
            if let Some(conf) = &self.order_topic_conf {
                route.field("orderTopicConf", conf)?;
            }
            route.field("queueDatas", &self.queue_datas)?;
            route.field_with("brokerDatas", |out| {
                out.push(b'[');
                for (i, broker) in self.broker_datas.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    broker.write_fastjson(out)?;
                }
                out.push(b']');
                Ok(())
            })?;
            route.field("filterServerTable", &self.filter_server_table)?;
            if !self.topic_queue_mapping_by_broker.is_empty() {
                route.field(
                    "topicQueueMappingByBroker",
                    &self.topic_queue_mapping_by_broker,
                )?;
            }
            Ok(())
        })
    }

    /// The queues a consumer may pull from (`MQClientInstance.topicRouteData2TopicSubscribeInfo`):
    /// `0..readQueueNums` of every broker group with [`PERM_READ`], sorted and without
    /// duplicates (Java builds a `HashSet`).
    pub fn subscribe_queues(&self, topic: &str) -> Vec<MessageQueue> {
        let mut queues: Vec<MessageQueue> = self
            .queue_datas
            .iter()
            .filter(|q| q.is_readable())
            .flat_map(|q| {
                (0..q.read_queue_nums).map(|id| MessageQueue::new(topic, &q.broker_name, id))
            })
            .collect();
        queues.sort();
        queues.dedup();
        queues
    }

    /// The queues a producer may send to, in Java's order
    /// (`MQClientInstance.topicRouteData2TopicPublishInfo`).
    ///
    /// With a non-empty `orderTopicConf`, its `broker:count` entries in order (malformed entries,
    /// on which Java would throw, are skipped). Otherwise the broker groups sorted by name, each
    /// with [`PERM_WRITE`] and a known master contributing `0..writeQueueNums`.
    pub fn publish_queues(&self, topic: &str) -> Vec<MessageQueue> {
        if let Some(conf) = self.order_topic_conf.as_deref().filter(|c| !c.is_empty()) {
            return conf
                .split(';')
                .filter_map(|entry| {
                    let (broker, count) = entry.split_once(':')?;
                    Some((broker, count.trim().parse::<i32>().ok()?))
                })
                .flat_map(|(broker, count)| {
                    (0..count).map(move |id| MessageQueue::new(topic, broker, id))
                })
                .collect();
        }
        let mut queue_datas: Vec<&QueueData> = self.queue_datas.iter().collect();
        // `QueueData.compareTo` orders by broker name with `String.compareTo`; the sort is stable
        // like `Collections.sort`.
        queue_datas.sort_by(|a, b| java_string_cmp(&a.broker_name, &b.broker_name));
        queue_datas
            .into_iter()
            .filter(|q| q.is_writable())
            .filter(|q| {
                self.broker(&q.broker_name)
                    .and_then(BrokerData::master_addr)
                    .is_some()
            })
            .flat_map(|q| {
                (0..q.write_queue_nums).map(|id| MessageQueue::new(topic, &q.broker_name, id))
            })
            .collect()
    }

    /// Whether the route carries `orderTopicConf`, making it an order topic for producers.
    pub fn is_order_topic(&self) -> bool {
        self.order_topic_conf
            .as_deref()
            .is_some_and(|c| !c.is_empty())
    }

    /// Whether the topic is a 5.x static topic (logic queues), which this codec does not map.
    pub fn has_static_queue_mapping(&self) -> bool {
        !self.topic_queue_mapping_by_broker.is_empty()
    }

    /// The first [`BrokerData`] of the group `broker_name` (Java's lookups stop at the first).
    pub fn broker(&self, broker_name: &str) -> Option<&BrokerData> {
        self.broker_datas
            .iter()
            .find(|b| b.broker_name == broker_name)
    }

    /// The master address of the group `broker_name`.
    pub fn master_addr(&self, broker_name: &str) -> Option<&str> {
        self.broker(broker_name).and_then(BrokerData::master_addr)
    }
}

/// What arrives: besides the documented keys, the renamed ones.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TopicRouteDataWire {
    order_topic_conf: Option<String>,
    #[serde(deserialize_with = "nullable")]
    queue_datas: Vec<QueueData>,
    #[serde(deserialize_with = "nullable")]
    broker_datas: Vec<BrokerData>,
    #[serde(deserialize_with = "nullable")]
    filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(deserialize_with = "nullable")]
    topic_queue_mapping_by_broker: BTreeMap<String, Value>,
    // The Rust name server (rocketmq-namesrv 1.0.0) names the static-topic member this way;
    // both are read, and a non-empty Java one wins.
    #[serde(deserialize_with = "nullable")]
    topic_queue_mapping_info: BTreeMap<String, Value>,
}

impl From<TopicRouteDataWire> for TopicRouteData {
    fn from(wire: TopicRouteDataWire) -> Self {
        Self {
            order_topic_conf: wire.order_topic_conf,
            queue_datas: wire.queue_datas,
            broker_datas: wire.broker_datas,
            filter_server_table: wire.filter_server_table,
            topic_queue_mapping_by_broker: if wire.topic_queue_mapping_by_broker.is_empty() {
                wire.topic_queue_mapping_info
            } else {
                wire.topic_queue_mapping_by_broker
            },
        }
    }
}

/// One broker group's share of a topic (`QueueData.java`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "QueueDataWire")]
pub struct QueueData {
    /// The broker group.
    pub broker_name: String,
    /// Queues consumers read: ids `0..read_queue_nums`.
    pub read_queue_nums: i32,
    /// Queues producers write: ids `0..write_queue_nums`.
    pub write_queue_nums: i32,
    /// [`PERM_READ`] | [`PERM_WRITE`] | …
    pub perm: i32,
    /// Topic system flags (`TopicSysFlag.java`).
    pub topic_sys_flag: i32,
}

impl QueueData {
    /// Whether consumers may pull ([`PERM_READ`]).
    pub fn is_readable(&self) -> bool {
        self.perm & PERM_READ != 0
    }

    /// Whether producers may send ([`PERM_WRITE`]).
    pub fn is_writable(&self) -> bool {
        self.perm & PERM_WRITE != 0
    }
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct QueueDataWire {
    #[serde(deserialize_with = "nullable")]
    broker_name: String,
    #[serde(deserialize_with = "nullable")]
    read_queue_nums: i32,
    #[serde(deserialize_with = "nullable")]
    write_queue_nums: i32,
    #[serde(deserialize_with = "nullable")]
    perm: i32,
    topic_sys_flag: Option<i32>,
    // Spelled this way before 4.9.0 (renamed in apache/rocketmq commit 4117d0019a).
    topic_syn_flag: Option<i32>,
}

impl From<QueueDataWire> for QueueData {
    fn from(wire: QueueDataWire) -> Self {
        Self {
            broker_name: wire.broker_name,
            read_queue_nums: wire.read_queue_nums,
            write_queue_nums: wire.write_queue_nums,
            perm: wire.perm,
            topic_sys_flag: wire.topic_sys_flag.or(wire.topic_syn_flag).unwrap_or(0),
        }
    }
}

/// One broker group: its name, cluster and node addresses (`BrokerData.java`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BrokerData {
    /// The cluster the group belongs to.
    #[serde(deserialize_with = "nullable")]
    pub cluster: String,
    /// The group's name.
    #[serde(deserialize_with = "nullable")]
    pub broker_name: String,
    /// Broker id → `"host:port"`; id [`MASTER_ID`] is the master. fastjson writes the keys
    /// unquoted (`{0:"…"}`), which [`crate::json`] reads as the string `"0"`.
    #[serde(deserialize_with = "nullable")]
    pub broker_addrs: BTreeMap<i64, String>,
    /// 5.x zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
    /// 5.x: a slave acts as master while the master is down.
    #[serde(deserialize_with = "nullable")]
    pub enable_acting_master: bool,
}

impl BrokerData {
    /// The master's address.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&MASTER_ID).map(String::as_str)
    }

    /// The master's address, else the lowest-id slave's (Java's `selectBrokerAddr` picks a
    /// random slave; a deterministic choice suits a sans-IO core).
    pub fn master_or_any_addr(&self) -> Option<&str> {
        self.master_addr()
            .or_else(|| self.broker_addrs.values().next().map(String::as_str))
    }

    fn write_fastjson(&self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        let mut broker = ObjectWriter::new(out);
        broker.field("cluster", &self.cluster)?;
        broker.field("brokerName", &self.broker_name)?;
        broker.field_with("brokerAddrs", |out| {
            json::write_keyed_map(out, &self.broker_addrs)
        })?;
        if let Some(zone) = &self.zone_name {
            broker.field("zoneName", zone)?;
        }
        broker.field("enableActingMaster", &self.enable_acting_master)?;
        broker.finish();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(name: &str, addrs: &[(i64, &str)]) -> BrokerData {
        BrokerData {
            cluster: "c".into(),
            broker_name: name.into(),
            broker_addrs: addrs.iter().map(|(id, a)| (*id, (*a).to_owned())).collect(),
            ..BrokerData::default()
        }
    }

    fn queues(name: &str, read: i32, write: i32, perm: i32) -> QueueData {
        QueueData {
            broker_name: name.into(),
            read_queue_nums: read,
            write_queue_nums: write,
            perm,
            topic_sys_flag: 0,
        }
    }

    #[test]
    fn subscribe_queues_need_read_permission() {
        let route = TopicRouteData {
            queue_datas: vec![
                queues("b", 2, 8, PERM_READ | PERM_WRITE),
                queues("a", 1, 1, PERM_WRITE),
                queues("c", -3, 1, PERM_READ),
            ],
            ..TopicRouteData::default()
        };
        assert_eq!(
            route.subscribe_queues("T"),
            vec![
                MessageQueue::new("T", "b", 0),
                MessageQueue::new("T", "b", 1)
            ]
        );
    }

    #[test]
    fn publish_queues_need_write_permission_and_a_master() {
        let route = TopicRouteData {
            queue_datas: vec![
                queues("c", 1, 2, PERM_READ | PERM_WRITE),
                queues("a", 1, 1, PERM_READ | PERM_WRITE),
                queues("b", 1, 1, PERM_READ | PERM_WRITE),
                queues("d", 1, 1, PERM_READ),
            ],
            broker_datas: vec![
                broker("a", &[(0, "a:1")]),
                broker("b", &[(1, "b:2")]),
                broker("c", &[(0, "c:1"), (1, "c:2")]),
                broker("d", &[(0, "d:1")]),
            ],
            ..TopicRouteData::default()
        };
        assert_eq!(
            route.publish_queues("T"),
            vec![
                MessageQueue::new("T", "a", 0),
                MessageQueue::new("T", "c", 0),
                MessageQueue::new("T", "c", 1),
            ]
        );
        assert!(!route.is_order_topic());
    }

    #[test]
    fn order_topic_conf_overrides_queue_datas() {
        let route = TopicRouteData {
            order_topic_conf: Some("b:2;bad;a:x;a:1".into()),
            queue_datas: vec![queues("z", 1, 9, PERM_READ | PERM_WRITE)],
            broker_datas: vec![broker("z", &[(0, "z:1")])],
            ..TopicRouteData::default()
        };
        assert!(route.is_order_topic());
        assert_eq!(
            route.publish_queues("T"),
            vec![
                MessageQueue::new("T", "b", 0),
                MessageQueue::new("T", "b", 1),
                MessageQueue::new("T", "a", 0),
            ]
        );
    }

    #[test]
    fn addresses() {
        let route = TopicRouteData {
            broker_datas: vec![
                broker("a", &[(2, "a:2"), (1, "a:1")]),
                broker("b", &[(0, "b:0")]),
            ],
            ..TopicRouteData::default()
        };
        assert_eq!(route.master_addr("a"), None);
        assert_eq!(
            route.broker("a").and_then(BrokerData::master_or_any_addr),
            Some("a:1")
        );
        assert_eq!(route.master_addr("b"), Some("b:0"));
        assert_eq!(route.master_addr("x"), None);
    }

    #[test]
    fn both_encodings_decode_alike() {
        let route = TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![queues("a", 4, 4, 6)],
            broker_datas: vec![broker("a", &[(0, "h:1"), (1, "h:2")])],
            filter_server_table: BTreeMap::new(),
            topic_queue_mapping_by_broker: BTreeMap::new(),
        };
        let fastjson = route.encode_fastjson();
        let text = String::from_utf8(fastjson.clone()).unwrap();
        assert!(
            text.contains(r#""brokerAddrs":{0:"h:1",1:"h:2"}"#),
            "{text}"
        );
        assert_eq!(TopicRouteData::decode(&fastjson).unwrap(), route);
        let standard = route.encode();
        assert!(
            String::from_utf8(standard.clone())
                .unwrap()
                .contains(r#"{"0":"h:1","1":"h:2"}"#)
        );
        assert_eq!(TopicRouteData::decode(&standard).unwrap(), route);
    }

    #[test]
    fn static_topic_mapping_under_either_name() {
        let java = TopicRouteData::decode(br#"{"topicQueueMappingByBroker":{"b":{"bname":"b"}}}"#)
            .unwrap();
        assert!(java.has_static_queue_mapping());
        let rust =
            TopicRouteData::decode(br#"{"topicQueueMappingInfo":{"b":{"bname":"b"}}}"#).unwrap();
        assert_eq!(rust, java);
        let none = TopicRouteData::decode(br#"{"topicQueueMappingInfo":null}"#).unwrap();
        assert!(!none.has_static_queue_mapping());
    }
}
