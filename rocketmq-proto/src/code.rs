//! Open newtypes for the protocol's numeric codes.
//!
//! Every code is a transparent wrapper around its wire integer, so a value this crate has never
//! heard of still decodes and can be surfaced to the caller (a newer broker may well send one).
//! Known values are associated constants; [`RequestCode::name`] and friends give the Java name.

use std::fmt;

macro_rules! open_code {
    (
        $(#[$meta:meta])*
        $name:ident($repr:ty) {
            $( $(#[$cmeta:meta])* $konst:ident = $value:expr ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub $repr);

        impl $name {
            $( $(#[$cmeta])* pub const $konst: Self = Self($value); )*

            /// The Java constant name of a known code, `None` for a code this crate does not know.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($konst)), )*
                    _ => None,
                }
            }

            /// The known code with this Java constant name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $( stringify!($konst) => Some(Self::$konst), )*
                    _ => None,
                }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => write!(f, "{}({})", name, self.0),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }

        impl From<$repr> for $name {
            fn from(value: $repr) -> Self {
                Self(value)
            }
        }
    };
}

open_code! {
    /// A request code (`RequestCode.java`). Requests travel both ways: the broker sends some to
    /// the client (e.g. [`RequestCode::NOTIFY_CONSUMER_IDS_CHANGED`]).
    RequestCode(i32) {
        /// Send one message (V1 header).
        SEND_MESSAGE = 10,
        /// Pull messages from a queue.
        PULL_MESSAGE = 11,
        /// Look messages up in a broker's index by key (or unique key).
        QUERY_MESSAGE = 12,
        /// Query a group's committed offset of a queue.
        QUERY_CONSUMER_OFFSET = 14,
        /// Commit a group's offset of a queue.
        UPDATE_CONSUMER_OFFSET = 15,
        /// Create or update a topic on a broker.
        UPDATE_AND_CREATE_TOPIC = 17,
        /// A broker's whole topic config (`TopicConfigSerializeWrapper`), as a slave copies it.
        GET_ALL_TOPIC_CONFIG = 21,
        /// Find the offset of a queue for a store timestamp.
        SEARCH_OFFSET_BY_TIMESTAMP = 29,
        /// The next offset to be written in a queue.
        GET_MAX_OFFSET = 30,
        /// The smallest offset still stored in a queue.
        GET_MIN_OFFSET = 31,
        /// The store time of the earliest message of a queue.
        GET_EARLIEST_MSG_STORETIME = 32,
        /// One stored message by its commit-log offset.
        VIEW_MESSAGE_BY_ID = 33,
        /// Register the client's producers and consumers with a broker.
        HEART_BEAT = 34,
        /// Remove the client from a broker.
        UNREGISTER_CLIENT = 35,
        /// Return a message for a later retry (or the DLQ).
        CONSUMER_SEND_MSG_BACK = 36,
        /// The client ids of a consumer group.
        GET_CONSUMER_LIST_BY_GROUP = 38,
        /// Broker to producer: check a transaction's state.
        CHECK_TRANSACTION_STATE = 39,
        /// Broker to consumer (oneway): group membership changed, rebalance now.
        NOTIFY_CONSUMER_IDS_CHANGED = 40,
        /// Lock queues for orderly consumption.
        LOCK_BATCH_MQ = 41,
        /// Unlock queues.
        UNLOCK_BATCH_MQ = 42,
        /// Validate a non-TAG subscription.
        CHECK_CLIENT_CONFIG = 46,
        /// Name server: the route of a topic.
        GET_ROUTEINFO_BY_TOPIC = 105,
        /// Name server: the cluster's brokers.
        GET_BROKER_CLUSTER_INFO = 106,
        /// Create or update a subscription group.
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200,
        /// Admin to broker: a group's offsets and lag on this broker.
        GET_CONSUME_STATS = 208,
        /// Broker to consumer (oneway): move the group's offsets.
        RESET_CONSUMER_CLIENT_OFFSET = 220,
        /// Broker to consumer: report offsets (deprecated).
        GET_CONSUMER_STATUS_FROM_CLIENT = 221,
        /// Admin to broker: reset a group's offsets.
        INVOKE_BROKER_TO_RESET_OFFSET = 222,
        /// Broker to consumer: describe the consumer's state.
        GET_CONSUMER_RUNNING_INFO = 307,
        /// Broker to consumer: consume this one message now.
        CONSUME_MESSAGE_DIRECTLY = 309,
        /// Send one message (compact V2 header).
        SEND_MESSAGE_V2 = 310,
        /// Send a batch of messages (V2 header).
        SEND_BATCH_MESSAGE = 320,
        /// Broker to client: request/reply.
        PUSH_REPLY_MESSAGE_TO_CLIENT = 326,
        /// Lite pull (5.x brokers only).
        LITE_PULL_MESSAGE = 361,
        /// Ask a broker which queues of a topic to read (5.x, `QueryAssignmentProcessor`).
        QUERY_ASSIGNMENT = 400,
        /// Set how a group reads a topic, pull or pop (5.x).
        SET_MESSAGE_REQUEST_MODE = 401,
        /// Pop messages, invisible to the group for a while (5.x, `PopMessageProcessor`).
        POP_MESSAGE = 200050,
        /// Acknowledge one popped message (5.x, `AckMessageProcessor`).
        ACK_MESSAGE = 200051,
        /// Peek messages without popping them (5.x).
        PEEK_MESSAGE = 200052,
        /// Change a popped message's invisibility (5.x, `ChangeInvisibleTimeProcessor`).
        CHANGE_MESSAGE_INVISIBLETIME = 200053,
        /// Long-poll for whether a pop would find messages (5.x).
        NOTIFICATION = 200054,
        /// How many pops are suspended on a queue (5.x).
        POLLING_INFO = 200055,
        /// Acknowledge popped messages by checkpoint (5.x, `AckMessageProcessor`).
        BATCH_ACK_MESSAGE = 200151,
    }
}

open_code! {
    /// A response code (`ResponseCode.java`, `RemotingSysResponseCode.java`).
    ResponseCode(i32) {
        /// Success.
        SUCCESS = 0,
        /// Generic failure.
        SYSTEM_ERROR = 1,
        /// Overloaded or flow controlled; retry later.
        SYSTEM_BUSY = 2,
        /// The peer does not know the request code.
        REQUEST_CODE_NOT_SUPPORTED = 3,
        /// A transaction failed.
        TRANSACTION_FAILED = 4,
        /// Send: stored, flush not confirmed.
        FLUSH_DISK_TIMEOUT = 10,
        /// Send: stored, no slave available.
        SLAVE_NOT_AVAILABLE = 11,
        /// Send: stored, slave flush not confirmed.
        FLUSH_SLAVE_TIMEOUT = 12,
        /// The message was rejected.
        MESSAGE_ILLEGAL = 13,
        /// The service is not available.
        SERVICE_NOT_AVAILABLE = 14,
        /// Version not supported.
        VERSION_NOT_SUPPORTED = 15,
        /// Not permitted.
        NO_PERMISSION = 16,
        /// The topic does not exist.
        TOPIC_NOT_EXIST = 17,
        /// The topic exists already.
        TOPIC_EXIST_ALREADY = 18,
        /// Pull: nothing new (NO_NEW_MSG).
        PULL_NOT_FOUND = 19,
        /// Pull: nothing matched the filter (NO_MATCHED_MSG).
        PULL_RETRY_IMMEDIATELY = 20,
        /// Pull: the offset is illegal; use `nextBeginOffset`.
        PULL_OFFSET_MOVED = 21,
        /// No committed offset for the group and queue.
        QUERY_NOT_FOUND = 22,
        /// The subscription expression does not parse.
        SUBSCRIPTION_PARSE_FAILED = 23,
        /// The broker has no subscription for the group (no heartbeat yet).
        SUBSCRIPTION_NOT_EXIST = 24,
        /// The broker's subscription version is older than the request's.
        SUBSCRIPTION_NOT_LATEST = 25,
        /// The subscription group does not exist.
        SUBSCRIPTION_GROUP_NOT_EXIST = 26,
        /// SQL92 filter data missing.
        FILTER_DATA_NOT_EXIST = 27,
        /// SQL92 filter data outdated.
        FILTER_DATA_NOT_LATEST = 28,
        /// An invalid parameter (5.x).
        INVALID_PARAMETER = 29,
        /// The consumer is not online.
        CONSUMER_NOT_ONLINE = 206,
        /// A broker-to-client call timed out.
        CONSUME_MSG_TIMEOUT = 207,
        /// No message: also a pop ack or invisibility change for an offset the queue no longer
        /// holds (`AckMessageProcessor`).
        NO_MESSAGE = 208,
        /// Pop: too many pops are suspended on the broker already; retry later.
        POLLING_FULL = 209,
        /// Pop: the long poll ended with nothing to pop.
        POLLING_TIMEOUT = 210,
        /// Pull: flow controlled by the broker; retry shortly.
        FLOW_CONTROL = 215,
        /// The server is shutting down gracefully (5.x).
        GO_AWAY = 1500,
    }
}

open_code! {
    /// The sender's language (`LanguageCode.java`). JSON headers carry the name, binary headers
    /// the byte.
    LanguageCode(u8) {
        /// Java.
        JAVA = 0,
        /// C++.
        CPP = 1,
        /// .NET.
        DOTNET = 2,
        /// Python.
        PYTHON = 3,
        /// Delphi.
        DELPHI = 4,
        /// Erlang.
        ERLANG = 5,
        /// Ruby.
        RUBY = 6,
        /// Any other language; also what an unknown JSON language name decodes to.
        OTHER = 7,
        /// HTTP.
        HTTP = 8,
        /// Go.
        GO = 9,
        /// PHP.
        PHP = 10,
        /// OMS.
        OMS = 11,
        /// Rust (brokers before 4.9.4 do not know it).
        RUST = 12,
        /// Node.js (5.x).
        NODE_JS = 13,
    }
}

impl Default for LanguageCode {
    /// `JAVA`: every broker version knows it, while brokers older than 4.9.4 reject `RUST`.
    fn default() -> Self {
        Self::JAVA
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_codes_survive_and_print() {
        let code = RequestCode(4242);
        assert_eq!(code.name(), None);
        assert_eq!(format!("{code}"), "RequestCode(4242)");
        assert_eq!(
            format!("{}", ResponseCode::PULL_NOT_FOUND),
            "PULL_NOT_FOUND(19)"
        );
        assert_eq!(LanguageCode::from_name("RUST"), Some(LanguageCode::RUST));
        assert_eq!(LanguageCode::from_name("COBOL"), None);
    }
}
