//! `GET_CONSUME_STATS` (208), admin → broker: a group's offsets and lag on one broker.

crate::command_header! {
    /// Request header of `GET_CONSUME_STATS` (208): Java `GetConsumeStatsRequestHeader`. The
    /// answer is a `ConsumeStats` body.
    ///
    /// Without `topic` the broker reports every topic the group has committed offsets for on it
    /// (`ConsumerOffsetManager.whichTopicByConsumer`, so the group's retry topic too), skipping
    /// topics the group's live members do not subscribe (`AdminBrokerProcessor.getConsumeStats`).
    #[derive(Default)]
    pub struct GetConsumeStatsRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// Only this topic.
        opt topic: String = "topic",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::{CommandHeader, ExtFields};

    /// The extFields Java 4.9.7's `MQClientAPIImpl.getConsumeStats` sends (topic null: left
    /// out, as fastjson leaves out null fields).
    #[test]
    fn reads_and_writes_java_fields() {
        let java: ExtFields = [("consumerGroup".to_owned(), "g".to_owned())]
            .into_iter()
            .collect();
        let header = GetConsumeStatsRequest::decode_from(&java).unwrap();
        assert_eq!(
            header,
            GetConsumeStatsRequest {
                consumer_group: "g".into(),
                topic: None
            }
        );
        let mut ext = ExtFields::new();
        GetConsumeStatsRequest {
            consumer_group: "g".into(),
            topic: Some("T".into()),
        }
        .encode_into(&mut ext);
        assert_eq!(ext.get("consumerGroup"), Some("g"));
        assert_eq!(ext.get("topic"), Some("T"));
        assert!(GetConsumeStatsRequest::decode_from(&ExtFields::new()).is_err());
    }
}
