//! One ordered timer queue for every deadline the consumer keeps.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::id::{Epoch, QueueKey};

/// A timer. Per-queue and per-request timers carry their key; a fired timer whose subject is
/// gone, or whose epoch is old, is ignored, so they never need cancelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Timer {
    /// Refresh topic routes.
    RouteRefresh,
    /// Heartbeat every broker.
    Heartbeat,
    /// Rebalance every topic.
    Rebalance,
    /// Commit offsets.
    PersistOffsets,
    /// Commit the offsets acknowledgements moved since the last commit.
    AckCommit,
    /// A queue's next pull (or offset query) is due: `(queue key, epoch)`.
    Pull(QueueKey, Epoch),
    /// A revoked queue's drain deadline: `(queue key, epoch)`.
    RevokeDeadline(QueueKey, Epoch),
    /// Probe the connections that have been quiet too long with requests in flight.
    Probe,
    /// Redeliver messages whose reconsume delay has passed.
    Redeliver,
    /// A rate limit lets held-back messages go again.
    RateLimit,
    /// Renew every owned queue's lock (orderly leases and hand-over locks).
    LockRenew,
    /// Ask again for a queue's lock (orderly, or a hand-over): `(queue key, epoch)`.
    Lock(QueueKey, Epoch),
    /// A queue waiting for its hand-over lock starts without it: `(queue key, epoch)`.
    HandoverDeadline(QueueKey, Epoch),
    /// Orderly: a queue's lease may have lapsed: `(queue key, epoch)`.
    LeaseExpiry(QueueKey, Epoch),
    /// Send failed messages out of attempts to the retry topic again.
    Resend,
    /// Concurrent: send back the messages of deliveries that overran `consume_timeout`.
    ConsumeTimeoutScan,
    /// Shutdown stops waiting for in-flight deliveries.
    ShutdownDrain,
    /// Shutdown stops waiting for commit and unregister answers.
    ShutdownFinish,
    /// Commits that a lost connection failed (final ones, hand-overs') go out again, to the
    /// brokers that take requests by now.
    CommitRetry,
}

/// Timers ordered by deadline, ties broken by the timer itself, so firing order is
/// deterministic.
///
/// Generic over the timer type so the pop consumer (`crate::pop`) keeps its own timers in the
/// same structure; the push consumer's are [`Timer`].
#[derive(Debug)]
pub(crate) struct TimerQueue<T = Timer> {
    entries: BTreeSet<(Instant, T)>,
}

impl<T> Default for TimerQueue<T> {
    fn default() -> Self {
        Self {
            entries: BTreeSet::new(),
        }
    }
}

impl<T: Copy + Ord> TimerQueue<T> {
    pub(crate) fn set(&mut self, at: Instant, timer: T) {
        self.entries.insert((at, timer));
    }

    /// Replaces every pending instance of `timer` with one at `at`.
    pub(crate) fn reset(&mut self, at: Instant, timer: T) {
        self.entries.retain(|(_, t)| *t != timer);
        self.entries.insert((at, timer));
    }

    /// Moves `timer` to `at` unless it is due sooner already (set once if absent).
    pub(crate) fn reset_earlier(&mut self, at: Instant, timer: T) {
        let sooner = self
            .entries
            .iter()
            .any(|(t_at, t)| *t == timer && *t_at <= at);
        if !sooner {
            self.reset(at, timer);
        }
    }

    /// Moves `timer` to `at` unless it is due later already (set once if absent).
    pub(crate) fn reset_later(&mut self, at: Instant, timer: T) {
        let later = self
            .entries
            .iter()
            .any(|(t_at, t)| *t == timer && *t_at >= at);
        if !later {
            self.reset(at, timer);
        }
    }

    /// Cancels one timer set for `at`.
    pub(crate) fn remove(&mut self, at: Instant, timer: T) {
        self.entries.remove(&(at, timer));
    }

    pub(crate) fn next(&self) -> Option<(Instant, T)> {
        self.entries.first().copied()
    }

    /// Removes and returns the earliest timer due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<T> {
        match self.entries.first() {
            Some(&(at, _)) if at <= now => self.entries.pop_first().map(|(_, t)| t),
            _ => None,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}
