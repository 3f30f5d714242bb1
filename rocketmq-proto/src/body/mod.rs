//! The JSON bodies of the remoting commands a consumer sends and receives.
//!
//! Every body has `decode(&[u8])`, which goes through the tolerant reader of [`crate::json`] (so
//! fastjson's unquoted integer keys and object keys are accepted), and `encode()`, which writes
//! what the Java peer expects. Both directions exist for every body, so a simulated broker can
//! produce what the client consumes and the other way round.
//!
//! Decoding is lenient in the ways Java peers need (`remoting-protocol.md` §6): unknown members
//! are ignored (fields were added across versions), and a missing member or an explicit `null`
//! (the Rust broker writes `"zoneName":null`) takes its default. Enums travel by name.
//!
//! Maps keyed by [`MessageQueue`] are written with fastjson's object keys by `encode()`, because
//! Java tools read them with fastjson. Their serde [`Serialize`] impl (used for example to turn a
//! body into a `serde_json::Value`) writes each key as the key object's compact JSON text instead,
//! which is the normalized form [`crate::json::parse`] produces, so both decode alike.
//!
//! | body | request | direction |
//! |---|---|---|
//! | [`TopicRouteData`] | `GET_ROUTEINFO_BY_TOPIC` (105) response | name server → client |
//! | [`HeartbeatData`] | `HEART_BEAT` (34) | client → broker |
//! | [`ConsumerListBody`] | `GET_CONSUMER_LIST_BY_GROUP` (38) response | broker → client |
//! | [`LockBatchRequestBody`] | `LOCK_BATCH_MQ` (41), `UNLOCK_BATCH_MQ` (42) | client → broker |
//! | [`LockBatchResponseBody`] | `LOCK_BATCH_MQ` (41) response | broker → client |
//! | [`CheckClientRequestBody`] | `CHECK_CLIENT_CONFIG` (46) | client → broker |
//! | [`ResetOffsetBody`] | `RESET_CONSUMER_CLIENT_OFFSET` (220) | broker → client |
//! | [`GetConsumerStatusBody`] | `GET_CONSUMER_STATUS_FROM_CLIENT` (221) response | client → broker |
//! | [`ConsumerRunningInfo`] | `GET_CONSUMER_RUNNING_INFO` (307) response | client → broker |
//! | [`ConsumeMessageDirectlyResult`] | `CONSUME_MESSAGE_DIRECTLY` (309) response | client → broker |
//! | [`QueryAssignmentRequestBody`] | `QUERY_ASSIGNMENT` (400) | client → broker |
//! | [`QueryAssignmentResponseBody`] | `QUERY_ASSIGNMENT` (400) response | broker → client |
//! | [`SetMessageRequestModeRequestBody`] | `SET_MESSAGE_REQUEST_MODE` (401) | client → broker |
//! | [`BatchAckMessageRequestBody`] | `BATCH_ACK_MESSAGE` (200151) | client → broker |
//! | [`ConsumeStats`] | `GET_CONSUME_STATS` (208) response | broker → admin |
//! | [`OffsetTable`] | the local `offsets.json` of a broadcasting consumer | file |

/// A Java enum that travels by constant name: a `#[non_exhaustive]` Rust enum whose serde form
/// is that name, plus `name()`. An unknown name is a decoding error naming the known ones.
macro_rules! java_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $java:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[derive(serde::Serialize, serde::Deserialize)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$variant_meta])* #[serde(rename = $java)] $variant, )*
        }

        impl $name {
            /// The Java constant's name, as it travels in JSON.
            pub fn name(self) -> &'static str {
                match self {
                    $( Self::$variant => $java, )*
                }
            }
        }
    };
}

mod check_client;
mod consume_directly;
mod consume_stats;
mod consumer_list;
mod consumer_status;
mod heartbeat;
mod lock;
mod offset_table;
mod pop;
mod reset_offset;
mod route;
mod running_info;

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use thiserror::Error;

use crate::json::{self, JsonError, ObjectWriter};
use crate::queue::MessageQueue;

pub use check_client::CheckClientRequestBody;
pub use consume_directly::{ConsumeMessageDirectlyResult, ConsumeResult};
pub use consume_stats::{ConsumeStats, OffsetWrapper};
pub use consumer_list::ConsumerListBody;
pub use consumer_status::GetConsumerStatusBody;
pub use heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ExpressionType, HeartbeatData, MessageModel,
    ProducerData, SubscriptionData, java_string_hash,
};
pub use lock::{LockBatchRequestBody, LockBatchResponseBody};
pub use offset_table::OffsetTable;
pub use pop::{
    BatchAck, BatchAckMessageRequestBody, MessageQueueAssignment, MessageRequestMode,
    QueryAssignmentRequestBody, QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
};
pub use reset_offset::ResetOffsetBody;
pub use route::{
    BrokerData, MASTER_ID, MAX_QUEUES_PER_BROKER, PERM_INHERIT, PERM_PRIORITY, PERM_READ,
    PERM_WRITE, QueueData, TopicRouteData,
};
pub use running_info::{ConsumeStatus, ConsumerRunningInfo, PopProcessQueueInfo, ProcessQueueInfo};

