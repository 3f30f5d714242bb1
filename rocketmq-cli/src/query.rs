//! `rmq query`: stored messages by key or by id, as `mqadmin queryMsgByKey` and
//! `queryMsgById` find them.
//!
//! - By key: `QUERY_MESSAGE` (12) to every broker group of the topic's route, answered from
//!   each broker's hash index; what comes back is filtered again by topic and key, since keys
//!   whose hashes collide share index slots (`MQAdminImpl.queryMessage`).
//! - By id: an offset message id (what a send answers as `offsetMsgId`: the storing broker's
//!   address and the message's commit-log offset, `MessageDecoder.decodeMessageId`) is read with
//!   `VIEW_MESSAGE_BY_ID` (33) from that broker. Any other id, such as the `UNIQ_KEY` a producer
//!   gives each message (what consumers see as `msg_id`), is looked up in the topic's index as a
//!   unique key (`_UNIQUE_KEY_QUERY`), as Java's `DefaultMQAdminExtImpl.viewMessage(topic, id)`
//!   falls back to; that needs the topic. Both ids are 32 hex digits for IPv4 hosts, so an id is
//!   taken as an offset id only when the address it decodes to is a broker of the cluster.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use proto::body::TopicRouteData;
use proto::headers::{QueryMessageRequest, ViewMessageRequest};
use proto::message::{DecodeOptions, Message, decode_messages};
use proto::{Command, RequestCode, ResponseCode};
use serde_json::Value;

use crate::admin::{self, AdminError, Cluster, TIMEOUT, expect_success};
use crate::blocking::ClientError;
use crate::decode::message_json;

/// How many messages a key query asks each broker for, as `mqadmin queryMsgByKey` does
/// (`QueryMsgByKeySubCommand`: 64); the broker caps it at its `maxMsgsNumBatch` (64).
pub const MAX_PER_BROKER: i32 = 64;

/// An offset message id, decoded (`MessageDecoder.decodeMessageId`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetMsgId {
    /// The address of the broker that stored the message.
    pub store_host: SocketAddr,
    /// The message's commit-log offset there.
    pub commit_log_offset: i64,
}

impl OffsetMsgId {
    /// Reads `id`: 32 hex digits (an IPv4 address, a port, an offset) or 56 (IPv6), either
    /// case. `None` for anything else. A `UNIQ_KEY` id has the same shape, so the result is
    /// only a candidate (see the module docs).
    pub fn parse(id: &str) -> Option<Self> {
        let bytes = hex::decode(id).ok()?;
        let (ip, rest): (IpAddr, &[u8]) = match bytes.len() {
            16 => {
                let (ip, rest) = bytes.split_first_chunk::<4>()?;
                (Ipv4Addr::from(*ip).into(), rest)
            }
            28 => {
                let (ip, rest) = bytes.split_first_chunk::<16>()?;
                (Ipv6Addr::from(*ip).into(), rest)
            }
            _ => return None,
        };
        let (port, rest) = rest.split_first_chunk::<4>()?;
        let offset = rest.first_chunk::<8>()?;
        let port = u16::try_from(i32::from_be_bytes(*port)).ok()?;
        Some(Self {
            store_host: SocketAddr::new(ip, port),
            commit_log_offset: i64::from_be_bytes(*offset),
        })
    }
}

/// The messages of `topic` whose keys include `key`, each as `rmq consume` prints it (with
/// `broker_name`), oldest first.
pub fn by_key(cluster: &Cluster, topic: &str, key: &str) -> Result<Vec<Value>, AdminError> {
    let route = topic_route(cluster, topic)?;
    let wire_topic = cluster.wire_name(topic)?;
    let found = query_index(cluster, &route, &wire_topic, key, false)?;
    let mut matched: Vec<(String, Message)> = found
        .into_iter()
        .filter(|(_, m)| m.topic() == wire_topic && m.key_list().any(|k| k == key))
        .collect();
    matched.sort_by_key(|(_, m)| (m.store_timestamp(), m.commit_log_offset()));
    Ok(matched
        .iter()
        .map(|(broker, m)| printed(cluster, broker, m))
        .collect())
}

