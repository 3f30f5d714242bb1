//! Graceful shutdown after the drain: final commits, unregistration, the orderly unlocks once
//! the offsets are stored, and the report.

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
            let Some(addr) = self.master_addr(mq.broker_name()) else {
                self.report.uncommitted.push(mq);
                continue;
            };
            let command = self.commit_command(&mq, offset);
            self.request_commit(now, &addr, command, PendingKind::FinalCommit(mq, offset));
        }
        self.flush_local_offsets();
        self.timers
            .set(now + self.config.request_timeout, Timer::ShutdownFinish);
        self.maybe_close(now);
    }

    pub(super) fn maybe_close(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Finishing {
            return;
        }
        let committing = self.link.any(|p| {
            matches!(
                p.kind,
                PendingKind::FinalCommit(..) | PendingKind::HandOverCommit(..)
            )
        }) || self.commits.any();
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