/// Why a body could not be decoded.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyError {
    /// The command carried no body where one is required (Java treats a `SUCCESS` without a
    /// body as an error too).
    #[error("{body} body is empty")]
    Empty {
        /// The Java class name of the expected body.
        body: &'static str,
    },
    /// The body is not JSON, or not of the body's shape.
    #[error("bad {body} body: {source}")]
    Json {
        /// The Java class name of the expected body.
        body: &'static str,
        /// What was wrong, with the byte position for syntax errors.
        #[source]
        source: JsonError,
    },
}

impl BodyError {
    /// The byte offset in the body where a syntax error was found.
    pub fn position(&self) -> Option<usize> {
        match self {
            Self::Empty { .. } => None,
            Self::Json { source, .. } => source.position(),
        }
    }
}

/// Reads `bytes` as the body named `body`.
fn decode_json<T: DeserializeOwned>(body: &'static str, bytes: &[u8]) -> Result<T, BodyError> {
    if bytes.is_empty() {
        return Err(BodyError::Empty { body });
    }
    let fail = |source| BodyError::Json { body, source };
    let value = json::parse(bytes).map_err(fail)?;
    // serde's derived structs also accept an array of their fields in order; every body is a
    // JSON object in Java, so anything else is refused before it can be read positionally.
    if !value.is_object() {
        return Err(fail(JsonError::Shape(format!(
            "expected a JSON object, found {}",
            kind_of(&value)
        ))));
    }
    serde_json::from_value(value).map_err(|e| fail(JsonError::Shape(e.to_string())))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Standard JSON through the body's serde impl.
fn encode_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect(
        "body types serialize infallibly: their serde maps have string or integer keys \
         and the output is memory",
    )
}

/// An object written member by member, for bodies with fastjson object keys.
fn encode_with(write: impl FnOnce(&mut ObjectWriter<'_>) -> Result<(), JsonError>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut object = ObjectWriter::new(&mut out);
    write(&mut object).expect(
        "body members serialize infallibly: their serde maps have string or integer keys, \
         object keys go through write_keyed_map, and the output is memory",
    );
    object.finish();
    out
}

/// `null` reads as the type's default: the Rust broker writes explicit nulls for unset members,
/// and fastjson reads them into Java's defaults.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A string map that also takes numbers and booleans as values (written by non-Java clients into
/// `java.util.Properties`) and drops `null` ones.
fn lenient_string_map<'de, D>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    let raw = Option::<BTreeMap<String, Value>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(raw
        .into_iter()
        .filter_map(|(key, value)| match value {
            Value::Null => None,
            Value::String(s) => Some((key, s)),
            other => Some((key, other.to_string())),
        })
        .collect())
}

/// The compact JSON text of a [`MessageQueue`], in fastjson's member order; also the normalized
/// form of a `MessageQueue` object key (see [`crate::json`]).
fn mq_key_text(mq: &MessageQueue) -> String {
    format!(
        "{{\"brokerName\":{},\"queueId\":{},\"topic\":{}}}",
        Value::from(mq.broker_name()),
        mq.queue_id(),
        Value::from(mq.topic()),
    )
}

/// A normalized map key (see [`crate::json`]) holding a `MessageQueue` object.
fn parse_mq_key(key: &str) -> Result<MessageQueue, String> {
    json::from_slice(key.as_bytes())
        .map_err(|e| format!("map key {key:?} is not a MessageQueue: {e}"))
}

/// The entries of a `Map<MessageQueue, V>` in any of the shapes peers write:
///
/// - an object with fastjson object keys, or with the key objects' JSON text as string keys;
/// - an array of `[mq, value]` pairs (the "gson" shape the Go client accepts,
///   `ResetOffsetBody.Decode` in rocketmq-client-go `internal/model.go`);
/// - `null` or absent, as empty.
///
/// `extra` may claim array items of another shape (the C form of `ResetOffsetBodyForC`).
fn mq_map_from_value<V: DeserializeOwned>(
    value: Value,
    extra: impl Fn(&Value) -> Option<Result<(MessageQueue, V), String>>,
) -> Result<BTreeMap<MessageQueue, V>, String> {
    let mut map = BTreeMap::new();
    match value {
        Value::Null => {}
        Value::Object(entries) => {
            for (key, value) in entries {
                let mq = parse_mq_key(&key)?;
                let value = serde_json::from_value(value).map_err(|e| e.to_string())?;
                map.insert(mq, value);
            }
        }
        Value::Array(items) => {
            for item in items {
                if let Some(entry) = extra(&item) {
                    let (mq, value) = entry?;
                    map.insert(mq, value);
                    continue;
                }
                let pair: (Value, V) = serde_json::from_value(item).map_err(|e| {
                    format!("MessageQueue map entry is not a [mq, value] pair: {e}")
                })?;
                let mq = match pair.0 {
                    Value::String(key) => parse_mq_key(&key)?,
                    other => serde_json::from_value(other).map_err(|e| e.to_string())?,
                };
                map.insert(mq, pair.1);
            }
        }
        other => return Err(format!("a MessageQueue map cannot be {other}")),
    }
    Ok(map)
}

