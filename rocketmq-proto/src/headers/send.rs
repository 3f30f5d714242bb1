//! A minimal producer: `SEND_MESSAGE`, `SEND_MESSAGE_V2`, `SEND_BATCH_MESSAGE`
//! (`remoting-protocol.md` §3.17).
//!
//! [`SendMessageRequest`] and [`SendMessageRequestV2`] hold the same fields under different keys;
//! `From` converts either way without loss.

crate::command_header! {
    /// Request header of `SEND_MESSAGE` (10), with the long keys: Java `SendMessageRequestHeader`.
    /// Java clients send [`SendMessageRequestV2`] instead unless told otherwise.
    #[derive(Default)]
    pub struct SendMessageRequest {
        /// The producer group.
        req producer_group: String = "producerGroup",
        /// The topic.
        req topic: String = "topic",
        /// The topic whose settings an auto-created topic copies (`TBW102`).
        req default_topic: String = "defaultTopic",
        /// Queues of an auto-created topic (4).
        req default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        /// The target queue; negative lets the broker pick.
        req queue_id: i32 = "queueId",
        /// The message sysFlag: compression and transaction bits.
        req sys_flag: i32 = "sysFlag",
        /// When the producer created the message, in ms since the epoch.
        req born_timestamp: i64 = "bornTimestamp",
        /// The user flag, stored as is.
        req flag: i32 = "flag",
        /// The encoded message properties.
        opt properties: String = "properties",
        /// Deliveries so far (for `%RETRY%` topics).
        opt reconsume_times: i32 = "reconsumeTimes",
        /// Unit mode.
        opt unit_mode: bool = "unitMode",
        /// Deliveries before the dead-letter queue (for `%RETRY%` topics).
        opt max_reconsume_times: i32 = "maxReconsumeTimes",
        /// The body is a batch (`SEND_BATCH_MESSAGE`).
        opt batch: bool = "batch",
        /// The broker name the request is for (5.x `RpcRequestHeader.bname`).
        opt broker_name: String = "bname",
    }
}

crate::command_header! {
    /// Request header of `SEND_MESSAGE_V2` (310) and `SEND_BATCH_MESSAGE` (320), with
    /// single-letter keys `a` to `n`: Java `SendMessageRequestHeaderV2`.
    #[derive(Default)]
    pub struct SendMessageRequestV2 {
        /// `a`: the producer group.
        req producer_group: String = "a",
        /// `b`: the topic.
        req topic: String = "b",
        /// `c`: the topic whose settings an auto-created topic copies (`TBW102`).
        req default_topic: String = "c",
        /// `d`: queues of an auto-created topic (4).
        req default_topic_queue_nums: i32 = "d",
        /// `e`: the target queue; negative lets the broker pick.
        req queue_id: i32 = "e",
        /// `f`: the message sysFlag: compression and transaction bits.
        req sys_flag: i32 = "f",
        /// `g`: when the producer created the message, in ms since the epoch.
        req born_timestamp: i64 = "g",
        /// `h`: the user flag, stored as is.
        req flag: i32 = "h",
        /// `i`: the encoded message properties.
        opt properties: String = "i",
        /// `j`: deliveries so far (for `%RETRY%` topics).
        opt reconsume_times: i32 = "j",
        /// `k`: unit mode.
        opt unit_mode: bool = "k",
        /// `l`: deliveries before the dead-letter queue (for `%RETRY%` topics).
        opt max_reconsume_times: i32 = "l",
        /// `m`: the body is a batch (`SEND_BATCH_MESSAGE`).
        opt batch: bool = "m",
        /// `n`: the broker name the request is for (5.x).
        opt broker_name: String = "n",
    }
}

impl From<SendMessageRequest> for SendMessageRequestV2 {
    /// Field for field. Java's `createSendMessageRequestHeaderV2` also fills an absent
    /// `reconsumeTimes`, `unitMode` and `batch` with 0 / false; this keeps them absent.
    fn from(v1: SendMessageRequest) -> Self {
        Self {
            producer_group: v1.producer_group,
            topic: v1.topic,
            default_topic: v1.default_topic,
            default_topic_queue_nums: v1.default_topic_queue_nums,
            queue_id: v1.queue_id,
            sys_flag: v1.sys_flag,
            born_timestamp: v1.born_timestamp,
            flag: v1.flag,
            properties: v1.properties,
            reconsume_times: v1.reconsume_times,
            unit_mode: v1.unit_mode,
            max_reconsume_times: v1.max_reconsume_times,
            batch: v1.batch,
            broker_name: v1.broker_name,
        }
    }
}

impl From<SendMessageRequestV2> for SendMessageRequest {
    /// Field for field, as Java's `createSendMessageRequestHeaderV1`.
    fn from(v2: SendMessageRequestV2) -> Self {
        Self {
            producer_group: v2.producer_group,
            topic: v2.topic,
            default_topic: v2.default_topic,
            default_topic_queue_nums: v2.default_topic_queue_nums,
            queue_id: v2.queue_id,
            sys_flag: v2.sys_flag,
            born_timestamp: v2.born_timestamp,
            flag: v2.flag,
            properties: v2.properties,
            reconsume_times: v2.reconsume_times,
            unit_mode: v2.unit_mode,
            max_reconsume_times: v2.max_reconsume_times,
            batch: v2.batch,
            broker_name: v2.broker_name,
        }
    }
}

crate::command_header! {
    /// Response header of `SEND_MESSAGE`, `SEND_MESSAGE_V2` and `SEND_BATCH_MESSAGE` when the
    /// message was stored (codes 0, 10, 11, 12): Java `SendMessageResponseHeader`. (5.x adds
    /// `recallHandle`, and brokers add `MSG_REGION` / `TRACE_ON` beside the header: not read.)
    #[derive(Default)]
    pub struct SendMessageResponse {
        /// The offset message id; for a batch, the ids joined by commas.
        req msg_id: String = "msgId",
        /// The queue the message went to.
        req queue_id: i32 = "queueId",
        /// The queue offset of the (first) message.
        req queue_offset: i64 = "queueOffset",
        /// The transaction id (transactional messages).
        opt transaction_id: String = "transactionId",
        /// The batch's unique id (5.x).
        opt batch_uniq_id: String = "batchUniqId",
    }
}
