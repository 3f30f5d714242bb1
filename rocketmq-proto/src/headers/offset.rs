//! Consumer offsets and queue offsets (`remoting-protocol.md` §3.6 to §3.8).

use crate::ext::ExtValue;

crate::command_header! {
    /// Request header of `QUERY_CONSUMER_OFFSET` (14): Java `QueryConsumerOffsetRequestHeader`.
    #[derive(Default)]
    pub struct QueryConsumerOffsetRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// The topic.
        req topic: String = "topic",
        /// The queue.
        req queue_id: i32 = "queueId",
        /// 5.x: with `false` the broker answers `QUERY_NOT_FOUND` instead of offset 0 for a
        /// group that never committed.
        opt set_zero_if_not_found: bool = "setZeroIfNotFound",
    }
}

crate::command_header! {
    /// Response header of `QUERY_CONSUMER_OFFSET` (14) on `SUCCESS`: Java
    /// `QueryConsumerOffsetResponseHeader`.
    #[derive(Default)]
    pub struct QueryConsumerOffsetResponse {
        /// The committed offset.
        req offset: i64 = "offset",
    }
}

crate::command_header! {
    /// Request header of `UPDATE_CONSUMER_OFFSET` (15): Java
    /// `UpdateConsumerOffsetRequestHeader`. The response has no header.
    #[derive(Default)]
    pub struct UpdateConsumerOffsetRequest {
        /// The consumer group.
        req consumer_group: String = "consumerGroup",
        /// The topic.
        req topic: String = "topic",
        /// The queue.
        req queue_id: i32 = "queueId",
        /// The next offset to consume (last consumed + 1).
        req commit_offset: i64 = "commitOffset",
    }
}

/// Which offset `SEARCH_OFFSET_BY_TIMESTAMP` answers when several messages share the
/// timestamp: Java `BoundaryType`. Sent as the Java enum name (`LOWER` / `UPPER`), read in any
/// case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BoundaryType {
    /// The first matching offset (the broker's default).
    #[default]
    Lower,
    /// The last matching offset.
    Upper,
}

impl ExtValue for BoundaryType {
    const KIND: &'static str = "boundary type (LOWER or UPPER)";

    /// Java's `BoundaryType.getType` reads anything but `upper` as lower; a garbled value is
    /// reported here instead, as for booleans.
    fn parse_ext(raw: &str) -> Option<Self> {
        if raw.eq_ignore_ascii_case("lower") {
            Some(Self::Lower)
        } else if raw.eq_ignore_ascii_case("upper") {
            Some(Self::Upper)
        } else {
            None
        }
    }

    fn to_ext(&self) -> crate::ExtString {
        crate::ExtString::new(match self {
            Self::Lower => "LOWER",
            Self::Upper => "UPPER",
        })
    }
}

crate::command_header! {
    /// Request header of `SEARCH_OFFSET_BY_TIMESTAMP` (29): Java `SearchOffsetRequestHeader`.
    #[derive(Default)]
    pub struct SearchOffsetRequest {
        /// The topic.
        req topic: String = "topic",
        /// The queue.
        req queue_id: i32 = "queueId",
        /// The store timestamp to look for, in ms since the epoch.
        req timestamp: i64 = "timestamp",
        /// Which of several matching offsets to return (5.x; absent means lower).
        opt boundary_type: BoundaryType = "boundaryType",
    }
}

crate::command_header! {
    /// Response header of `SEARCH_OFFSET_BY_TIMESTAMP` (29): Java `SearchOffsetResponseHeader`.
    #[derive(Default)]
    pub struct SearchOffsetResponse {
        /// The offset found.
        req offset: i64 = "offset",
    }
}

crate::command_header! {
    /// Request header of `GET_MAX_OFFSET` (30): Java `GetMaxOffsetRequestHeader`.
    #[derive(Default)]
    pub struct GetMaxOffsetRequest {
        /// The topic.
        req topic: String = "topic",
        /// The queue.
        req queue_id: i32 = "queueId",
        /// 5.x: the committed (dispatched) maximum rather than the in-flight one; Java always
        /// sends `true`.
        opt committed: bool = "committed",
    }
}

crate::command_header! {
    /// Response header of `GET_MAX_OFFSET` (30): Java `GetMaxOffsetResponseHeader`.
    #[derive(Default)]
    pub struct GetMaxOffsetResponse {
        /// The next offset to be written in the queue.
        req offset: i64 = "offset",
    }
}

crate::command_header! {
    /// Request header of `GET_MIN_OFFSET` (31): Java `GetMinOffsetRequestHeader`.
    #[derive(Default)]
    pub struct GetMinOffsetRequest {
        /// The topic.
        req topic: String = "topic",
        /// The queue.
        req queue_id: i32 = "queueId",
    }
}

crate::command_header! {
    /// Response header of `GET_MIN_OFFSET` (31): Java `GetMinOffsetResponseHeader`.
    #[derive(Default)]
    pub struct GetMinOffsetResponse {
        /// The smallest offset still in the queue.
        req offset: i64 = "offset",
    }
}

crate::command_header! {
    /// Request header of `GET_EARLIEST_MSG_STORETIME` (32): Java
    /// `GetEarliestMsgStoretimeRequestHeader`.
    #[derive(Default)]
    pub struct GetEarliestMsgStoretimeRequest {
        /// The topic.
        req topic: String = "topic",
        /// The queue.
        req queue_id: i32 = "queueId",
    }
}

crate::command_header! {
    /// Response header of `GET_EARLIEST_MSG_STORETIME` (32): Java
    /// `GetEarliestMsgStoretimeResponseHeader`.
    #[derive(Default)]
    pub struct GetEarliestMsgStoretimeResponse {
        /// The store timestamp of the queue's oldest message, in ms since the epoch.
        req timestamp: i64 = "timestamp",
    }
}
