//! Bodies of broker-side assignment and pop acks (RocketMQ 5.x): `QUERY_ASSIGNMENT` (400),
//! `SET_MESSAGE_REQUEST_MODE` (401) and `BATCH_ACK_MESSAGE` (200151).
//!
//! Java: `QueryAssignmentRequestBody`, `QueryAssignmentResponseBody`,
//! `SetMessageRequestModeRequestBody`, `BatchAckMessageRequestBody`, `BatchAck`
//! (`remoting/protocol/body/`), `MessageQueueAssignment` and `MessageRequestMode`
//! (`common/message/`).

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{BodyError, MessageModel, decode_json, encode_json, lenient_string_map, nullable};
use crate::queue::MessageQueue;

java_enum! {
    /// How a group reads a topic (`MessageRequestMode.java`).
    #[derive(Default)]
    pub enum MessageRequestMode {
        /// Classic pulls of owned queues (Java's default).
        #[default]
        Pull = "PULL",
        /// Pop: members may share queues, the broker tracks each message.
        Pop = "POP",
    }
}

/// A member asks a broker which queues of `topic` it should read (`QUERY_ASSIGNMENT`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct QueryAssignmentRequestBody {
    /// The topic.
    #[serde(deserialize_with = "nullable")]
    pub topic: String,
    /// The consumer group.
    #[serde(deserialize_with = "nullable")]
    pub consumer_group: String,
    /// The member asking.
    #[serde(deserialize_with = "nullable")]
    pub client_id: String,
    /// The allocation strategy's name (`AllocateMessageQueueStrategy.getName`, e.g. `AVG`);
    /// a broker that does not know it answers with no assignment.
    #[serde(deserialize_with = "nullable")]
    pub strategy_name: String,
    /// Clustering or broadcasting.
    #[serde(deserialize_with = "nullable")]
    pub message_model: MessageModel,
}

impl QueryAssignmentRequestBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "QueryAssignmentRequestBody";

    /// Reads the body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}

/// One queue a broker assigned, with the mode to read it in (`MessageQueueAssignment`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MessageQueueAssignment {
    /// The queue; queue id `-1` in pop mode means every queue of the topic on that broker.
    #[serde(deserialize_with = "nullable")]
    pub message_queue: Option<MessageQueue>,
    /// Pull or pop.
    #[serde(deserialize_with = "nullable")]
    pub mode: MessageRequestMode,
    /// Extra attributes (unused by brokers so far).
    #[serde(deserialize_with = "lenient_string_map")]
    pub attachments: BTreeMap<String, String>,
}

/// A broker's answer to `QUERY_ASSIGNMENT`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct QueryAssignmentResponseBody {
    /// The assigned queues. Java writes `null` when the broker could not assign (unknown topic
    /// or strategy, no member list): that is `None`, which Java's `RebalanceImpl` treats as "no
    /// answer" and keeps the old assignment, while an empty set is "nothing for you".
    pub message_queue_assignments: Option<Vec<MessageQueueAssignment>>,
}

impl QueryAssignmentResponseBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "QueryAssignmentResponseBody";

    /// Reads the body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}

/// Sets how `consumer_group` reads `topic` (`SET_MESSAGE_REQUEST_MODE`); the broker persists
/// it and refuses it for retry topics (`QueryAssignmentProcessor.setMessageRequestMode`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SetMessageRequestModeRequestBody {
    /// The topic.
    #[serde(deserialize_with = "nullable")]
    pub topic: String,
    /// The consumer group.
    #[serde(deserialize_with = "nullable")]
    pub consumer_group: String,
    /// The mode.
    #[serde(deserialize_with = "nullable")]
    pub mode: MessageRequestMode,
    /// In pop mode, how many other members' queues each member also pops; 0 (or at least the
    /// members less one) has every member pop every queue (`allocate4Pop`).
    #[serde(deserialize_with = "nullable")]
    pub pop_share_queue_num: i32,
}

impl SetMessageRequestModeRequestBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "SetMessageRequestModeRequestBody";

    /// Reads the body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}

/// The acks of one checkpoint (`BatchAck`): the messages popped together from one queue by one
/// request, named by their distance from the checkpoint's start offset. Java writes the short
/// member names and reads both (`@JSONField(name = "c", alternateNames = "consumerGroup")`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BatchAck {
    /// The consumer group.
    #[serde(rename = "c", alias = "consumerGroup", deserialize_with = "nullable")]
    pub consumer_group: String,
    /// The subscribed topic (not the retry topic: `retry` says which).
    #[serde(rename = "t", alias = "topic", deserialize_with = "nullable")]
    pub topic: String,
    /// `0`, `1` or `2`, the receipt handle's retry mark.
    #[serde(rename = "r", alias = "retry", deserialize_with = "nullable")]
    pub retry: String,
    /// The checkpoint's start offset.
    #[serde(rename = "so", alias = "startOffset", deserialize_with = "nullable")]
    pub start_offset: i64,
    /// The queue.
    #[serde(rename = "q", alias = "queueId", deserialize_with = "nullable")]
    pub queue_id: i32,
    /// The checkpoint's revive queue.
    #[serde(rename = "rq", alias = "reviveQueueId", deserialize_with = "nullable")]
    pub revive_queue_id: i32,
    /// The checkpoint's pop time.
    #[serde(rename = "pt", alias = "popTime", deserialize_with = "nullable")]
    pub pop_time: i64,
    /// The checkpoint's invisibility.
    #[serde(rename = "it", alias = "invisibleTime", deserialize_with = "nullable")]
    pub invisible_time: i64,
    /// Bit `i` acks the message at `start_offset + i`. Java's `BitSetSerializerDeserializer`
    /// writes `BitSet.toByteArray()` (little-endian bytes, trailing zero bytes dropped) as a
    /// fastjson byte array, which is a base64 string.
    #[serde(rename = "b", alias = "bitSet", with = "bit_set")]
    pub bit_set: Vec<u32>,
}

impl BatchAck {
    /// The acked offsets, in order.
    pub fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        self.bit_set
            .iter()
            .map(move |bit| self.start_offset.saturating_add(i64::from(*bit)))
    }
}

/// `bit_set` as a sorted list of set bit indexes on this side, base64 `BitSet` bytes on the
/// wire.
mod bit_set {
    use super::*;

    /// The largest bit index read: a checkpoint covers at most one pop of 32 messages, so a
    /// larger set is garbage, and decoding it must not allocate without bound.
    const MAX_BITS: usize = 1 << 16;

    pub(super) fn serialize<S: Serializer>(bits: &[u32], serializer: S) -> Result<S::Ok, S::Error> {
        let len = bits.iter().max().map_or(0, |max| *max as usize / 8 + 1);
        let mut bytes = vec![0u8; len];
        for bit in bits {
            if let Some(byte) = bytes.get_mut(*bit as usize / 8) {
                *byte |= 1 << (bit % 8);
            }
        }
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u32>, D::Error> {
        use serde::de::Error as _;
        let Some(text) = Option::<String>::deserialize(deserializer)? else {
            return Ok(Vec::new());
        };
        let bytes = STANDARD
            .decode(text.as_bytes())
            .map_err(|e| D::Error::custom(format!("bit set is not base64: {e}")))?;
        if bytes.len() * 8 > MAX_BITS {
            return Err(D::Error::custom("bit set too large"));
        }
        let mut bits = Vec::new();
        for (index, byte) in bytes.iter().enumerate() {
            for bit in 0..8u32 {
                if byte & (1 << bit) != 0 {
                    bits.push(index as u32 * 8 + bit);
                }
            }
        }
        Ok(bits)
    }
}

/// The body of `BATCH_ACK_MESSAGE`: checkpoint acks to one broker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BatchAckMessageRequestBody {
    /// The broker the acks are for.
    #[serde(deserialize_with = "nullable")]
    pub broker_name: String,
    /// One entry per checkpoint.
    #[serde(deserialize_with = "nullable")]
    pub acks: Vec<BatchAck>,
}

