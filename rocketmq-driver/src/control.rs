//! What a [`LitePullConsumer`](crate::LitePullConsumer)'s control requests answer: a commit's
//! report, or why a request failed.

use consumer_core::{ConfigError, FailureReason, MessageQueue};

/// Why a control request of a [`LitePullConsumer`](crate::LitePullConsumer) failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlError {
    /// The consumer refused: the queue is not one it owns (yet), or not started.
    Rejected(ConfigError),
    /// The broker refused, did not answer in time, or could not be reached.
    Failed(FailureReason),
    /// The consumer's driver task is gone (shut down, panicked, or its runtime stopped).
    Stopped,
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rejected(e) => write!(f, "{e}"),
            Self::Failed(reason) => write!(f, "the broker request failed: {reason:?}"),
            Self::Stopped => f.write_str("the consumer's driver task stopped"),
        }
    }
}

impl std::error::Error for ControlError {}

/// What [`LitePullConsumer::commit`](crate::LitePullConsumer::commit) stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitReport {
    /// Queues whose broker confirmed the commit (broadcasting: stored locally), with the next
    /// offset to consume.
    pub committed: Vec<(MessageQueue, i64)>,
    /// Started queues without a confirmation: the broker refused or did not answer in time,
    /// or could not be reached. A queue not started yet has nothing to commit and is in
    /// neither list.
    pub unconfirmed: Vec<MessageQueue>,
}
