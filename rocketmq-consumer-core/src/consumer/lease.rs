//! Orderly consumption's queue leases (`remoting-protocol.md` §7.10): `LOCK_BATCH_MQ` as soon as
//! a queue is assigned and every `lock_interval` after, a lease of `lock_lease` counted from when
//! the request was sent (the broker keeps the lock longer, 60 s, so the lease always ends first),
//! and what happens when a lock is refused, lapses, or may have been lost with its broker.
//!
//! A lost lease restarts the queue: a new epoch (so completions still running are dropped), an
//! empty cache, a new lock, then the offset read again from the broker, because another member
//! may have consumed the queue meanwhile.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proto::body::LockBatchRequestBody;
use proto::headers::{LockBatchMqRequest, UnlockBatchMqRequest};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use super::{Consumer, Epoch, Lifecycle, PendingKind, Phase, QueueKey};
use crate::output::{Event, FailureReason, Output};
use crate::timer::Timer;

/// How a lock request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LockFailure {
    /// No answer: timed out, or the connection lost. A broker stalled for a while answers
    /// nobody, so this says nothing of the queue's other members.
    Unanswered,
    /// No master in the route to ask (gone, or failed over to its slaves).
    NoMaster,
    /// An error answer from a broker that could lock another time (busy, failing, garbled).
    Error,
    /// The broker will never lock: it has no such request (`REQUEST_CODE_NOT_SUPPORTED`) or
    /// we may not make it (ACL's `NO_PERMISSION`).
    Unsupported,
}

impl LockFailure {
    /// What `reason`, the failure of a lock request, says of the broker.
    pub(super) fn of(reason: &FailureReason) -> Self {
        match reason {
            FailureReason::Refused(
                ResponseCode::REQUEST_CODE_NOT_SUPPORTED | ResponseCode::NO_PERMISSION,
                _,
            ) => Self::Unsupported,
            FailureReason::Refused(..) | FailureReason::Malformed(_) => Self::Error,
            FailureReason::Timeout | FailureReason::Disconnected | FailureReason::Stale => {
                Self::Unanswered
            }
        }
    }
}

impl Consumer {
    /// Asks for the locks of queues `keys`: one request per broker.
    pub(super) fn lock_queues(&mut self, now: Instant, keys: Vec<QueueKey>) {
        let mut by_broker: BTreeMap<String, Vec<(QueueKey, Epoch)>> = BTreeMap::new();
        for key in keys {
            if let Some(state) = self.queues.get(key) {
                by_broker
                    .entry(state.mq.broker_name().to_owned())
                    .or_default()
                    .push((key, state.epoch));
            }
        }
        for (broker, queues) in by_broker {
            let Some(addr) = self.cluster.lock_addr(&broker) else {
                self.on_lock_failed(now, &queues, LockFailure::NoMaster);
                continue;
            };
            let mq_set: Vec<MessageQueue> = queues
                .iter()
                .filter_map(|(key, _)| self.queues.get(*key).map(|s| s.mq.clone()))
                .collect();
            let body = self.lock_body(mq_set);
            let request = Command::request(RequestCode::LOCK_BATCH_MQ, &LockBatchMqRequest {})
                .with_body(body);
            self.request(now, &addr, request, PendingKind::Lock(queues));
        }
    }

    /// Renews the lock of every queue still owned (and asks again for orderly ones not locked
    /// yet): orderly leases, and the hand-over locks held (`handover`). A hand-over queue
    /// without its lock asks on its own (`wants_lock`).
    pub(super) fn renew_leases(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let keys = self
            .queues
            .iter()
            .filter(|s| s.phase != Phase::Revoking)
            .filter(|s| {
                self.needs_lock() || (self.hands_over(s.mq.topic()) && self.handovers.holds(&s.mq))
            })
            .map(|s| s.key)
            .collect();
        self.lock_queues(now, keys);
    }

    /// The broker answered a lock request sent at `sent`: `granted` are now ours.
    pub(super) fn on_lock(
        &mut self,
        now: Instant,
        sent: Instant,
        queues: &[(QueueKey, Epoch)],
        granted: &BTreeSet<MessageQueue>,
    ) {
        if !self.needs_lock() {
            return self.on_handover_lock(now, queues, granted);
        }
        let until = sent + self.config.lock_lease;
        let mut acquired = Vec::new();
        let mut lost = Vec::new();
        let mut to_resolve = Vec::new();
        for &(key, epoch) in queues {
            let Some(state) = self.queues.live_mut(key, epoch) else {
                continue;
            };
            // A grant whose answer took longer than a lease is worth nothing.
            if granted.contains(&state.mq) && now < until {
                state.lease = Some(until);
                if state.phase == Phase::Lock {
                    state.phase = Phase::Resolve;
                    acquired.push(state.mq.clone());
                    to_resolve.push((key, epoch));
                }
                if state.pq().has_ready() {
                    self.queues.mark_ready(key);
                }
                self.timers.set(until, Timer::LeaseExpiry(key, epoch));
            } else if state.phase == Phase::Lock {
                self.timers
                    .set(now + self.config.lock_retry, Timer::Lock(key, epoch));
            } else if state.phase != Phase::Revoking {
                lost.push(key);
            }
        }
        if !acquired.is_empty() {
            self.outputs
                .push_back(Output::Event(Event::LeaseAcquired(acquired)));
        }
        for (key, epoch) in to_resolve {
            self.resolve_offset(now, key, epoch);
        }
        let retry = self.config.lock_retry;
        for key in lost {
            self.lose_lease(now, key, retry);
        }
        self.release_stale_grants(now, granted);
    }