/// serde `with` module for `BTreeMap<MessageQueue, V>` members; see [`mq_map_from_value`].
mod mq_map {
    use super::*;

    pub(super) fn serialize<S, V>(
        map: &BTreeMap<MessageQueue, V>,
        serializer: S,
    ) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        V: Serialize,
    {
        serializer.collect_map(map.iter().map(|(mq, value)| (mq_key_text(mq), value)))
    }

    pub(super) fn deserialize<'de, D, V>(
        deserializer: D,
    ) -> Result<BTreeMap<MessageQueue, V>, D::Error>
    where
        D: Deserializer<'de>,
        V: DeserializeOwned,
    {
        let raw = Option::<Value>::deserialize(deserializer)?.unwrap_or(Value::Null);
        mq_map_from_value(raw, |_| None).map_err(D::Error::custom)
    }
}

/// serde `with` module for `Map<MessageQueue, Long>` offset tables, which the C form of
/// `ResetOffsetBodyForC` also writes as `[{"topic":..,"brokerName":..,"queueId":..,"offset":..}]`
/// (`remoting-protocol.md` §3.13).
mod offset_map {
    use super::*;

    pub(super) use super::mq_map::serialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CEntry {
        topic: String,
        broker_name: String,
        queue_id: i32,
        offset: i64,
    }

    pub(super) fn deserialize<'de, D>(
        deserializer: D,
    ) -> Result<BTreeMap<MessageQueue, i64>, D::Error>
    where
        D: Deserializer<'de>,
    {
        let raw = Option::<Value>::deserialize(deserializer)?.unwrap_or(Value::Null);
        mq_map_from_value(raw, |item| {
            let Value::Object(_) = item else { return None };
            Some(
                CEntry::deserialize(item)
                    .map(|e| {
                        (
                            MessageQueue::new(&e.topic, &e.broker_name, e.queue_id),
                            e.offset,
                        )
                    })
                    .map_err(|e| {
                        format!("offset entry is not {{topic,brokerName,queueId,offset}}: {e}")
                    }),
            )
        })
        .map_err(D::Error::custom)
    }
}

/// Writes a `Map<MessageQueue, V>` with fastjson object keys.
fn write_mq_map<V: Serialize>(
    out: &mut Vec<u8>,
    map: &BTreeMap<MessageQueue, V>,
) -> Result<(), JsonError> {
    json::write_keyed_map(out, map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mq_key_text_matches_serde() {
        let mq = MessageQueue::new("T\"\u{e9}", "b\\", -1);
        assert_eq!(mq_key_text(&mq), serde_json::to_string(&mq).unwrap());
        assert_eq!(parse_mq_key(&mq_key_text(&mq)).unwrap(), mq);
    }

    #[test]
    fn mq_map_accepts_every_shape() {
        let a = MessageQueue::new("T", "b", 0);
        let b = MessageQueue::new("T", "b", 1);
        let expected: BTreeMap<_, i64> = [(a.clone(), 5), (b.clone(), 6)].into();
        let shapes: [&[u8]; 4] = [
            br#"{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"topic":"T","queueId":1,"brokerName":"b"}:6}"#,
            br#"{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}":5,"{\"brokerName\":\"b\",\"queueId\":1,\"topic\":\"T\"}":6}"#,
            br#"[[{"brokerName":"b","queueId":0,"topic":"T"},5],[{"brokerName":"b","queueId":1,"topic":"T"},6]]"#,
            br#"[["{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}",5],[{"brokerName":"b","queueId":1,"topic":"T"},6]]"#,
        ];
        for shape in shapes {
            let value = json::parse(shape).unwrap();
            assert_eq!(mq_map_from_value::<i64>(value, |_| None).unwrap(), expected);
        }
        assert!(
            mq_map_from_value::<i64>(Value::Null, |_| None)
                .unwrap()
                .is_empty()
        );
        assert!(mq_map_from_value::<i64>(Value::from(3), |_| None).is_err());
        let bad_key = json::parse(br#"{"x":1}"#).unwrap();
        assert!(mq_map_from_value::<i64>(bad_key, |_| None).is_err());
    }

    #[test]
    fn empty_body_is_its_own_error() {
        assert_eq!(
            decode_json::<ConsumerListBody>("X", b""),
            Err(BodyError::Empty { body: "X" })
        );
        let e = decode_json::<ConsumerListBody>("X", b"{\"consumerIdList\":[1,").unwrap_err();
        assert_eq!(e.position(), Some(21));
    }
}
