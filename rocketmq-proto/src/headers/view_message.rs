//! `VIEW_MESSAGE_BY_ID` (33), admin → broker: one stored message by its commit-log offset.

crate::command_header! {
    /// Request header of `VIEW_MESSAGE_BY_ID` (33): Java `ViewMessageRequestHeader`. The offset
    /// is the one an offset message id carries (its last 8 bytes, `MessageDecoder.decodeMessageId`),
    /// sent to the broker whose address the id carries. The answer's body is that one stored
    /// message; an offset with no message is `SYSTEM_ERROR` ("can not find message by the offset",
    /// `QueryMessageProcessor.viewMessageById`).
    #[derive(Default)]
    pub struct ViewMessageRequest {
        /// The commit-log (physical) offset of the message.
        req offset: i64 = "offset",
        /// 5.x: the topic, for its ACL check (4.9 ignores it).
        opt topic: String = "topic",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::{CommandHeader, ExtFields};

    /// Java 4.9.7's `MQClientAPIImpl.viewMessage` sends the offset only.
    #[test]
    fn reads_java_fields() {
        let java: ExtFields = [("offset".to_owned(), "1234".to_owned())]
            .into_iter()
            .collect();
        let header = ViewMessageRequest::decode_from(&java).unwrap();
        assert_eq!(
            header,
            ViewMessageRequest {
                offset: 1234,
                topic: None
            }
        );
        let mut again = ExtFields::new();
        header.encode_into(&mut again);
        assert_eq!(again, java);
    }
}
