//! A minimal admin: `UPDATE_AND_CREATE_TOPIC` (`remoting-protocol.md` §3.18).
//! `GET_BROKER_CLUSTER_INFO` and `UPDATE_AND_CREATE_SUBSCRIPTIONGROUP` have no header.

crate::command_header! {
    /// Request header of `UPDATE_AND_CREATE_TOPIC` (17), to each broker master: Java
    /// `CreateTopicRequestHeader`.
    #[derive(Default)]
    pub struct CreateTopicRequest {
        /// The topic to create or update.
        req topic: String = "topic",
        /// The template topic (Java: `TBW102`).
        req default_topic: String = "defaultTopic",
        /// Readable queues.
        req read_queue_nums: i32 = "readQueueNums",
        /// Writable queues.
        req write_queue_nums: i32 = "writeQueueNums",
        /// Permission bits: read 4, write 2, inherit 1 (6 = read and write).
        req perm: i32 = "perm",
        /// Tag filtering, a Java `TopicFilterType` name: `SINGLE_TAG` or `MULTI_TAG`
        /// (the broker rejects anything else, case-sensitively).
        req topic_filter_type: String = "topicFilterType",
        /// The topic sysFlag (Java sends 0).
        opt topic_sys_flag: i32 = "topicSysFlag",
        /// An ordered topic.
        req order: bool = "order",
        /// 5.x attributes, `+key=value,...` (`-key` deletes), e.g. `+message.type=NORMAL`.
        opt attributes: String = "attributes",
    }
}

impl CreateTopicRequest {
    /// A read-write topic with `queues` read and write queues and Java's other defaults
    /// (`DefaultMQAdminExt.createTopic`: template `TBW102`, perm 6, single tag, not ordered).
    pub fn new(topic: &str, queues: i32) -> Self {
        Self {
            topic: topic.to_owned(),
            default_topic: "TBW102".to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: None,
        }
    }
}
