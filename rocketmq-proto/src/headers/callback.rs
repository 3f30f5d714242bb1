//! Requests a broker sends to a client (`remoting-protocol.md` §3.12 to §3.16).

crate::command_header! {
    /// Request header of `NOTIFY_CONSUMER_IDS_CHANGED` (40), broker to client, oneway: Java
    /// `NotifyConsumerIdsChangedRequestHeader`.
    #[derive(Default)]
    pub struct NotifyConsumerIdsChangedRequest {
        /// The group whose membership changed.
        req consumer_group: String = "consumerGroup",
    }
}

crate::command_header! {
    /// Request header of `RESET_CONSUMER_CLIENT_OFFSET` (220, broker to client, oneway) and
    /// `INVOKE_BROKER_TO_RESET_OFFSET` (222, admin to broker): Java `ResetOffsetRequestHeader`.
    /// The new offsets travel in the `ResetOffsetBody` body.
    #[derive(Default)]
    pub struct ResetOffsetRequest {
        /// The topic.
        req topic: String = "topic",
        /// The consumer group.
        req group: String = "group",
        /// The store timestamp to reset to, in ms since the epoch.
        req timestamp: i64 = "timestamp",
        /// Reset even to a larger offset (the key is literally `isForce`).
        req is_force: bool = "isForce",
        /// 5.x: only this queue (Java default −1: all queues).
        opt queue_id: i32 = "queueId",
        /// 5.x: reset to this offset instead of by timestamp.
        opt offset: i64 = "offset",
    }
}

crate::command_header! {
    /// Request header of `GET_CONSUMER_STATUS_FROM_CLIENT` (221), broker to client
    /// (deprecated): Java `GetConsumerStatusRequestHeader`.
    #[derive(Default)]
    pub struct GetConsumerStatusRequest {
        /// The topic.
        req topic: String = "topic",
        /// The consumer group.
        req group: String = "group",
        /// The client address asked about.
        opt client_addr: String = "clientAddr",
    }
}

crate::command_header! {
    /// Request header of `GET_CONSUMER_RUNNING_INFO` (307), broker to client: Java
    /// `GetConsumerRunningInfoRequestHeader`.
    #[derive(Default)]
    pub struct GetConsumerRunningInfoRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// The client asked.
        req client_id: String = "clientId",
        /// Include a thread dump (`jstack`) in the answer. A Java primitive, so Java always
        /// sends it, but it is `@CFNullable` and absent means `false`.
        opt jstack_enable: bool = "jstackEnable",
    }
}

crate::command_header! {
    /// Request header of `CONSUME_MESSAGE_DIRECTLY` (309), broker to client: Java
    /// `ConsumeMessageDirectlyResultRequestHeader`. The message travels in the body.
    #[derive(Default)]
    pub struct ConsumeMessageDirectlyRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// The client asked.
        opt client_id: String = "clientId",
        /// The message id.
        opt msg_id: String = "msgId",
        /// The broker holding the message.
        opt broker_name: String = "brokerName",
        /// The topic (5.x).
        opt topic: String = "topic",
        /// The topic's sysFlag (5.x).
        opt topic_sys_flag: i32 = "topicSysFlag",
        /// The group's sysFlag (5.x).
        opt group_sys_flag: i32 = "groupSysFlag",
    }
}
