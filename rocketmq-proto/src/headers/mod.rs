//! Typed command headers: the "custom header" classes of the Java client, carried in
//! [`extFields`](crate::ExtFields) (`remoting-protocol.md` §1.8, §3).
//!
//! Every type is named after what it belongs to, `<Thing>Request` or `<Thing>Response`, and its doc
//! comment names the request code and the Java class. Field names are the Java names in snake
//! case; the `extFields` key is the Java name exactly (including oddities such as `clientID`,
//! `isForce`, `bname` and the single letters of [`SendMessageRequestV2`]).
//!
//! Field kinds follow Java:
//!
//! - a field Java annotates `@CFNotNull`, or declares with a primitive type (always sent), is a
//!   plain field: always encoded, and decoding fails with
//!   [`HeaderError::Missing`](crate::HeaderError::Missing) naming its key when it is absent;
//! - every other field is an `Option`, left out when `None`, as Java leaves out null fields.
//!
//! Keys a header does not know are ignored when decoding, so the 5.x additions a broker may send
//! (`ns`, `nsd`, `oway`, `lo`, ...) never make a header fail.
//!
//! Two wire facts to keep in mind:
//!
//! - The binary header (§1.5) cannot carry an empty string: a zero length decodes as absent, in
//!   Java as here. An empty optional value comes back as `None`, and an empty required value as a
//!   [`HeaderError::Missing`](crate::HeaderError::Missing).
//! - Booleans decode only from `true` / `false` (any case); Java's `Boolean.parseBoolean` would
//!   read anything else as false, this crate reports it instead.
//!
//! Requests whose Java header has no fields (`HEART_BEAT`, `LOCK_BATCH_MQ`, `UNLOCK_BATCH_MQ`,
//! `CHECK_CLIENT_CONFIG`) still get a unit-like type, so every request is built the same way.
//! Responses whose Java header is empty (`UPDATE_CONSUMER_OFFSET`, `UNREGISTER_CLIENT`,
//! `CONSUMER_SEND_MSG_BACK`, `GET_CONSUMER_LIST_BY_GROUP`, ...) have none: there is nothing to
//! read.
//!
//! ```
//! use rocketmq_proto::headers::{PullMessageRequest, pull_sys_flag};
//! use rocketmq_proto::{Command, CommandHeader, RequestCode};
//!
//! let header = PullMessageRequest {
//!     consumer_group: "g".into(),
//!     topic: "T".into(),
//!     queue_id: 0,
//!     queue_offset: 42,
//!     max_msg_nums: 32,
//!     sys_flag: pull_sys_flag::build(false, true, false, false, false),
//!     commit_offset: 0,
//!     suspend_timeout_millis: 15_000,
//!     subscription: None,
//!     sub_version: 1_718_000_000_000,
//!     expression_type: None,
//!     max_msg_bytes: None,
//!     broker_name: None,
//! };
//! let request = Command::request(RequestCode::PULL_MESSAGE, &header);
//! assert_eq!(request.ext_fields.get("queueOffset"), Some("42"));
//! assert_eq!(request.header::<PullMessageRequest>()?, header);
//! # Ok::<(), rocketmq_proto::HeaderError>(())
//! ```

mod admin;
mod callback;
mod client;
mod consume_stats;
mod offset;
mod pop;
mod pull;
pub mod pull_sys_flag;
mod query_message;
pub mod receipt;
mod send;
mod view_message;

pub use admin::CreateTopicRequest;
pub use callback::{
    ConsumeMessageDirectlyRequest, GetConsumerRunningInfoRequest, GetConsumerStatusRequest,
    NotifyConsumerIdsChangedRequest, ResetOffsetRequest,
};
pub use client::{
    CheckClientConfigRequest, ConsumerSendMsgBackRequest, GetConsumerListByGroupRequest,
    GetRouteInfoRequest, HeartbeatRequest, HeartbeatResponse, LockBatchMqRequest,
    UnlockBatchMqRequest, UnregisterClientRequest,
};
pub use consume_stats::GetConsumeStatsRequest;
pub use offset::{
    BoundaryType, GetEarliestMsgStoretimeRequest, GetEarliestMsgStoretimeResponse,
    GetMaxOffsetRequest, GetMaxOffsetResponse, GetMinOffsetRequest, GetMinOffsetResponse,
    QueryConsumerOffsetRequest, QueryConsumerOffsetResponse, SearchOffsetRequest,
    SearchOffsetResponse, UpdateConsumerOffsetRequest,
};
pub use pop::{
    AckMessageRequest, ChangeInvisibleTimeRequest, ChangeInvisibleTimeResponse, PopMessageRequest,
    PopMessageResponse,
};
pub use pull::{PullMessageRequest, PullMessageResponse};
pub use query_message::{QueryMessageRequest, QueryMessageResponse};
pub use receipt::ReceiptHandle;
pub use send::{SendMessageRequest, SendMessageRequestV2, SendMessageResponse};
pub use view_message::ViewMessageRequest;