/// The message with id `id`: an offset message id of a broker of the cluster, or else (with
/// `topic`) a unique key looked up in the topic's index.
pub fn by_id(cluster: &Cluster, id: &str, topic: Option<&str>) -> Result<Value, AdminError> {
    let brokers = broker_names_by_addr(cluster)?;
    if let Some(decoded) = OffsetMsgId::parse(id)
        && let Some(name) = brokers.get(&decoded.store_host.to_string())
    {
        let addr = decoded.store_host.to_string();
        let mut client = cluster.connect(&addr)?;
        let header = ViewMessageRequest {
            offset: decoded.commit_log_offset,
            topic: topic.map(|t| cluster.wire_name(t)).transpose()?,
        };
        let response = client
            .call(
                Command::request(RequestCode::VIEW_MESSAGE_BY_ID, &header),
                TIMEOUT,
            )
            .map_err(|e| over_tls(cluster, e))?;
        // No message at that offset: SYSTEM_ERROR "can not find message by the offset"
        // (`QueryMessageProcessor.viewMessageById`).
        if response.response_code() == ResponseCode::SYSTEM_ERROR
            && response
                .remark
                .as_deref()
                .is_some_and(|r| r.starts_with("can not find message"))
        {
            return Err(AdminError::NotFound(format!(
                "no message with id {id}: {name} has none at commit-log offset {}",
                decoded.commit_log_offset
            )));
        }
        let response = expect_success(response).map_err(|e| e.at(name))?;
        // The broker reads whatever record size it finds at the offset: an id made up (or an
        // offset inside a message) comes back as bytes that are no message.
        let not_a_message = |why: String| {
            AdminError::NotFound(format!(
                "no message with id {id}: none starts at commit-log offset {} of {name} ({why})",
                decoded.commit_log_offset
            ))
        };
        let batch = decode_messages(&response.body, &DecodeOptions::default());
        let message = batch
            .into_result()
            .map_err(|e| not_a_message(e.to_string()))?
            .into_iter()
            .next()
            .ok_or_else(|| not_a_message("the broker answered no record".into()))?;
        return Ok(printed(cluster, name, &message));
    }
    let Some(topic) = topic else {
        return Err(AdminError::NotFound(format!(
            "{id} is not an offset message id of a broker of this cluster; a message's unique \
             key (its msg_id) is looked up with --topic"
        )));
    };
    let route = topic_route(cluster, topic)?;
    let wire_topic = cluster.wire_name(topic)?;
    let found = query_index(cluster, &route, &wire_topic, id, true)?;
    // Java keeps the earliest stored copy (`MQAdminImpl.queryMessage` with isUniqKey).
    found
        .iter()
        .filter(|(_, m)| m.topic() == wire_topic && m.msg_id() == id)
        .min_by_key(|(_, m)| m.store_timestamp())
        .map(|(broker, m)| printed(cluster, broker, m))
        .ok_or_else(|| AdminError::NotFound(format!("no message of topic {topic} has id {id}")))
}

fn topic_route(cluster: &Cluster, topic: &str) -> Result<TopicRouteData, AdminError> {
    match admin::route(cluster, topic) {
        Err(AdminError::Refused {
            code: ResponseCode::TOPIC_NOT_EXIST,
            ..
        }) => Err(AdminError::NotFound(format!("topic {topic} not found"))),
        other => other,
    }
}