    /// Releases the locks `granted` of queues that are no longer ours (revoked while the lock
    /// request was out), unless their revoke releases them once its commit is answered: the
    /// broker would otherwise keep them for 60 s, standing the next owner still (orderly) or
    /// letting it lock at once while we consume (a hand-over lock we keep renewing).
    pub(super) fn release_stale_grants(&mut self, now: Instant, granted: &BTreeSet<MessageQueue>) {
        let stale: Vec<MessageQueue> = granted
            .iter()
            .filter(|mq| {
                self.queues.key_of(mq).is_none() && !self.handovers.releases_after_commit(mq)
            })
            .cloned()
            .collect();
        for mq in stale {
            self.release_lock(now, &mq);
        }
    }

    /// A lock request got no usable answer: orderly queues still waiting for their first
    /// lock ask again later, and held leases run out on their own unless the next renewal
    /// works. Hand-over locks decide for themselves (`on_handover_lock_failed`).
    pub(super) fn on_lock_failed(
        &mut self,
        now: Instant,
        queues: &[(QueueKey, Epoch)],
        failure: LockFailure,
    ) {
        if !self.needs_lock() {
            return self.on_handover_lock_failed(now, queues, failure);
        }
        for &(key, epoch) in queues {
            if self
                .queues
                .live_mut(key, epoch)
                .is_some_and(|s| s.phase == Phase::Lock)
            {
                self.timers
                    .set(now + self.config.lock_retry, Timer::Lock(key, epoch));
            }
        }
    }

    /// The queue's lease is gone: restart it under a new epoch, waiting for a new lock
    /// (asked for after `retry_in`). Nothing is committed: the queue may have a new owner.
    pub(super) fn lose_lease(&mut self, now: Instant, key: QueueKey, retry_in: Duration) {
        let Some(state) = self.queues.remove(key) else {
            return;
        };
        let mq = state.mq;
        self.outputs
            .push_back(Output::Event(Event::LeaseLost(vec![mq.clone()])));
        if state.phase == Phase::Revoking || self.lifecycle != Lifecycle::Running {
            self.outputs
                .push_back(Output::Event(Event::Revoked(vec![mq])));
            return;
        }
        let (key, epoch) = self.insert_queue(mq, None, None);
        self.timers.set(now + retry_in, Timer::Lock(key, epoch));
    }

    /// The connection to `addr` is gone. If `addr` is a broker master, its locks may be gone
    /// with it (a restarted broker forgets them, and a lost connection is all a client sees of
    /// a restart), so the leases of its queues end now.
    pub(super) fn lose_leases_on(&mut self, now: Instant, addr: &str) {
        if !self.needs_lock() {
            return;
        }
        let keys: Vec<QueueKey> = self
            .queues
            .iter()
            .filter(|s| s.lease.is_some() && s.phase != Phase::Revoking)
            .filter(|s| self.cluster.lock_addr(s.mq.broker_name()).as_deref() == Some(addr))
            .map(|s| s.key)
            .collect();
        for key in keys {
            self.lose_lease(now, key, Duration::ZERO);
        }
    }

    /// Releases one queue's lock without waiting for an answer (after a revoke).
    pub(super) fn unlock_oneway(&mut self, now: Instant, mq: &MessageQueue) {
        let Some(addr) = self.cluster.lock_addr(mq.broker_name()) else {
            return;
        };
        let body = self.lock_body(vec![mq.clone()]);
        let request = Command::request(RequestCode::UNLOCK_BATCH_MQ, &UnlockBatchMqRequest {})
            .with_body(body);
        self.oneway(now, &addr, request);
    }

    /// Shutdown: releases every held lock (orderly leases, hand-over locks), one request per
    /// broker, so the next owner need not wait for the broker's 60 s expiry.
    pub(super) fn unlock_all(&mut self, now: Instant) {
        let leased: Vec<MessageQueue> = if self.needs_lock() {
            self.queues
                .iter()
                .filter(|s| s.lease.is_some())
                .map(|s| s.mq.clone())
                .collect()
        } else {
            Vec::new()
        };
        let mut by_broker: BTreeMap<String, BTreeSet<MessageQueue>> = BTreeMap::new();
        for mq in leased.into_iter().chain(self.handovers.take_held()) {
            by_broker
                .entry(mq.broker_name().to_owned())
                .or_default()
                .insert(mq);
        }
        for (broker, queues) in by_broker {
            let Some(addr) = self.cluster.lock_addr(&broker) else {
                continue;
            };
            let body = self.lock_body(queues.into_iter().collect());
            let request = Command::request(RequestCode::UNLOCK_BATCH_MQ, &UnlockBatchMqRequest {})
                .with_body(body);
            self.request(now, &addr, request, PendingKind::Unlock);
        }
    }

    fn lock_body(&self, queues: Vec<MessageQueue>) -> Vec<u8> {
        LockBatchRequestBody::new(&self.config.group, &self.client_id, queues).encode()
    }
}
