//! [`OffsetTable`]: the local offset file of a broadcasting consumer.
//!
//! Java: `OffsetSerializeWrapper.java`, written by `LocalFileOffsetStore.persistAll` to
//! `<dir>/<clientId>/<group>/offsets.json` (`remoting-protocol.md` §8.1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BodyError, decode_json, encode_with, write_mq_map};
use crate::queue::MessageQueue;

/// The content of Java's `offsets.json`: `{"offsetTable":{<MessageQueue>:<long>,…}}` with
/// fastjson object keys, so a Java and a Rust consumer can share the directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OffsetTable {
    /// The next offset to consume, per queue.
    #[serde(with = "super::offset_map")]
    pub offset_table: BTreeMap<MessageQueue, i64>,
}

impl OffsetTable {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "OffsetSerializeWrapper";

    /// Reads the file content (Java writes it pretty-printed; any whitespace is accepted).
    pub fn decode(content: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, content)
    }

    /// The file content, compact, with fastjson object keys in queue order.
    pub fn encode(&self) -> Vec<u8> {
        encode_with(|file| {
            file.field_with("offsetTable", |out| write_mq_map(out, &self.offset_table))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_java_pretty_printed_file() {
        // The layout of fastjson's `toJSONString(obj, true)`: tabs, object keys on their own.
        let file = b"{\n\t\"offsetTable\":{{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":3,\n\t\t\t\"topic\":\"T\"\n\t\t}:42\n\t}\n}";
        let table = OffsetTable::decode(file).unwrap();
        assert_eq!(
            table.offset_table,
            [(MessageQueue::new("T", "broker-a", 3), 42)].into()
        );
        assert_eq!(
            String::from_utf8(table.encode()).unwrap(),
            r#"{"offsetTable":{{"brokerName":"broker-a","queueId":3,"topic":"T"}:42}}"#
        );
    }
}
