//! What a send ends with: a [`SendResult`] or a [`SendError`].

use proto::message::MessageEncodeError;
use proto::{MessageQueue, ResponseCode};

/// How the broker stored a message (`SendStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendStatus {
    /// Stored.
    Ok,
    /// Stored, but the synchronous flush to disk timed out.
    FlushDiskTimeout,
    /// Stored, but the synchronous replication to the slave timed out.
    FlushSlaveTimeout,
    /// Stored, but no slave is there to replicate to.
    SlaveNotAvailable,
}

/// What a successful send reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendResult {
    /// How it was stored.
    pub status: SendStatus,
    /// The queue it went to.
    pub queue: MessageQueue,
    /// The queue offset of the (first) message.
    pub queue_offset: i64,
    /// The `UNIQ_KEY` of each message, the id consumers see as `msg_id`.
    pub msg_ids: Vec<String>,
    /// The broker's offset message id of each message (store host and commit-log offset).
    pub offset_msg_ids: Vec<String>,
    /// Attempts before the one that stored it: after a failed attempt, or a connection that
    /// could not be opened (0 when the first attempt stored it). Waits for a route are not
    /// attempts.
    pub retries: u32,
}

/// Why a send failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The message (or batch) breaks a rule; nothing was sent.
    #[error("invalid message: {0}")]
    InvalidMessage(String),
    /// A batch that does not encode.
    #[error("batch does not encode: {0}")]
    Encode(MessageEncodeError),
    /// The name servers do not know the topic (create it first, or enable auto-creation).
    #[error("no route for topic {topic}")]
    NoRoute {
        /// The topic.
        topic: String,
    },
    /// The topic has no queue a producer may write.
    #[error("topic {topic} has no writable queue")]
    NoWritableQueue {
        /// The topic.
        topic: String,
    },
    /// A peer answered with an error code.
    #[error("{peer} refused: {code}: {remark}")]
    Refused {
        /// The broker's address, or "name server".
        peer: String,
        /// The response code.
        code: ResponseCode,
        /// The peer's reason.
        remark: String,
    },
    /// A peer's answer did not decode.
    #[error("bad response from {peer}: {detail}")]
    BadResponse {
        /// The broker's address, or "name server".
        peer: String,
        /// What was wrong.
        detail: String,
    },
    /// No answer within the send timeout; the message may or may not have been stored.
    #[error("no answer from {peer} within the send timeout")]
    Timeout {
        /// The peer's address.
        peer: String,
    },
    /// The connection could not be opened or broke before the answer; the message may or may
    /// not have been stored.
    #[error("connection to {peer} failed: {reason}")]
    Disconnected {
        /// The peer's address.
        peer: String,
        /// What the system said.
        reason: String,
    },
    /// The producer was closed.
    #[error("the producer is closed")]
    Closed,
}

impl SendError {
    /// Whether a peer refused for want of credentials or permission (ACL): retrying with the
    /// same credentials will not help.
    pub fn is_access_denied(&self) -> bool {
        match self {
            Self::Refused { code, remark, .. } => {
                crate::signer::is_access_refusal(*code, Some(remark))
            }
            _ => false,
        }
    }
}