/// `QUERY_MESSAGE` for `key` to every broker group of `route`: what each index returned, with
/// the broker's name. A broker with nothing answers `QUERY_NOT_FOUND`.
fn query_index(
    cluster: &Cluster,
    route: &TopicRouteData,
    wire_topic: &str,
    key: &str,
    unique: bool,
) -> Result<Vec<(String, Message)>, AdminError> {
    let mut found = Vec::new();
    for broker in admin::brokers_of(route, false) {
        let mut client = cluster.connect(&broker.addr)?;
        let header = QueryMessageRequest {
            topic: wire_topic.to_owned(),
            key: key.to_owned(),
            max_num: MAX_PER_BROKER,
            begin_timestamp: 0,
            end_timestamp: i64::MAX,
            unique_key_query: Some(unique),
        };
        // Java gives a query three admin timeouts (`MQAdminImpl.queryMessage`): the broker
        // reads every hit from its commit log.
        let response = client
            .call(
                Command::request(RequestCode::QUERY_MESSAGE, &header),
                TIMEOUT * 3,
            )
            .map_err(|e| over_tls(cluster, e))?;
        if response.response_code() == ResponseCode::QUERY_NOT_FOUND {
            continue;
        }
        let response = expect_success(response).map_err(|e| e.at(&broker.name))?;
        let batch = decode_messages(&response.body, &DecodeOptions::default());
        let messages = batch
            .into_result()
            .map_err(|e| AdminError::Body(format!("{}: {e}", broker.name)))?;
        found.extend(messages.into_iter().map(|m| (broker.name.clone(), m)));
    }
    Ok(found)
}

/// A query answer that never completes over TLS: Java 4.9's broker sends both answers as a
/// `FileRegion`, which its `FileRegionEncoder` copies for TLS counting the buffer's capacity as
/// the bytes written, so it stops early and the frame arrives shorter than its length says
/// (seen: 783 of 1373 bytes for a key query of four messages, while a view of one of them
/// arrived whole). 5.x counts the bytes and is not affected.
fn over_tls(cluster: &Cluster, error: ClientError) -> AdminError {
    match error {
        ClientError::Timeout(addr, after) if cluster.tls.is_some() => {
            AdminError::Limitation(format!(
                "{addr}: no complete answer within {after:?}; over TLS a Java 4.9 broker can cut \
                 QUERY_MESSAGE and VIEW_MESSAGE_BY_ID answers short (its FileRegionEncoder \
                 miscounts), which no client can read"
            ))
        }
        other => other.into(),
    }
}

/// Every broker address of the cluster (`GET_BROKER_CLUSTER_INFO`'s `brokerAddrTable`) with
/// its broker group's name.
fn broker_names_by_addr(cluster: &Cluster) -> Result<BTreeMap<String, String>, AdminError> {
    let info = admin::cluster_info(cluster)?;
    let mut names = BTreeMap::new();
    if let Some(table) = info.get("brokerAddrTable").and_then(Value::as_object) {
        for (name, broker) in table {
            if let Some(addrs) = broker.get("brokerAddrs").and_then(Value::as_object) {
                for addr in addrs.values().filter_map(Value::as_str) {
                    names.insert(addr.to_owned(), name.clone());
                }
            }
        }
    }
    Ok(names)
}

/// `message` as `rmq consume` prints it: its JSON with `broker_name`, the topic without the
/// namespace.
fn printed(cluster: &Cluster, broker: &str, message: &Message) -> Value {
    let mut json = message_json(message);
    if let Some(fields) = json.as_object_mut() {
        fields.insert("topic".into(), cluster.app_name(message.topic()).into());
        fields.insert("broker_name".into(), broker.into());
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids as Java's `MessageDecoder.createMessageId` writes them.
    #[test]
    fn offset_ids_decode_as_java_encodes_them() {
        // 127.0.0.1:10911, commit-log offset 0x1234.
        let id = OffsetMsgId::parse("7F00000100002A9F0000000000001234").unwrap();
        assert_eq!(id.store_host, "127.0.0.1:10911".parse().unwrap());
        assert_eq!(id.commit_log_offset, 0x1234);
        assert_eq!(
            OffsetMsgId::parse("7f00000100002a9f0000000000001234"),
            Some(id)
        );
        let v6 =
            OffsetMsgId::parse("000000000000000000000000000000010000271100000000000000FF").unwrap();
        assert_eq!(v6.store_host, "[::1]:10001".parse().unwrap());
        assert_eq!(v6.commit_log_offset, 255);
        for bad in [
            "",
            "7F000001",
            "zz00000100002A9F0000000000001234",
            "7F00000100002A9F00000000000012",
        ] {
            assert_eq!(OffsetMsgId::parse(bad), None, "{bad}");
        }
        // A port that does not fit.
        assert_eq!(OffsetMsgId::parse("7F000001FFFFFFFF0000000000001234"), None);
    }
}
