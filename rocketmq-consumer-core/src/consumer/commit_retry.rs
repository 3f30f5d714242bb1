//! One more try for a commit a lost connection failed: a final commit (shutdown) or the commit
//! of a queue handed over to another member, whose broker lock waits for it.
//!
//! Either commit fails for want of a connection when the connection is lost with it on it, or
//! when the broker's address is in its reconnect backoff (a connection lost just before); the
//! Rust broker dropped one of ours under the whole suite's load. Without the retry, a final
//! commit was reported uncommitted and a hand-over's lock released over the broker's older
//! offset: either way the next owner consumed again what was consumed since the last commit.
//! Each goes once more when its broker takes requests again; a hand-over's lock waits for that
//! (the next owner waits for the lock, up to `handover_timeout`), a shutdown for its final
//! commits (`ShutdownFinish` is pushed past the retry). A commit that timed out is not retried:
//! its broker had `request_timeout` already.

use std::collections::BTreeSet;
use std::time::Instant;

use proto::MessageQueue;

use super::{Consumer, Lifecycle, PendingKind};
use crate::timer::Timer;

/// Which commit a retry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retried {
    /// A final commit at shutdown.
    Final,
    /// The commit of a queue handed over (its lock is released after it).
    HandOver,
}

/// The commits waiting for another try, and the queues that had theirs.
#[derive(Debug, Default)]
pub(crate) struct CommitRetries {
    /// Waiting for their broker: which commit, the queue, the offset.
    waiting: Vec<(Retried, MessageQueue, i64)>,
    /// Queues whose commit in flight is a retry: its failure is final.
    retrying: BTreeSet<MessageQueue>,
}

impl CommitRetries {
    /// Holds `mq`'s commit of `offset` for another try; `false` when the one that failed was
    /// the retry already.
    fn hold(&mut self, retried: Retried, mq: &MessageQueue, offset: i64) -> bool {
        if self.retrying.remove(mq) {
            return false;
        }
        self.waiting.push((retried, mq.clone(), offset));
        true
    }

    /// `mq`'s commit was answered: a later one may be retried again.
    pub(crate) fn answered(&mut self, mq: &MessageQueue) {
        self.retrying.remove(mq);
    }

    /// Takes the held commits `ready` says may go now, counting them as retries.
    fn take_ready(
        &mut self,
        ready: impl Fn(&MessageQueue) -> bool,
    ) -> Vec<(Retried, MessageQueue, i64)> {
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(_, mq, _)| ready(mq));
        self.waiting = later;
        self.retrying
            .extend(now.iter().map(|(_, mq, _)| mq.clone()));
        now
    }

    /// The queues of the held commits.
    fn waiting(&self) -> impl Iterator<Item = &MessageQueue> + '_ {
        self.waiting.iter().map(|(_, mq, _)| mq)
    }

    pub(crate) fn any(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Forgets the held commits (the consumer closed); returns the final commits' queues.
    pub(crate) fn clear(&mut self) -> Vec<MessageQueue> {
        self.retrying.clear();
        std::mem::take(&mut self.waiting)
            .into_iter()
            .filter(|(retried, ..)| *retried == Retried::Final)
            .map(|(_, mq, _)| mq)
            .collect()
    }
}

impl Consumer {
    /// `mq`'s commit of `offset` (a `retried` kind) to `addr` failed for want of a
    /// connection: it goes again once `addr` takes requests, if the one that failed was not
    /// the retry already; whether it will.
    pub(super) fn retry_commit(
        &mut self,
        now: Instant,
        addr: &str,
        retried: Retried,
        mq: &MessageQueue,
        offset: i64,
    ) -> bool {
        let alive = match retried {
            Retried::Final => self.lifecycle == Lifecycle::Finishing,
            Retried::HandOver => self.lifecycle != Lifecycle::Closed,
        };
        if !alive || !self.commit_retries.hold(retried, mq, offset) {
            return false;
        }
        let at = self.link.down_until(now, addr).unwrap_or(now);
        self.timers.set(at, Timer::CommitRetry);
        if self.lifecycle == Lifecycle::Finishing {
            self.timers
                .reset_later(at + self.config.request_timeout, Timer::ShutdownFinish);
        }
        true
    }

    /// Sends the held commits whose brokers take requests now; the rest wait for theirs.
    pub(super) fn send_commit_retries(&mut self, now: Instant) {
        let ready = self.commit_retries.take_ready(|mq| {
            self.cluster
                .master_addr(mq.broker_name())
                .is_none_or(|addr| self.link.down_until(now, &addr).is_none())
        });
        for (retried, mq, offset) in ready {
            match retried {
                Retried::Final => self.send_final_commit(now, mq, offset),
                Retried::HandOver => match self.master_addr(mq.broker_name()) {
                    Some(addr) => {
                        let command = self.commit_command(&mq, offset);
                        let kind = PendingKind::HandOverCommit(mq, offset);
                        self.request_commit(now, &addr, command, kind);
                    }
                    None => {
                        self.commit_retries.answered(&mq);
                        self.hand_over_commit_ended(now, &mq);
                    }
                },
            }
        }
        let next = self
            .commit_retries
            .waiting()
            .filter_map(|mq| self.cluster.master_addr(mq.broker_name()))
            .filter_map(|addr| self.link.down_until(now, &addr))
            .min();
        if let Some(at) = next {
            self.timers.set(at, Timer::CommitRetry);
        }
    }
}
