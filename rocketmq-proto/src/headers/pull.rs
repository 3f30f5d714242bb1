//! `PULL_MESSAGE` / `LITE_PULL_MESSAGE` (`remoting-protocol.md` §3.5).

crate::command_header! {
    /// Request header of `PULL_MESSAGE` (11) and `LITE_PULL_MESSAGE` (361, 5.x brokers only):
    /// Java `PullMessageRequestHeader`. Its fields are declared in the order of their keys, so
    /// encoding one, at every pull, appends each to the `extFields` without a search.
    #[derive(Default)]
    pub struct PullMessageRequest {
        /// The broker name the request is for (5.x `RpcRequestHeader.bname`).
        opt broker_name: String = "bname",
        /// The offset to commit when
        /// [`COMMIT_OFFSET`](super::pull_sys_flag::COMMIT_OFFSET) is set, else 0.
        req commit_offset: i64 = "commitOffset",
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// `TAG` or `SQL92`; absent means `TAG`.
        opt expression_type: String = "expressionType",
        /// Byte budget of the answer (5.x; not enforced by the classic store).
        opt max_msg_bytes: i32 = "maxMsgBytes",
        /// The most messages to return (Java push: 32, lite pull: 10).
        req max_msg_nums: i32 = "maxMsgNums",
        /// The queue, `0 <= queue_id < readQueueNums`.
        req queue_id: i32 = "queueId",
        /// The logical offset to read from.
        req queue_offset: i64 = "queueOffset",
        /// The subscription version; must not exceed the broker's registered one unless the
        /// subscription bit is set.
        req sub_version: i64 = "subVersion",
        /// The subscription expression; used with
        /// [`SUBSCRIPTION`](super::pull_sys_flag::SUBSCRIPTION).
        opt subscription: String = "subscription",
        /// How long the broker may hold the request when nothing is there (push: 15000 ms).
        req suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        /// The [`pull_sys_flag`](super::pull_sys_flag) bits.
        req sys_flag: i32 = "sysFlag",
        /// The topic; `%RETRY%<group>` for the group's retry queue.
        req topic: String = "topic",
    }
}

crate::command_header! {
    /// Response header of `PULL_MESSAGE` / `LITE_PULL_MESSAGE`: Java
    /// `PullMessageResponseHeader`. Present on `SUCCESS`, `PULL_NOT_FOUND`,
    /// `PULL_RETRY_IMMEDIATELY` and `PULL_OFFSET_MOVED`.
    #[derive(Default)]
    pub struct PullMessageResponse {
        /// The broker id (in the broker group) to pull this queue from next; 0 is the master.
        req suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        /// The offset of the next pull.
        req next_begin_offset: i64 = "nextBeginOffset",
        /// The queue's smallest logical offset.
        req min_offset: i64 = "minOffset",
        /// The queue's largest logical offset (the next one to be written).
        req max_offset: i64 = "maxOffset",
        /// Added to every returned message's queue offset (5.x static topics).
        opt offset_delta: i64 = "offsetDelta",
        /// The topic's sysFlag (5.x).
        opt topic_sys_flag: i32 = "topicSysFlag",
        /// The group's sysFlag (5.x).
        opt group_sys_flag: i32 = "groupSysFlag",
        /// Why the pull was refused, with `NO_PERMISSION` (5.x).
        opt forbidden_type: i32 = "forbiddenType",
    }
}
