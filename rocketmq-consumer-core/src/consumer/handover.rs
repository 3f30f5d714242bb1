//! Quiet hand-overs: a queue that a rebalance moves from one live member to another is not
//! read by the new owner until the old one has finished with it.
//!
//! Concurrent (and poll-mode) clustering consumers in Java never coordinate a hand-over: the
//! new owner reads the broker's offset as soon as its own rebalance gives it the queue, while
//! the old owner's last deliveries are still running and its last commit is still on its way
//! (`RebalancePushImpl.removeUnnecessaryMessageQueue` persists the offset once the process
//! queue is dropped, not once its messages are done). Everything the old owner consumed after
//! that offset is consumed again. The broker already has what it takes to order the two: the
//! orderly consumers' lock table (`RebalanceLockManager`: one client per group and queue, kept
//! 60 s unless renewed, released by `UNLOCK_BATCH_MQ`). This module holds that lock as an
//! ownership token for every queue, orderly or not:
//!
//! - a queue assigned to us asks `LOCK_BATCH_MQ` before its offset; while the broker refuses
//!   (another member still holds it), it asks again every `handover_retry`;
//! - a revoked queue stops pulling, waits for its in-flight deliveries (up to
//!   `revoke_drain_timeout`), commits its offset as a confirmed `UPDATE_CONSUMER_OFFSET`, and
//!   only once the broker answered it releases the lock, so the next owner's offset query
//!   (which follows its lock) reads that commit;
//! - shutdown unlocks every held queue after the final commits, before unregistering;
//! - locks are renewed every `lock_interval` (20 s) with the orderly ones.
//!
//! A new owner never waits for ever: `handover_timeout` after the broker's first answer it
//! starts without the lock (the old owner crashed, or is cut off and holds it until the
//! broker's 60 s expiry). The clock starts at an answer, not at the assignment, because a
//! broker that stalls (a long GC pause under load) answers neither the new owner nor the old
//! one: counting the stall would let the new owner read the offset before the old owner's
//! revoke, delayed by the same stall, committed it. A queue that started without its lock
//! asks for it again every `lock_retry` until it holds it, so its own next hand-over is
//! ordered again. A broker that will never lock (no such request, no permission) lets the
//! queue start at once; an error answer (busy, failing) is asked again. A member that the
//! broker lists alone in its group does not wait either: whoever holds the lock is no member
//! (it crashed), and nobody will release it. A member of the group
//! that never locks (Apache's own concurrent consumer) is never waited for: the broker grants
//! the lock at once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proto::MessageQueue;

use super::lease::LockFailure;
use super::{Consumer, Epoch, Phase, QueueKey};
use crate::config::{ConsumeMode, MessageModel};
use crate::stats::{Histogram, Latency};
use crate::timer::Timer;

/// What the hand-overs of one queue cost at this consumer, over all its lives here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Starts that waited for another member to release the queue.
    pub(crate) handovers: u64,
    /// Of those, the starts that gave up waiting after `handover_timeout`.
    pub(crate) timeouts: u64,
    /// How long the last of them waited.
    pub(crate) last_wait: Option<Duration>,
}

/// A queue life waiting for its lock.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    epoch: Epoch,
    since: Instant,
    /// The broker refused the lock at least once: another member held the queue.
    refused: bool,
    /// The broker answered a lock request (granted, refused or an error): the clock of
    /// `handover_timeout` runs.
    answered: bool,
}

/// The locks held as hand-over tokens, the queue lives waiting for theirs, and what waiting
/// cost. Owned by the consumer; nothing else changes it.
#[derive(Debug, Default)]
pub(crate) struct Handovers {
    /// Queues whose broker lock we hold (granted, not released since).
    held: BTreeSet<MessageQueue>,
    /// Revoked queues (orderly ones too) whose lock goes once their commit is answered.
    releasing: BTreeSet<MessageQueue>,
    waiting: BTreeMap<QueueKey, Waiting>,
    /// Topics whose last rebalance listed no member of the group but us: whoever holds a
    /// lock of theirs is no member any more (it crashed), so there is nobody to wait for.
    alone: BTreeSet<String>,
    tallies: BTreeMap<MessageQueue, Tally>,
    /// How long each hand-over stood the queue still (starts that were refused at least once).
    wait: Histogram,
    handovers: u64,
    timeouts: u64,
}

impl Handovers {
    /// Queue life `(key, epoch)` starts waiting for its lock at `now`.
    fn begin(&mut self, key: QueueKey, epoch: Epoch, now: Instant) {
        self.waiting.insert(
            key,
            Waiting {
                epoch,
                since: now,
                refused: false,
                answered: false,
            },
        );
    }

    /// The broker answered queue life `(key, epoch)`'s lock request without granting it
    /// (`refused`: another member holds the queue; otherwise an error answer). Returns
    /// whether this was its first answer, which starts the clock of `handover_timeout`.
    fn answered(&mut self, key: QueueKey, epoch: Epoch, refused: bool) -> bool {
        let Some(w) = self.waiting.get_mut(&key).filter(|w| w.epoch == epoch) else {
            return false;
        };
        w.refused |= refused;
        !std::mem::replace(&mut w.answered, true)
    }

