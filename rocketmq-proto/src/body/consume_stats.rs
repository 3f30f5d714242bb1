//! [`ConsumeStats`]: the answer to `GET_CONSUME_STATS` (208).
//!
//! Java: `ConsumeStats.java` and `OffsetWrapper.java` (`remoting/protocol/admin/`), filled by
//! `AdminBrokerProcessor.getConsumeStats`. fastjson writes `offsetTable` with `MessageQueue`
//! object keys (`remoting-protocol.md` §6).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BodyError, decode_json, encode_with, nullable, write_mq_map};
use crate::queue::MessageQueue;

/// One broker's view of a consumer group: per queue, the offsets, and the group's consume rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumeStats {
    /// Per queue of every topic reported (see `GetConsumeStatsRequest`), its offsets.
    #[serde(with = "super::mq_map")]
    pub offset_table: BTreeMap<MessageQueue, OffsetWrapper>,
    /// Messages per second the group pulled from this broker, summed over the topics
    /// (`BrokerStatsManager.tpsGroupGetNums`: a one-minute rate).
    #[serde(deserialize_with = "nullable")]
    pub consume_tps: f64,
}

/// One queue's offsets for a group: Java `OffsetWrapper`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OffsetWrapper {
    /// The queue's max offset (the next one to be written); 0 for a queue never written.
    #[serde(deserialize_with = "nullable")]
    pub broker_offset: i64,
    /// The group's committed offset; the broker writes 0 when the group has none.
    #[serde(deserialize_with = "nullable")]
    pub consumer_offset: i64,
    /// 5.x: where the members' pulls stand (`None` from 4.9, which does not send it); what
    /// lies between it and `consumer_offset` is in flight (pulled, not yet committed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_offset: Option<i64>,
    /// The store time of the last consumed message (the one before `consumer_offset`), ms
    /// since the epoch; 0 when unknown.
    #[serde(deserialize_with = "nullable")]
    pub last_timestamp: i64,
}

impl ConsumeStats {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "ConsumeStats";

    /// Reads the body (fastjson object keys, or the keys' JSON text as strings).
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body as a Java broker does, with fastjson object keys in `offsetTable`.
    pub fn encode(&self) -> Vec<u8> {
        encode_with(|body| {
            body.field("consumeTps", &self.consume_tps)?;
            body.field_with("offsetTable", |out| write_mq_map(out, &self.offset_table))
        })
    }

    /// What `mqadmin consumerProgress` prints as "Diff Total": the sum over the queues of
    /// broker offset minus consumer offset (`ConsumeStats.computeTotalDiff`).
    pub fn total_diff(&self) -> i64 {
        self.offset_table
            .values()
            .map(|o| o.broker_offset.saturating_sub(o.consumer_offset))
            .fold(0, i64::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_object_keys() {
        let stats = ConsumeStats {
            offset_table: [(
                MessageQueue::new("T", "broker-a", 1),
                OffsetWrapper {
                    broker_offset: 10,
                    consumer_offset: 4,
                    pull_offset: None,
                    last_timestamp: 1_764_614_400_000,
                },
            )]
            .into(),
            consume_tps: 2.5,
        };
        let text = String::from_utf8(stats.encode()).unwrap();
        assert!(
            text.starts_with(
                r#"{"consumeTps":2.5,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"#
            ),
            "{text}"
        );
        assert_eq!(ConsumeStats::decode(text.as_bytes()).unwrap(), stats);
        assert_eq!(stats.total_diff(), 6);
    }

    /// A body Java 4.9.7's broker sent (`GET_CONSUME_STATS` for a group that read 12 of 20
    /// messages of a two-queue topic and then stopped): object keys, no `pullOffset`.
    #[test]
    fn reads_a_java_4_9_body() {
        let java = br#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"lagT"}:{"brokerOffset":10,"consumerOffset":10,"lastTimestamp":1796150923008},{"brokerName":"broker-a","queueId":0,"topic":"lagT"}:{"brokerOffset":10,"consumerOffset":2,"lastTimestamp":1796150923004}}}"#;
        let stats = ConsumeStats::decode(java).unwrap();
        assert_eq!(stats.consume_tps, 0.0);
        assert_eq!(
            stats.offset_table[&MessageQueue::new("lagT", "broker-a", 0)],
            OffsetWrapper {
                broker_offset: 10,
                consumer_offset: 2,
                pull_offset: None,
                last_timestamp: 1_796_150_923_004,
            }
        );
        assert_eq!(stats.total_diff(), 8);
    }

    /// The same from Java 5.5.0's broker: `pullOffset` too (where the members' pulls stand,
    /// here past the committed offset).
    #[test]
    fn reads_a_java_5_5_body() {
        let java = br#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"lag5"}:{"brokerOffset":10,"consumerOffset":2,"lastTimestamp":1796151494372,"pullOffset":10},{"brokerName":"broker-a","queueId":0,"topic":"lag5"}:{"brokerOffset":10,"consumerOffset":10,"lastTimestamp":1796151494375,"pullOffset":10}}}"#;
        let stats = ConsumeStats::decode(java).unwrap();
        let queue = stats.offset_table[&MessageQueue::new("lag5", "broker-a", 1)];
        assert_eq!((queue.consumer_offset, queue.pull_offset), (2, Some(10)));
        assert_eq!(stats.total_diff(), 8);
    }

    #[test]
    fn empty_and_bad_bodies_are_errors() {
        assert!(ConsumeStats::decode(b"").is_err());
        assert!(ConsumeStats::decode(b"{\"offsetTable\":{\"x\":1}}").is_err());
        assert!(ConsumeStats::decode(b"[1]").is_err());
        let empty = ConsumeStats::decode(b"{\"consumeTps\":0.0,\"offsetTable\":{}}").unwrap();
        assert!(empty.offset_table.is_empty());
    }
}
