//! Queue-lock bodies of `LOCK_BATCH_MQ` (41) and `UNLOCK_BATCH_MQ` (42).
//!
//! Java: `LockBatchRequestBody.java`, `UnlockBatchRequestBody.java`, `LockBatchResponseBody.java`
//! (`remoting/protocol/body/`); the broker's lock table is `RebalanceLockManager.java`
//! (`remoting-protocol.md` §3.9, §7.10).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{BodyError, decode_json, encode_json, nullable};
use crate::queue::MessageQueue;

/// The queues a client asks to lock or unlock on one broker.
///
/// Java has two classes of this exact shape, `LockBatchRequestBody` and `UnlockBatchRequestBody`;
/// this one type serves both requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    /// The consumer group.
    #[serde(deserialize_with = "nullable")]
    pub consumer_group: String,
    /// The client asking, which becomes the owner of granted locks.
    #[serde(deserialize_with = "nullable")]
    pub client_id: String,
    /// 5.x replication-aware locking (`lockInStrictMode`); clients send false. Always written:
    /// the Rust broker answers 29 "Request body is invalid" without it.
    #[serde(deserialize_with = "nullable")]
    pub only_this_broker: bool,
    /// The queues, all of this broker.
    #[serde(deserialize_with = "nullable")]
    pub mq_set: BTreeSet<MessageQueue>,
}

impl LockBatchRequestBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "LockBatchRequestBody";

    /// A request for `mq_set` by `client_id` of `consumer_group`, with `onlyThisBroker` false.
    pub fn new(
        consumer_group: &str,
        client_id: &str,
        mq_set: impl IntoIterator<Item = MessageQueue>,
    ) -> Self {
        Self {
            consumer_group: consumer_group.to_owned(),
            client_id: client_id.to_owned(),
            only_this_broker: false,
            mq_set: mq_set.into_iter().collect(),
        }
    }

    /// Reads a lock or unlock request body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}

/// The queues a `LOCK_BATCH_MQ` granted: the subset of the request now held by the client.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LockBatchResponseBody {
    /// The queues locked for the requesting client.
    #[serde(rename = "lockOKMQSet", deserialize_with = "nullable")]
    pub lock_ok_mq_set: BTreeSet<MessageQueue>,
}

impl LockBatchResponseBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "LockBatchResponseBody";

    /// Reads a lock response body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_always_carries_only_this_broker() {
        let body = LockBatchRequestBody::new("g", "c", [MessageQueue::new("T", "b", 1)]);
        assert_eq!(
            String::from_utf8(body.encode()).unwrap(),
            r#"{"consumerGroup":"g","clientId":"c","onlyThisBroker":false,"mqSet":[{"brokerName":"b","queueId":1,"topic":"T"}]}"#
        );
        assert_eq!(LockBatchRequestBody::decode(&body.encode()).unwrap(), body);
    }

    #[test]
    fn response_key_is_lock_ok_mq_set() {
        let body = LockBatchResponseBody::decode(br#"{"lockOKMQSet":null}"#).unwrap();
        assert!(body.lock_ok_mq_set.is_empty());
        let text = String::from_utf8(body.encode()).unwrap();
        assert_eq!(text, r#"{"lockOKMQSet":[]}"#);
    }
}
