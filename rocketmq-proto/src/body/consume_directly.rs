//! [`ConsumeMessageDirectlyResult`]: the answer to `CONSUME_MESSAGE_DIRECTLY` (309).
//!
//! Java: `ConsumeMessageDirectlyResult.java`, `CMResult.java` (`remoting/protocol/body/`;
//! `remoting-protocol.md` §3.16).

use serde::{Deserialize, Serialize};

use super::{BodyError, decode_json, encode_json, nullable};

java_enum! {
    /// How a directly consumed message fared (`CMResult.java`).
    pub enum ConsumeResult {
        /// Consumed.
        Success = "CR_SUCCESS",
        /// The listener asked for a later retry.
        Later = "CR_LATER",
        /// Orderly listener: rolled back.
        Rollback = "CR_ROLLBACK",
        /// Orderly listener: committed.
        Commit = "CR_COMMIT",
        /// The listener threw.
        ThrowException = "CR_THROW_EXCEPTION",
        /// The listener returned null.
        ReturnNull = "CR_RETURN_NULL",
    }
}

/// The outcome of running the listener once on a message the broker sent (an admin's
/// "consume this message directly").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumeMessageDirectlyResult {
    /// Whether the consumer is orderly.
    #[serde(deserialize_with = "nullable")]
    pub order: bool,
    /// Orderly consumers: whether the offset is committed automatically (Java's default true).
    #[serde(deserialize_with = "null_as_true")]
    pub auto_commit: bool,
    /// The outcome; absent when the listener was never run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consume_result: Option<ConsumeResult>,
    /// Free text, e.g. the exception.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remark: Option<String>,
    /// How long the listener ran, in milliseconds (sic: "Mills").
    #[serde(deserialize_with = "nullable")]
    pub spent_time_mills: i64,
}

/// `null` reads as the Java field's initializer, `true`.
fn null_as_true<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(deserializer)?.unwrap_or(true))
}

impl Default for ConsumeMessageDirectlyResult {
    fn default() -> Self {
        Self {
            order: false,
            // The Java field's initializer.
            auto_commit: true,
            consume_result: None,
            remark: None,
            spent_time_mills: 0,
        }
    }
}

impl ConsumeMessageDirectlyResult {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "ConsumeMessageDirectlyResult";

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
    fn result_names() {
        let body = ConsumeMessageDirectlyResult {
            consume_result: Some(ConsumeResult::ThrowException),
            spent_time_mills: 12,
            ..ConsumeMessageDirectlyResult::default()
        };
        let text = String::from_utf8(body.encode()).unwrap();
        assert_eq!(
            text,
            r#"{"order":false,"autoCommit":true,"consumeResult":"CR_THROW_EXCEPTION","spentTimeMills":12}"#
        );
        assert_eq!(ConsumeResult::ReturnNull.name(), "CR_RETURN_NULL");
        // `autoCommit` missing takes Java's initializer, null takes it too.
        let read =
            ConsumeMessageDirectlyResult::decode(br#"{"consumeResult":"CR_LATER"}"#).unwrap();
        assert!(read.auto_commit);
        let read = ConsumeMessageDirectlyResult::decode(br#"{"autoCommit":null}"#).unwrap();
        assert!(read.auto_commit);
        assert_eq!(read.consume_result, None);
    }
}