impl BatchAckMessageRequestBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "BatchAckMessageRequestBody";

    /// Reads the body.
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
    fn assignment_answers_read_as_java_writes_them() {
        let body = br#"{"messageQueueAssignments":[{"messageQueue":{"brokerName":"broker-a","queueId":-1,"topic":"T"},"mode":"POP"}]}"#;
        let answer = QueryAssignmentResponseBody::decode(body).unwrap();
        let assignments = answer.message_queue_assignments.unwrap();
        assert_eq!(assignments.len(), 1);
        assert_eq!(assignments[0].mode, MessageRequestMode::Pop);
        assert_eq!(
            assignments[0].message_queue,
            Some(MessageQueue::new("T", "broker-a", -1))
        );
        // fastjson leaves out a null set: no answer, not an empty one.
        let none = QueryAssignmentResponseBody::decode(b"{}").unwrap();
        assert_eq!(none.message_queue_assignments, None);
        let again = QueryAssignmentResponseBody {
            message_queue_assignments: Some(assignments),
        };
        assert_eq!(
            QueryAssignmentResponseBody::decode(&again.encode()).unwrap(),
            again
        );
    }

    #[test]
    fn request_bodies_round_trip() {
        let query = QueryAssignmentRequestBody {
            topic: "T".into(),
            consumer_group: "G".into(),
            client_id: "c".into(),
            strategy_name: "AVG".into(),
            message_model: MessageModel::Clustering,
        };
        let text = String::from_utf8(query.encode()).unwrap();
        assert!(text.contains(r#""messageModel":"CLUSTERING""#), "{text}");
        assert_eq!(
            QueryAssignmentRequestBody::decode(text.as_bytes()).unwrap(),
            query
        );
        let mode = SetMessageRequestModeRequestBody {
            topic: "T".into(),
            consumer_group: "G".into(),
            mode: MessageRequestMode::Pop,
            pop_share_queue_num: 0,
        };
        let text = String::from_utf8(mode.encode()).unwrap();
        assert!(text.contains(r#""mode":"POP""#), "{text}");
        assert_eq!(
            SetMessageRequestModeRequestBody::decode(text.as_bytes()).unwrap(),
            mode
        );
    }

    #[test]
    fn batch_acks_carry_java_bit_sets() {
        let ack = BatchAck {
            consumer_group: "G".into(),
            topic: "T".into(),
            retry: "0".into(),
            start_offset: 100,
            queue_id: 1,
            revive_queue_id: 2,
            pop_time: 5,
            invisible_time: 60_000,
            bit_set: vec![0, 2, 9],
        };
        let body = BatchAckMessageRequestBody {
            broker_name: "b".into(),
            acks: vec![ack],
        };
        let text = String::from_utf8(body.encode()).unwrap();
        // BitSet{0,2,9}.toByteArray() = [0x05, 0x02], base64 "BQI=".
        assert!(text.contains(r#""b":"BQI=""#), "{text}");
        let back = BatchAckMessageRequestBody::decode(text.as_bytes()).unwrap();
        assert_eq!(back, body);
        assert_eq!(back.acks[0].offsets().collect::<Vec<_>>(), [100, 102, 109]);
        // The long member names are read too.
        let long = br#"{"brokerName":"b","acks":[{"consumerGroup":"G","topic":"T","retry":"1","startOffset":3,"queueId":0,"reviveQueueId":1,"popTime":2,"invisibleTime":4,"bitSet":"AQ=="}]}"#;
        let read = BatchAckMessageRequestBody::decode(long).unwrap();
        assert_eq!(read.acks[0].offsets().collect::<Vec<_>>(), [3]);
        assert!(BatchAckMessageRequestBody::decode(br#"{"acks":[{"b":"!!"}]}"#).is_err());
    }
}
