//! A failed message on its way back to the broker, and which way it is trying
//! (`remoting-protocol.md` §7.2; see `retry`).

use proto::MessageQueue;
use proto::message::Message;

use crate::id::{Epoch, QueueKey};

/// A failed message on its way back to the broker.
#[derive(Clone, Debug)]
pub(crate) struct SendBack {
    pub(super) key: QueueKey,
    pub(super) epoch: Epoch,
    pub(super) queue: MessageQueue,
    pub(super) message: Message,
    pub(super) delay_level: i32,
    pub(super) stage: Stage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// `CONSUMER_SEND_MSG_BACK`.
    Broker,
    /// Java's fallback: a plain send to the retry topic.
    RetryTopic,
    /// Orderly: past the reconsume limit, sent on to the dead-letter queue.
    DeadLetter,
}

impl SendBack {
    pub(crate) fn request_name(&self) -> &'static str {
        match self.stage {
            Stage::Broker => "CONSUMER_SEND_MSG_BACK",
            Stage::RetryTopic | Stage::DeadLetter => "SEND_MESSAGE_V2",
        }
    }
}
