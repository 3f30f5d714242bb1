//! [`ResetOffsetBody`]: the body of `RESET_CONSUMER_CLIENT_OFFSET` (220), broker → client.
//!
//! Java: `ResetOffsetBody.java` and `ResetOffsetBodyForC.java` (`remoting/protocol/body/`); the
//! broker picks the C form when the admin request came from a `CPP` client
//! (`Broker2Client.resetOffset`; `remoting-protocol.md` §3.13, §6).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BodyError, decode_json, encode_with, write_mq_map};
use crate::queue::MessageQueue;

/// New offsets a client must jump to, per queue.
///
/// Decodes all three shapes seen in the wild: fastjson object keys (`{"offsetTable":{{mq}:7}}`,
/// what Java brokers send), the C list (`{"offsetTable":[{"topic":..,"brokerName":..,
/// "queueId":..,"offset":..}]}`), and the array of `[mq, offset]` pairs the Go client also
/// accepts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResetOffsetBody {
    /// The offset (next to consume) of every queue to reset.
    #[serde(with = "super::offset_map")]
    pub offset_table: BTreeMap<MessageQueue, i64>,
}

impl ResetOffsetBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "ResetOffsetBody";

    /// Reads the body in any of its shapes.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body as a Java broker does, with fastjson object keys.
    pub fn encode(&self) -> Vec<u8> {
        encode_with(|body| {
            body.field_with("offsetTable", |out| write_mq_map(out, &self.offset_table))
        })
    }

    /// Writes the body as `ResetOffsetBodyForC`, the list form brokers send to C/C++ clients.
    pub fn encode_for_c(&self) -> Vec<u8> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct CEntry<'a> {
            broker_name: &'a str,
            offset: i64,
            queue_id: i32,
            topic: &'a str,
        }
        let entries: Vec<CEntry<'_>> = self
            .offset_table
            .iter()
            .map(|(mq, &offset)| CEntry {
                broker_name: mq.broker_name(),
                offset,
                queue_id: mq.queue_id(),
                topic: mq.topic(),
            })
            .collect();
        encode_with(|body| body.field("offsetTable", &entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ResetOffsetBody {
        ResetOffsetBody {
            offset_table: [
                (MessageQueue::new("T", "broker-a", 0), 100),
                (MessageQueue::new("T", "broker-a", 1), -1),
            ]
            .into(),
        }
    }

    #[test]
    fn encodes_fastjson_object_keys() {
        assert_eq!(
            String::from_utf8(sample().encode()).unwrap(),
            concat!(
                r#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:100,"#,
                r#"{"brokerName":"broker-a","queueId":1,"topic":"T"}:-1}}"#
            )
        );
        assert_eq!(
            ResetOffsetBody::decode(&sample().encode()).unwrap(),
            sample()
        );
    }

    #[test]
    fn c_form_round_trips() {
        let c = sample().encode_for_c();
        assert!(String::from_utf8(c.clone()).unwrap().starts_with(
            r#"{"offsetTable":[{"brokerName":"broker-a","offset":100,"queueId":0,"topic":"T"}"#
        ));
        assert_eq!(ResetOffsetBody::decode(&c).unwrap(), sample());
    }
}
