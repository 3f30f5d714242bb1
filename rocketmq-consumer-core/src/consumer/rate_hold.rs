//! One pass of handing out messages (push dispatch or a poll-mode take) under the rate
//! limits: which queues a limit held back, the earliest time one of them may go, and the
//! booking of what went. With no limit configured every check is a single branch.

use std::time::Instant;

use proto::MessageQueue;
use proto::message::Message;

use super::queues::QueueTable;
use crate::id::QueueKey;
use crate::rate::RateLimiter;

/// What the rate limits held back during one pass.
#[derive(Debug, Default)]
pub(super) struct RateHold {
    /// The earliest time a held-back batch may go.
    pub(super) until: Option<Instant>,
    /// Queues passed over since the last batch went: seeing one again means every ready
    /// queue is held.
    passed_over: Vec<QueueKey>,
}

impl RateHold {
    /// Whether the consumer-wide limit holds everything now.
    #[inline]
    pub(super) fn consumer_wide(&mut self, rate: &RateLimiter, now: Instant) -> bool {
        if !rate.is_active() {
            return false;
        }
        self.hold(rate.consumer_blocked_until(now))
    }

    /// Whether queue `key`'s topic limit holds it now (it keeps its place in the turns).
    #[inline]
    pub(super) fn topic_of(
        &mut self,
        rate: &RateLimiter,
        queues: &QueueTable,
        now: Instant,
        key: QueueKey,
    ) -> bool {
        if !rate.is_active() {
            return false;
        }
        let Some(state) = queues.get(key) else {
            return false;
        };
        self.hold(rate.blocked_until(now, state.mq.topic()))
    }

    /// Whether the turns came back to `key`, passed over before, with nothing going since.
    pub(super) fn went_round(&mut self, key: QueueKey) -> bool {
        if self.passed_over.contains(&key) {
            return true;
        }
        self.passed_over.push(key);
        false
    }

    /// Books `messages` of `queue`, handed out at `now`.
    #[inline]
    pub(super) fn handed_out(
        &mut self,
        rate: &mut RateLimiter,
        now: Instant,
        queue: &MessageQueue,
        messages: &[Message],
    ) {
        if !rate.is_active() {
            return;
        }
        self.passed_over.clear();
        let bytes = messages.iter().map(|m| m.body().len() as u64).sum();
        rate.charge(now, queue.topic(), messages.len() as u64, bytes);
    }

    fn hold(&mut self, until: Option<Instant>) -> bool {
        let Some(at) = until else {
            return false;
        };
        self.until = Some(self.until.map_or(at, |u| u.min(at)));
        true
    }
}