    /// The queue life stops waiting at `now` (`timed_out`: without the lock). A wait that was
    /// refused at least once, or gave up, was a hand-over and is counted.
    fn end(
        &mut self,
        key: QueueKey,
        epoch: Epoch,
        mq: &MessageQueue,
        now: Instant,
        timed_out: bool,
    ) {
        if self.waiting.get(&key).is_none_or(|w| w.epoch != epoch) {
            return;
        }
        let Some(w) = self.waiting.remove(&key) else {
            return;
        };
        if !(w.refused || timed_out) {
            return;
        }
        let waited = now.saturating_duration_since(w.since);
        let tally = self.tallies.entry(mq.clone()).or_default();
        tally.handovers += 1;
        tally.last_wait = Some(waited);
        self.handovers += 1;
        if timed_out {
            tally.timeouts += 1;
            self.timeouts += 1;
        }
        self.wait.record(waited);
    }

    /// The last rebalance of `topic` listed `members` of the group; `us` is our client id.
    /// Alone means listed alone: an empty list (the broker knows nobody yet) says nothing.
    pub(super) fn members_listed(&mut self, topic: &str, members: &[String], us: &str) {
        if !members.is_empty() && members.iter().all(|m| m == us) {
            self.alone.insert(topic.to_owned());
        } else {
            self.alone.remove(topic);
        }
    }

    /// Whether the last rebalance of `topic` listed no other member of the group.
    fn alone_in(&self, topic: &str) -> bool {
        self.alone.contains(topic)
    }

    /// Forgets queue life `key`'s wait (revoked or restarted before it ended).
    pub(super) fn forget(&mut self, key: QueueKey) {
        self.waiting.remove(&key);
    }

    /// Revoked `mq`'s lock is released once its commit, now in flight, is answered.
    pub(super) fn release_after_commit(&mut self, mq: MessageQueue) {
        self.releasing.insert(mq);
    }

    /// Revoked `mq`'s commit was answered (or failed): its lock goes now.
    pub(super) fn commit_ended(&mut self, mq: &MessageQueue) {
        self.releasing.remove(mq);
    }

    /// Whether revoked `mq`'s lock waits for its commit's answer.
    pub(super) fn releases_after_commit(&self, mq: &MessageQueue) -> bool {
        self.releasing.contains(mq)
    }

    /// Every lock held, handed out to be released (shutdown).
    pub(super) fn take_held(&mut self) -> BTreeSet<MessageQueue> {
        std::mem::take(&mut self.held)
    }

    /// Whether we hold `mq`'s broker lock as a hand-over token.
    pub(super) fn holds(&self, mq: &MessageQueue) -> bool {
        self.held.contains(mq)
    }

    /// Since when queue life `key` has been waiting for its lock, if it is.
    pub(crate) fn waiting_since(&self, key: QueueKey) -> Option<Instant> {
        self.waiting.get(&key).map(|w| w.since)
    }

    /// What the hand-overs of `mq` cost so far.
    pub(crate) fn tally(&self, mq: &MessageQueue) -> Tally {
        self.tallies.get(mq).copied().unwrap_or_default()
    }

    /// Hand-overs counted, of which `timeouts` gave up, and how long they stood still.
    pub(crate) fn totals(&self) -> (u64, u64, Latency) {
        (self.handovers, self.timeouts, self.wait.summary())
    }
}

impl Consumer {
    /// Whether queues of `topic` are handed over under the broker lock: clustering, not
    /// orderly (whose lease is that lock already), with a `handover_timeout`, and assigned by
    /// rebalance (a poll consumer's `assign`ed queues are the application's to share).
    pub(super) fn hands_over(&self, topic: &str) -> bool {
        self.handover_enabled() && !self.assigned.contains_key(topic)
    }

    /// Whether this consumer hands queues over under the broker lock at all.
    pub(super) fn handover_enabled(&self) -> bool {
        self.config.message_model == MessageModel::Clustering
            && self.config.consume_mode != ConsumeMode::Orderly
            && !self.config.handover_timeout.is_zero()
    }

    /// Queue `key`, just assigned, waits for its lock before its offset is read.
    pub(super) fn await_handover(&mut self, now: Instant, key: QueueKey) {
        let Some(state) = self.queues.get_mut(key) else {
            return;
        };
        state.phase = Phase::Lock;
        let epoch = state.epoch;
        self.handovers.begin(key, epoch, now);
    }

    /// Whether queue life `(key, epoch)` asks for its lock: it waits for it (an orderly lease
    /// or a hand-over lock), or it started without its hand-over lock (`handover_timeout`)
    /// and keeps asking. Each such queue has one retry in flight or pending: an answer
    /// schedules the next ask, so nothing else may (two would ask twice as often for good).
    pub(super) fn wants_lock(&self, key: QueueKey, epoch: Epoch) -> bool {
        self.queues.live(key, epoch).is_some_and(|s| {
            s.phase == Phase::Lock
                || (s.phase != Phase::Revoking
                    && self.hands_over(s.mq.topic())
                    && !self.handovers.holds(&s.mq))
        })
    }

