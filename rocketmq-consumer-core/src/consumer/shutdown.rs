//! Graceful shutdown after the drain: final commits (each sent once more after a lost
//! connection: `commit_retry`), unregistration, the orderly unlocks once the offsets are
//! stored, and the report.

use std::time::Instant;

use proto::MessageQueue;

use super::{Consumer, Lifecycle, PendingKind};
use crate::config::MessageModel;
use crate::membership;
use crate::output::{Event, Output};
use crate::timer::Timer;

impl Consumer {
    pub(super) fn finish_drain(&mut self, now: Instant) {
        self.lifecycle = Lifecycle::Finishing;
        self.report.abandoned = self.deliveries.abandon_all();
        self.timers.clear();
        let leased = self.needs_lock();
        let queues: Vec<(MessageQueue, i64, bool)> = self
            .queues
            .iter()
            .map(|s| {
                let owned = s.persisted.is_some() && (!leased || s.lease_valid(now));
                (s.mq.clone(), s.commit_point(), owned)
            })
            .collect();
        let broadcasting = self.config.message_model == MessageModel::Broadcasting;
        for (mq, offset, started) in queues {
            if !started {
                continue;
            }
            if broadcasting {
                self.store_offset(now, &mq, offset);
                self.report.committed.push((mq, offset));
                continue;
            }
            self.send_final_commit(now, mq, offset);
        }
        self.flush_local_offsets();
        self.timers
            .set(now + self.config.request_timeout, Timer::ShutdownFinish);
        // Hand-over commits waiting for their retry lost their timer with the others.
        if self.commit_retries.any() {
            self.timers.set(now, Timer::CommitRetry);
        }
    }

    /// `mq`'s final commit of `offset`, to its broker's master (none known: uncommitted).
    pub(super) fn send_final_commit(&mut self, now: Instant, mq: MessageQueue, offset: i64) {
        let Some(addr) = self.master_addr(mq.broker_name()) else {
            self.report.uncommitted.push(mq);
            return;
        };
        let command = self.commit_command(&mq, offset);
        self.request_commit(now, &addr, command, PendingKind::FinalCommit(mq, offset));
    }

    /// Once every final commit is answered: releases the locks and unregisters, and once
    /// those are answered too, closes. Called after each input is handled in full, never from
    /// inside one: a lost connection fails its requests one after the other (and a failed
    /// commit sends the next one held for its broker, which can fail at once), so closing at
    /// the first that left nothing in flight would report before the rest, and send the
    /// unregistrations of a closed consumer.
    pub(super) fn maybe_close(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Finishing {
            return;
        }
        let committing = self.link.any(|p| {
            matches!(
                p.kind,
                PendingKind::FinalCommit(..) | PendingKind::HandOverCommit(..)
            )
        }) || self.commits.any()
            || self.commit_retries.any();
        // Let go only once the final offsets are stored: unregistering makes the brokers tell
        // the other members at once (`NOTIFY_CONSUMER_IDS_CHANGED`), and a member that takes a
        // queue over reads its offset then; orderly, the next owner of a queue could lock it
        // and read an offset that is about to move.
        if !committing && !self.released {
            self.released = true;
            self.unlock_all(now);
            self.unregister_all(now);
        }
        // Held commits wait for the one in flight to their broker, whatever its kind.
        let waiting = committing
            || self
                .link
                .any(|p| matches!(p.kind, PendingKind::Unregister | PendingKind::Unlock));
        if !waiting {
            self.close();
        }
    }

    pub(super) fn close(&mut self) {
        if self.lifecycle == Lifecycle::Closed {
            return;
        }
        // Final commits never answered, or never sent, count as not committed.
        let mut ended = self.link.close_all();
        ended.extend(self.commits.clear());
        let unanswered = ended.into_iter().filter_map(|kind| match kind {
            PendingKind::FinalCommit(mq, _) => Some(mq),
            _ => None,
        });
        self.report.uncommitted.extend(unanswered);
        self.report.uncommitted.extend(self.commit_retries.clear());
        self.timers.clear();
        self.lifecycle = Lifecycle::Closed;
        let mut report = std::mem::take(&mut self.report);
        report.committed.sort();
        report.uncommitted.sort();
        self.outputs.push_back(Output::Event(Event::Closed(report)));
    }

    /// `UNREGISTER_CLIENT` to every broker.
    fn unregister_all(&mut self, now: Instant) {
        for addr in self.cluster.broker_addrs() {
            let command = membership::unregister(&self.client_id, &self.config.group);
            self.request(now, &addr, command, PendingKind::Unregister);
        }
    }
}
