//! Requests a consumer sends for routes, membership, locks and failed messages
//! (`remoting-protocol.md` §3.1 to §3.4, §3.9 to §3.11).

crate::command_header! {
    /// Request header of `GET_ROUTEINFO_BY_TOPIC` (105), to a name server: Java
    /// `GetRouteInfoRequestHeader`.
    #[derive(Default)]
    pub struct GetRouteInfoRequest {
        /// The topic.
        req topic: String = "topic",
        /// Ask for standard JSON in the answer (honoured by name servers from 4.9.4, which
        /// also do so for request versions from 397).
        opt accept_standard_json_only: bool = "acceptStandardJsonOnly",
    }
}

crate::command_header! {
    /// Request header of `HEART_BEAT` (34): Java `HeartbeatRequestHeader`, no fields. The
    /// subscriptions travel in the `HeartbeatData` body.
    #[derive(Default, Copy)]
    pub struct HeartbeatRequest {}
}

crate::command_header! {
    /// Response header of `HEART_BEAT` (34): extFields a 5.x broker adds (`ClientManageProcessor`;
    /// Java has no header class, the client reads the keys directly). Both absent from 4.9.x.
    #[derive(Default, Copy)]
    pub struct HeartbeatResponse {
        /// The broker understands heartbeat V2 (`heartbeatFingerprint`).
        opt is_support_heart_beat_v2: bool = "IS_SUPPORT_HEART_BEAT_V2",
        /// The broker saw the subscriptions change (always `true` for V1 heartbeats).
        opt is_sub_change: bool = "IS_SUB_CHANGE",
    }
}

crate::command_header! {
    /// Request header of `UNREGISTER_CLIENT` (35): Java `UnregisterClientRequestHeader`. The
    /// response has no header.
    #[derive(Default)]
    pub struct UnregisterClientRequest {
        /// The client id (note the key's capital `ID`).
        req client_id: String = "clientID",
        /// The producer group to leave.
        opt producer_group: String = "producerGroup",
        /// The consumer group to leave.
        opt consumer_group: String = "consumerGroup",
    }
}

crate::command_header! {
    /// Request header of `GET_CONSUMER_LIST_BY_GROUP` (38): Java
    /// `GetConsumerListByGroupRequestHeader`. The member ids come back in the body.
    #[derive(Default)]
    pub struct GetConsumerListByGroupRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
    }
}

crate::command_header! {
    /// Request header of `LOCK_BATCH_MQ` (41): Java `LockBatchMqRequestHeader`, no fields. The
    /// queues travel in the `LockBatchRequestBody` body.
    #[derive(Default, Copy)]
    pub struct LockBatchMqRequest {}
}

crate::command_header! {
    /// Request header of `UNLOCK_BATCH_MQ` (42): Java `UnlockBatchMqRequestHeader`, no fields.
    /// The queues travel in the `UnlockBatchRequestBody` body.
    #[derive(Default, Copy)]
    pub struct UnlockBatchMqRequest {}
}

crate::command_header! {
    /// Request header of `CHECK_CLIENT_CONFIG` (46): none in Java (no extFields). The
    /// subscription travels in the `CheckClientRequestBody` body.
    #[derive(Default, Copy)]
    pub struct CheckClientConfigRequest {}
}

crate::command_header! {
    /// Request header of `CONSUMER_SEND_MSG_BACK` (36): Java `ConsumerSendMsgBackRequestHeader`.
    /// The response has no header.
    #[derive(Default)]
    pub struct ConsumerSendMsgBackRequest {
        /// The message's **commit-log** (physical) offset, not its queue offset.
        req offset: i64 = "offset",
        /// The consumer group.
        req group: String = "group",
        /// 0: the broker picks `3 + reconsumeTimes`; > 0: that delay level; < 0: straight to
        /// the dead-letter queue.
        req delay_level: i32 = "delayLevel",
        /// The message id the consumer saw (`UNIQ_KEY` if present); statistics only.
        opt origin_msg_id: String = "originMsgId",
        /// The topic the consumer saw; statistics only.
        opt origin_topic: String = "originTopic",
        /// Unit mode (a Java primitive, always sent; normally `false`).
        req unit_mode: bool = "unitMode",
        /// Deliveries before the dead-letter queue (honoured from request version 117).
        opt max_reconsume_times: i32 = "maxReconsumeTimes",
    }
}