    /// The broker answered queue life `(key, epoch)`'s lock request without granting it:
    /// asked again after `handover_retry`, and the first such answer starts the clock.
    fn lock_not_granted(&mut self, now: Instant, key: QueueKey, epoch: Epoch, refused: bool) {
        if self.handovers.answered(key, epoch, refused) {
            self.timers.set(
                now + self.config.handover_timeout,
                Timer::HandoverDeadline(key, epoch),
            );
        }
        self.timers
            .set(now + self.config.handover_retry, Timer::Lock(key, epoch));
    }

    /// The broker answered a hand-over lock request: `granted` are ours.
    pub(super) fn on_handover_lock(
        &mut self,
        now: Instant,
        queues: &[(QueueKey, Epoch)],
        granted: &BTreeSet<MessageQueue>,
    ) {
        for &(key, epoch) in queues {
            let Some(state) = self.queues.live_mut(key, epoch) else {
                continue;
            };
            let mq = state.mq.clone();
            let waiting = state.phase == Phase::Lock;
            if granted.contains(&mq) {
                self.handovers.held.insert(mq);
                if waiting {
                    self.start_handed_over(now, key, epoch, false);
                }
            } else if waiting && self.handovers.alone_in(mq.topic()) {
                // Held by no member of the group: a member that crashed (a SIGKILLed process
                // restarted as a new client, say), whose lock lasts until the broker's 60 s
                // expiry. Nobody will release it, so the queue starts now, without it, and
                // asks for it every `lock_retry` as after a timed-out wait.
                self.handovers.answered(key, epoch, true);
                self.start_handed_over(now, key, epoch, false);
            } else if waiting {
                self.lock_not_granted(now, key, epoch, true);
            } else if state.phase != Phase::Revoking {
                // Someone else holds the lock: we started without it (`handover_timeout`), or
                // it lapsed while we could not renew it. We keep consuming, as Java's
                // concurrent consumer would, have nothing to release, and ask again every
                // `lock_retry`: once we hold it, our next hand-over of the queue is ordered.
                self.handovers.held.remove(&mq);
                self.timers
                    .set(now + self.config.lock_retry, Timer::Lock(key, epoch));
            }
        }
        self.release_stale_grants(now, granted);
    }

    /// A hand-over lock request failed. Queues waiting for their lock ask again after
    /// `handover_retry` (an error answer or a route without master starts the clock, a
    /// missing answer does not), or start at once if the broker will never lock: there is
    /// nothing to wait for. A started queue asking for its lock asks again after
    /// `lock_retry`, unless the broker never locks.
    pub(super) fn on_handover_lock_failed(
        &mut self,
        now: Instant,
        queues: &[(QueueKey, Epoch)],
        failure: LockFailure,
    ) {
        for &(key, epoch) in queues {
            let Some(state) = self.queues.live(key, epoch) else {
                continue;
            };
            if state.phase != Phase::Lock {
                if failure != LockFailure::Unsupported && self.wants_lock(key, epoch) {
                    self.timers
                        .set(now + self.config.lock_retry, Timer::Lock(key, epoch));
                }
                continue;
            }
            match failure {
                LockFailure::Unsupported => self.start_handed_over(now, key, epoch, false),
                LockFailure::Error | LockFailure::NoMaster => {
                    self.lock_not_granted(now, key, epoch, false)
                }
                LockFailure::Unanswered => self
                    .timers
                    .set(now + self.config.handover_retry, Timer::Lock(key, epoch)),
            }
        }
    }

    /// `handover_timeout` passed since the broker first answered queue life `(key, epoch)`'s
    /// lock request: start without the lock. Its pending retry goes on asking, every
    /// `lock_retry` once the queue runs.
    pub(super) fn handover_deadline(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        if self
            .queues
            .live(key, epoch)
            .is_some_and(|s| s.phase == Phase::Lock)
        {
            self.start_handed_over(now, key, epoch, true);
        }
    }

    fn start_handed_over(&mut self, now: Instant, key: QueueKey, epoch: Epoch, timed_out: bool) {
        let Some(state) = self.queues.live_mut(key, epoch) else {
            return;
        };
        state.phase = Phase::Resolve;
        let mq = state.mq.clone();
        self.handovers.end(key, epoch, &mq, now, timed_out);
        self.resolve_offset(now, key, epoch);
    }

    /// Revoked `mq`'s last commit ended (stored, or given up on): its lock goes, unless a
    /// rebalance gave the queue back meanwhile (the lock is held anew then).
    pub(super) fn hand_over_commit_ended(&mut self, now: Instant, mq: &MessageQueue) {
        self.handovers.commit_ended(mq);
        if self.queues.key_of(mq).is_none() {
            self.release_lock(now, mq);
        }
    }

    /// Releases `mq`'s broker lock (an orderly lease or a hand-over lock) without waiting
    /// for an answer: after its revoke, once its last commit was answered.
    pub(super) fn release_lock(&mut self, now: Instant, mq: &MessageQueue) {
        self.handovers.held.remove(mq);
        self.unlock_oneway(now, mq);
    }
}
