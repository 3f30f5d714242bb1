//! `QUERY_MESSAGE` (12), admin → broker: messages of a topic by key, from the broker's index.

crate::command_header! {
    /// Request header of `QUERY_MESSAGE` (12): Java `QueryMessageRequestHeader`. The answer's
    /// body is the matching stored messages, concatenated as in a pull response; none found is
    /// `QUERY_NOT_FOUND` (`QueryMessageProcessor.queryMessage`).
    ///
    /// The index is a hash index: what comes back may include messages whose key only collides
    /// with `key`, so a reader filters by key and topic again, as Java's
    /// `MQAdminImpl.queryMessage` does.
    #[derive(Default)]
    pub struct QueryMessageRequest {
        /// The topic.
        req topic: String = "topic",
        /// The key (a message key, or with `unique_key_query` a `UNIQ_KEY` message id).
        req key: String = "key",
        /// At most this many messages (the broker also caps it, `maxMsgsNumBatch`, 64).
        req max_num: i32 = "maxNum",
        /// Only messages stored at or after this time, ms since the epoch.
        req begin_timestamp: i64 = "beginTimestamp",
        /// Only messages stored at or before this time, ms since the epoch.
        req end_timestamp: i64 = "endTimestamp",
        /// `key` is a `UNIQ_KEY` id (Java `MixAll.UNIQUE_MSG_QUERY_FLAG`, an extField outside
        /// the header class): the broker then ignores `max_num` for its `defaultQueryMaxNum`.
        opt unique_key_query: bool = "_UNIQUE_KEY_QUERY",
    }
}

crate::command_header! {
    /// Response header of `QUERY_MESSAGE` (12): Java `QueryMessageResponseHeader`, sent with
    /// `SUCCESS` and with `QUERY_NOT_FOUND`.
    #[derive(Default)]
    pub struct QueryMessageResponse {
        /// When the index was last written, ms since the epoch.
        req index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        /// The commit-log offset the index was last written for.
        req index_last_update_phyoffset: i64 = "indexLastUpdatePhyoffset",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::{CommandHeader, ExtFields};

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// The extFields of Java 4.9.7's `MQClientAPIImpl.queryMessage` (the flag added beside the
    /// header's own fields) and of the broker's answer.
    #[test]
    fn reads_java_fields() {
        let request = ext(&[
            ("topic", "T"),
            ("key", "order-1"),
            ("maxNum", "32"),
            ("beginTimestamp", "0"),
            ("endTimestamp", "9223372036854775807"),
            ("_UNIQUE_KEY_QUERY", "false"),
        ]);
        let header = QueryMessageRequest::decode_from(&request).unwrap();
        assert_eq!(header.key, "order-1");
        assert_eq!(header.end_timestamp, i64::MAX);
        assert_eq!(header.unique_key_query, Some(false));
        let mut again = ExtFields::new();
        header.encode_into(&mut again);
        assert_eq!(again, request);

        let response = ext(&[
            ("indexLastUpdateTimestamp", "1764614400000"),
            ("indexLastUpdatePhyoffset", "4096"),
        ]);
        let answer = QueryMessageResponse::decode_from(&response).unwrap();
        assert_eq!(answer.index_last_update_phyoffset, 4096);
        assert!(QueryMessageResponse::decode_from(&ExtFields::new()).is_err());
    }
}
