//! Pop consumption (RocketMQ 5.x): `POP_MESSAGE` (200050), `ACK_MESSAGE` (200051) and
//! `CHANGE_MESSAGE_INVISIBLETIME` (200053). `BATCH_ACK_MESSAGE` (200151) has no header; its
//! acks travel in [`BatchAckMessageRequestBody`](crate::body::BatchAckMessageRequestBody).
//!
//! Java: `PopMessageRequestHeader`, `PopMessageResponseHeader`, `AckMessageRequestHeader`,
//! `ChangeInvisibleTimeRequestHeader`, `ChangeInvisibleTimeResponseHeader`
//! (`remoting/protocol/header/`). Every request header extends `TopicQueueRequestHeader`, whose
//! `bname` names the broker (`RpcRequestHeader`).

crate::command_header! {
    /// Request header of `POP_MESSAGE` (200050): Java `PopMessageRequestHeader`.
    ///
    /// The broker answers `POLLING_TIMEOUT` at once when `bornTime + pollTime` is more than
    /// 500 ms in its past (`PopMessageRequestHeader.isTimeoutTooMuch`), so `born_time` must be
    /// the sender's wall clock when it sends.
    #[derive(Default)]
    pub struct PopMessageRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// The topic.
        req topic: String = "topic",
        /// The queue; `-1` pops every queue of the topic on this broker (and its pop retry
        /// topic), as brokers assign in pop mode (`QueryAssignmentProcessor.allocate4Pop`).
        req queue_id: i32 = "queueId",
        /// The most messages to return; the broker refuses more than 32
        /// (`PopMessageProcessor`, `INVALID_PARAMETER`).
        req max_msg_nums: i32 = "maxMsgNums",
        /// How long the popped messages stay invisible to the group, in milliseconds.
        req invisible_time: i64 = "invisibleTime",
        /// How long the broker may hold the request when nothing is there (long polling), in
        /// milliseconds; 0 answers at once.
        req poll_time: i64 = "pollTime",
        /// The sender's wall clock (Unix milliseconds) when it sent the request.
        req born_time: i64 = "bornTime",
        /// Where a group new to the queue starts: 0 the first message (`ConsumeInitMode.MIN`),
        /// 1 the end (`ConsumeInitMode.MAX`).
        req init_mode: i32 = "initMode",
        /// `TAG` or `SQL92`.
        opt exp_type: String = "expType",
        /// The subscription expression.
        opt exp: String = "exp",
        /// Orderly pop: the broker hands out a queue's messages one batch at a time.
        opt order: bool = "order",
        /// An id the broker uses to recognise a retried request (5.x proxies send one).
        opt attempt_id: String = "attemptId",
        /// The broker name the request is for (`RpcRequestHeader.bname`).
        opt broker_name: String = "bname",
    }
}

crate::command_header! {
    /// Response header of `POP_MESSAGE`: Java `PopMessageResponseHeader`. Present on
    /// `SUCCESS`, `POLLING_FULL`, `POLLING_TIMEOUT` and `PULL_NOT_FOUND` answers.
    #[derive(Default)]
    pub struct PopMessageResponse {
        /// The broker's wall clock (Unix milliseconds) when it popped the messages; part of
        /// every receipt handle.
        req pop_time: i64 = "popTime",
        /// The invisibility granted, in milliseconds.
        req invisible_time: i64 = "invisibleTime",
        /// The revive queue holding the checkpoint; 999 for orderly pop
        /// (`KeyBuilder.POP_ORDER_REVIVE_QUEUE`).
        req revive_qid: i32 = "reviveQid",
        /// How many messages are left to pop.
        req rest_num: i64 = "restNum",
        /// `retry qid startOffset` per popped queue, `;` between queues
        /// (`ExtraInfoUtil.buildStartOffsetInfo`); see
        /// [`receipt::parse_start_offset_info`](super::receipt::parse_start_offset_info).
        opt start_offset_info: String = "startOffsetInfo",
        /// `retry qid o1,o2,...` per popped queue: the queue offsets of the messages popped
        /// from it (`ExtraInfoUtil.buildMsgOffsetInfo`).
        opt msg_offset_info: String = "msgOffsetInfo",
        /// Orderly pop: how often each queue (or message) was delivered
        /// (`ExtraInfoUtil.buildQueueIdOrderCountInfo`).
        opt order_count_info: String = "orderCountInfo",
    }
}

crate::command_header! {
    /// Request header of `ACK_MESSAGE` (200051): Java `AckMessageRequestHeader`. The response
    /// has no header; `SUCCESS` is acknowledged, anything else (`NO_MESSAGE` for an offset the
    /// queue no longer holds) is not (`MQClientAPIImpl.ackMessageAsync`).
    #[derive(Default)]
    pub struct AckMessageRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// The topic the message was popped from: the pop retry topic for a redelivery
        /// ([`ReceiptHandle::real_topic`](super::receipt::ReceiptHandle::real_topic)).
        req topic: String = "topic",
        /// The message's queue.
        req queue_id: i32 = "queueId",
        /// The receipt handle (`ExtraInfoUtil` format).
        req extra_info: String = "extraInfo",
        /// The message's queue offset.
        req offset: i64 = "offset",
        /// The broker name (`RpcRequestHeader.bname`).
        opt broker_name: String = "bname",
    }
}

