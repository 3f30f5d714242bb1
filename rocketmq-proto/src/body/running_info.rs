//! [`ConsumerRunningInfo`]: the answer to `GET_CONSUMER_RUNNING_INFO` (307).
//!
//! Java: `ConsumerRunningInfo.java`, `ProcessQueueInfo.java`, `PopProcessQueueInfo.java`,
//! `ConsumeStatus.java` (`remoting/protocol/body/`); the client fills it in
//! `DefaultMQPushConsumerImpl.consumerRunningInfo` (`remoting-protocol.md` §3.15). The broker
//! forwards it to Java admin tools (`mqadmin consumerStatus`), which read `mqTable` with fastjson,
//! so [`ConsumerRunningInfo::encode`] writes object keys as the Go client does
//! (`ConsumerRunningInfo.Encode` in rocketmq-client-go `internal/model.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    BodyError, SubscriptionData, decode_json, encode_with, lenient_string_map, nullable,
    write_mq_map,
};
use crate::queue::MessageQueue;

/// A snapshot of one consumer group in this client, for operators.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumerRunningInfo {
    /// The consumer's configuration and the `PROP_*` entries (Java `Properties`: strings).
    #[serde(deserialize_with = "lenient_string_map")]
    pub properties: BTreeMap<String, String>,
    /// The group's subscriptions.
    #[serde(deserialize_with = "nullable")]
    pub subscription_set: Vec<SubscriptionData>,
    /// Per assigned queue, its process-queue state.
    #[serde(with = "super::mq_map")]
    pub mq_table: BTreeMap<MessageQueue, ProcessQueueInfo>,
    /// 5.x pop consumers: per queue, its pop state.
    #[serde(with = "super::mq_map", skip_serializing_if = "BTreeMap::is_empty")]
    pub mq_pop_table: BTreeMap<MessageQueue, PopProcessQueueInfo>,
    /// Per topic, consumption statistics.
    #[serde(deserialize_with = "nullable")]
    pub status_table: BTreeMap<String, ConsumeStatus>,
    /// 5.x: whatever the application adds.
    #[serde(
        deserialize_with = "lenient_string_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub user_consumer_info: BTreeMap<String, String>,
    /// A thread dump, when the request asked for one (`jstackEnable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jstack: Option<String>,
}

impl ConsumerRunningInfo {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "ConsumerRunningInfo";
    /// Property: the name-server addresses.
    pub const PROP_NAMESERVER_ADDR: &'static str = "PROP_NAMESERVER_ADDR";
    /// Property: the consume thread pool's core size.
    pub const PROP_THREADPOOL_CORE_SIZE: &'static str = "PROP_THREADPOOL_CORE_SIZE";
    /// Property: `"true"` for orderly consumers (the Java value has no underscore).
    pub const PROP_CONSUME_ORDERLY: &'static str = "PROP_CONSUMEORDERLY";
    /// Property: the consume type's name, e.g. `CONSUME_PASSIVELY`.
    pub const PROP_CONSUME_TYPE: &'static str = "PROP_CONSUME_TYPE";
    /// Property: the client version.
    pub const PROP_CLIENT_VERSION: &'static str = "PROP_CLIENT_VERSION";
    /// Property: when the consumer started, in epoch milliseconds.
    pub const PROP_CONSUMER_START_TIMESTAMP: &'static str = "PROP_CONSUMER_START_TIMESTAMP";

    /// Reads the body (object keys, or the keys' JSON text as strings).
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body with fastjson object keys in `mqTable` and `mqPopTable`.
    pub fn encode(&self) -> Vec<u8> {
        encode_with(|info| {
            info.field("properties", &self.properties)?;
            info.field("subscriptionSet", &self.subscription_set)?;
            info.field_with("mqTable", |out| write_mq_map(out, &self.mq_table))?;
            if !self.mq_pop_table.is_empty() {
                info.field_with("mqPopTable", |out| write_mq_map(out, &self.mq_pop_table))?;
            }
            info.field("statusTable", &self.status_table)?;
            if !self.user_consumer_info.is_empty() {
                info.field("userConsumerInfo", &self.user_consumer_info)?;
            }
            if let Some(jstack) = &self.jstack {
                info.field("jstack", jstack)?;
            }
            Ok(())
        })
    }
}

