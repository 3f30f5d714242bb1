//! Sans-IO codec for the Apache RocketMQ 4.x "remoting" protocol.
//!
//! - [`frame`]: length-prefixed frames with JSON or binary headers, an incremental
//!   [`FrameDecoder`] and [`frame::encode`];
//! - [`Command`], [`code`]: one request or response and its open-newtype codes;
//! - [`ext`], [`headers`]: typed request and response headers carried in `extFields`;
//! - [`message`]: the stored-message records of a pull response, and send encodings;
//! - [`json`], [`body`]: the JSON bodies, tolerant of fastjson's non-standard output;
//! - [`MessageQueue`];
//! - [`acl`]: ACL request signing, as Java's `AclClientRPCHook` does it.
//!
//! Nothing here performs I/O, and no input makes it panic: every malformed byte becomes an
//! error value.
//!
//! ```
//! use bytes::BytesMut;
//! use rocketmq_proto::{Command, FrameDecoder, HeaderEncoding, RequestCode, frame, headers};
//!
//! let header = headers::QueryConsumerOffsetRequest {
//!     consumer_group: "g1".into(),
//!     topic: "t1".into(),
//!     queue_id: 0,
//!     set_zero_if_not_found: None,
//! };
//! let mut request = Command::request(RequestCode::QUERY_CONSUMER_OFFSET, &header);
//! request.opaque = 7;
//! let mut wire = BytesMut::new();
//! frame::encode(&request, HeaderEncoding::Binary, &mut wire)?;
//! let decoded = FrameDecoder::default().decode(&mut wire)?.expect("one whole frame");
//! assert_eq!(decoded.header::<headers::QueryConsumerOffsetRequest>()?, header);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::indexing_slicing))]

pub mod acl;
pub mod body;
pub mod code;
pub mod command;
pub mod ext;
mod ext_string;
pub mod frame;
pub mod headers;
pub mod json;
pub mod message;
pub mod queue;
pub mod trace;

pub use code::{LanguageCode, RequestCode, ResponseCode};
pub use command::Command;
pub use ext::{CommandHeader, ExtFields, HeaderError};
pub use ext_string::ExtString;
pub use frame::{EncodeError, FrameDecoder, FrameError, HeaderEncoding};
pub use queue::MessageQueue;