crate::command_header! {
    /// Request header of `CHANGE_MESSAGE_INVISIBLETIME` (200053): Java
    /// `ChangeInvisibleTimeRequestHeader`. The broker writes a new checkpoint invisible for
    /// `invisible_time` from now and acks the old one (`ChangeInvisibleTimeProcessor`), so the
    /// old receipt handle is spent and the answer makes the new one.
    #[derive(Default)]
    pub struct ChangeInvisibleTimeRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// The topic the message was popped from (pop retry topic for a redelivery).
        req topic: String = "topic",
        /// The message's queue.
        req queue_id: i32 = "queueId",
        /// The receipt handle in use.
        req extra_info: String = "extraInfo",
        /// The message's queue offset.
        req offset: i64 = "offset",
        /// The new invisibility, in milliseconds from the broker's now.
        req invisible_time: i64 = "invisibleTime",
        /// The broker name (`RpcRequestHeader.bname`).
        opt broker_name: String = "bname",
    }
}

crate::command_header! {
    /// Response header of `CHANGE_MESSAGE_INVISIBLETIME`: Java
    /// `ChangeInvisibleTimeResponseHeader`, the parts of the new receipt handle
    /// ([`ReceiptHandle::renewed`](super::receipt::ReceiptHandle::renewed)).
    #[derive(Default, Copy)]
    pub struct ChangeInvisibleTimeResponse {
        /// The new checkpoint's pop time (the broker's now).
        req pop_time: i64 = "popTime",
        /// The invisibility granted from `pop_time`, in milliseconds.
        req invisible_time: i64 = "invisibleTime",
        /// The revive queue of the new checkpoint.
        req revive_qid: i32 = "reviveQid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Command, CommandHeader, ExtFields, HeaderError, RequestCode};

    #[test]
    fn pop_request_carries_java_keys() {
        let header = PopMessageRequest {
            consumer_group: "G".into(),
            topic: "T".into(),
            queue_id: -1,
            max_msg_nums: 32,
            invisible_time: 60_000,
            poll_time: 15_000,
            born_time: 1_700_000_000_000,
            init_mode: 0,
            exp_type: Some("TAG".into()),
            exp: Some("*".into()),
            order: Some(false),
            attempt_id: None,
            broker_name: Some("broker-a".into()),
        };
        let request = Command::request(RequestCode::POP_MESSAGE, &header);
        assert_eq!(request.ext_fields.get("invisibleTime"), Some("60000"));
        assert_eq!(request.ext_fields.get("queueId"), Some("-1"));
        assert_eq!(request.ext_fields.get("bname"), Some("broker-a"));
        assert_eq!(request.header::<PopMessageRequest>().unwrap(), header);
    }

    #[test]
    fn pop_response_needs_its_required_fields() {
        let mut ext = ExtFields::new();
        ext.insert("popTime", "5");
        ext.insert("invisibleTime", "60000");
        ext.insert("reviveQid", "1");
        assert_eq!(
            PopMessageResponse::decode_from(&ext),
            Err(HeaderError::Missing { field: "restNum" })
        );
        ext.insert("restNum", "0");
        ext.insert("msgOffsetInfo", "0 0 1,2");
        let header = PopMessageResponse::decode_from(&ext).unwrap();
        assert_eq!(header.msg_offset_info.as_deref(), Some("0 0 1,2"));
        ext.insert("reviveQid", "x");
        assert!(PopMessageResponse::decode_from(&ext).is_err());
    }

    #[test]
    fn ack_and_change_round_trip() {
        let ack = AckMessageRequest {
            consumer_group: "G".into(),
            topic: "%RETRY%G_T".into(),
            queue_id: 0,
            extra_info: "1 2 3 4 1 b 0 1".into(),
            offset: 1,
            broker_name: None,
        };
        let command = Command::request(RequestCode::ACK_MESSAGE, &ack);
        assert_eq!(command.header::<AckMessageRequest>().unwrap(), ack);
        let change = ChangeInvisibleTimeRequest {
            consumer_group: "G".into(),
            topic: "T".into(),
            queue_id: 0,
            extra_info: "1 2 3 4 0 b 0 1".into(),
            offset: 1,
            invisible_time: 10_000,
            broker_name: Some("b".into()),
        };
        let command = Command::request(RequestCode::CHANGE_MESSAGE_INVISIBLETIME, &change);
        assert_eq!(
            command.header::<ChangeInvisibleTimeRequest>().unwrap(),
            change
        );
    }
}
