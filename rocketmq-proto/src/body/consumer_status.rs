//! [`GetConsumerStatusBody`]: the answer to `GET_CONSUMER_STATUS_FROM_CLIENT` (221).
//!
//! Java: `GetConsumerStatusBody.java` (`remoting/protocol/body/`); the client side is
//! `MQClientInstance.getConsumerStatus` (`remoting-protocol.md` §3.14). Java admin tools read it
//! with fastjson, so its maps are written with object keys.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{BodyError, decode_json, encode_with, mq_map, mq_map_from_value, write_mq_map};
use crate::json::ObjectWriter;
use crate::queue::MessageQueue;

/// A consumer's offsets for one topic (deprecated request, still answered by Java clients).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GetConsumerStatusBody {
    /// The next offset to consume, per queue of the topic.
    #[serde(with = "super::mq_map")]
    pub message_queue_table: BTreeMap<MessageQueue, i64>,
    /// Per client id, its table; Java clients leave it empty.
    #[serde(
        serialize_with = "serialize_tables",
        deserialize_with = "deserialize_tables"
    )]
    pub consumer_table: BTreeMap<String, BTreeMap<MessageQueue, i64>>,
}

impl GetConsumerStatusBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "GetConsumerStatusBody";

    /// Reads the body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body with fastjson object keys.
    pub fn encode(&self) -> Vec<u8> {
        encode_with(|body| {
            body.field_with("messageQueueTable", |out| {
                write_mq_map(out, &self.message_queue_table)
            })?;
            body.field_with("consumerTable", |out| {
                let mut tables = ObjectWriter::new(out);
                for (client, table) in &self.consumer_table {
                    tables.field_with(client, |out| write_mq_map(out, table))?;
                }
                tables.finish();
                Ok(())
            })
        })
    }
}

struct Table<'a>(&'a BTreeMap<MessageQueue, i64>);

impl Serialize for Table<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        mq_map::serialize(self.0, serializer)
    }
}

fn serialize_tables<S: Serializer>(
    tables: &BTreeMap<String, BTreeMap<MessageQueue, i64>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(tables.iter().map(|(client, table)| (client, Table(table))))
}

fn deserialize_tables<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, BTreeMap<MessageQueue, i64>>, D::Error> {
    let raw = Option::<BTreeMap<String, Value>>::deserialize(deserializer)?.unwrap_or_default();
    raw.into_iter()
        .map(|(client, table)| Ok((client, mq_map_from_value(table, |_| None)?)))
        .collect::<Result<_, String>>()
        .map_err(D::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_tables_use_object_keys() {
        let table: BTreeMap<_, _> = [(MessageQueue::new("T", "b", 2), 9)].into();
        let body = GetConsumerStatusBody {
            message_queue_table: table.clone(),
            consumer_table: [("c1".to_owned(), table)].into(),
        };
        let text = String::from_utf8(body.encode()).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"messageQueueTable":{{"brokerName":"b","queueId":2,"topic":"T"}:9},"#,
                r#""consumerTable":{"c1":{{"brokerName":"b","queueId":2,"topic":"T"}:9}}}"#
            )
        );
        assert_eq!(
            GetConsumerStatusBody::decode(text.as_bytes()).unwrap(),
            body
        );
        // The serde form (string keys) decodes alike.
        let standard = serde_json::to_vec(&body).unwrap();
        assert_eq!(GetConsumerStatusBody::decode(&standard).unwrap(), body);
    }
}