/// The state of one assigned queue (`ProcessQueueInfo.java`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProcessQueueInfo {
    /// The committed offset (next to consume).
    #[serde(deserialize_with = "nullable")]
    pub commit_offset: i64,
    /// Smallest cached offset.
    #[serde(deserialize_with = "nullable")]
    pub cached_msg_min_offset: i64,
    /// Largest cached offset.
    #[serde(deserialize_with = "nullable")]
    pub cached_msg_max_offset: i64,
    /// Cached message count.
    #[serde(deserialize_with = "nullable")]
    pub cached_msg_count: i32,
    /// Cached body bytes, in MiB.
    #[serde(rename = "cachedMsgSizeInMiB", deserialize_with = "nullable")]
    pub cached_msg_size_in_mib: i32,
    /// Orderly: smallest offset taken for consumption.
    #[serde(deserialize_with = "nullable")]
    pub transaction_msg_min_offset: i64,
    /// Orderly: largest offset taken for consumption.
    #[serde(deserialize_with = "nullable")]
    pub transaction_msg_max_offset: i64,
    /// Orderly: messages taken for consumption.
    #[serde(deserialize_with = "nullable")]
    pub transaction_msg_count: i32,
    /// Orderly: whether the broker lock is held.
    #[serde(deserialize_with = "nullable")]
    pub locked: bool,
    /// Orderly: failed attempts to release the lock.
    #[serde(deserialize_with = "nullable")]
    pub try_unlock_times: i64,
    /// Orderly: when the lock was last confirmed, epoch ms.
    #[serde(deserialize_with = "nullable")]
    pub last_lock_timestamp: i64,
    /// Whether the queue was dropped (the Java key is misspelled `droped`).
    #[serde(rename = "droped", deserialize_with = "nullable")]
    pub dropped: bool,
    /// Last pull, epoch ms.
    #[serde(deserialize_with = "nullable")]
    pub last_pull_timestamp: i64,
    /// Last consumption, epoch ms.
    #[serde(deserialize_with = "nullable")]
    pub last_consume_timestamp: i64,
}

/// The state of one queue of a pop consumer (`PopProcessQueueInfo.java`, 5.x).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PopProcessQueueInfo {
    /// Messages popped and not yet acknowledged.
    #[serde(deserialize_with = "nullable")]
    pub wait_ack_count: i32,
    /// Whether the queue was dropped (sic `droped`).
    #[serde(rename = "droped", deserialize_with = "nullable")]
    pub dropped: bool,
    /// Last pop, epoch ms.
    #[serde(deserialize_with = "nullable")]
    pub last_pop_timestamp: i64,
}

/// Consumption statistics of one topic (`ConsumeStatus.java`); rates are per second, times in ms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumeStatus {
    /// Mean pull round trip.
    #[serde(rename = "pullRT", deserialize_with = "nullable")]
    pub pull_rt: f64,
    /// Pulled messages per second.
    #[serde(rename = "pullTPS", deserialize_with = "nullable")]
    pub pull_tps: f64,
    /// Mean consumption time.
    #[serde(rename = "consumeRT", deserialize_with = "nullable")]
    pub consume_rt: f64,
    /// Messages consumed successfully per second.
    #[serde(rename = "consumeOKTPS", deserialize_with = "nullable")]
    pub consume_ok_tps: f64,
    /// Messages whose consumption failed per second.
    #[serde(rename = "consumeFailedTPS", deserialize_with = "nullable")]
    pub consume_failed_tps: f64,
    /// Failed messages in the last hour.
    #[serde(rename = "consumeFailedMsgs", deserialize_with = "nullable")]
    pub consume_failed_msgs: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_key_spellings() {
        let mut info = ConsumerRunningInfo::default();
        info.properties.insert(
            ConsumerRunningInfo::PROP_CONSUME_ORDERLY.into(),
            "true".into(),
        );
        info.mq_table.insert(
            MessageQueue::new("T", "b", 0),
            ProcessQueueInfo {
                cached_msg_size_in_mib: 3,
                dropped: true,
                ..ProcessQueueInfo::default()
            },
        );
        info.status_table.insert(
            "T".into(),
            ConsumeStatus {
                consume_ok_tps: 1.5,
                ..ConsumeStatus::default()
            },
        );
        let text = String::from_utf8(info.encode()).unwrap();
        for needle in [
            r#""properties":{"PROP_CONSUMEORDERLY":"true"}"#,
            r#""mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"#,
            r#""cachedMsgSizeInMiB":3"#,
            r#""droped":true"#,
            r#""consumeOKTPS":1.5"#,
            r#""pullRT":0.0"#,
        ] {
            assert!(text.contains(needle), "{needle} in {text}");
        }
        assert!(!text.contains("jstack"));
        assert_eq!(ConsumerRunningInfo::decode(text.as_bytes()).unwrap(), info);
    }

    #[test]
    fn properties_tolerate_non_string_values() {
        let info =
            ConsumerRunningInfo::decode(br#"{"properties":{"a":1,"b":true,"c":null,"d":"x"}}"#)
                .unwrap();
        let expected: BTreeMap<String, String> = [
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "true".to_owned()),
            ("d".to_owned(), "x".to_owned()),
        ]
        .into();
        assert_eq!(info.properties, expected);
    }
}
