//! Committing offsets: the periodic persist of every started queue, the commits that follow
//! acknowledgements, the oneway commit on the broker (clustering) or in the local table
//! (broadcasting), and confirmed commits.
//!
//! A running queue's commits (periodic or after acknowledgements) are confirmed requests, one
//! per queue in flight, and go one at a time per broker with every other confirmed commit
//! (`request_commit`): the broker stores them in the order sent. Sent oneway, a commit could
//! be stored after a later one (Apache's brokers handle `UPDATE_CONSUMER_OFFSET` on a pool of
//! threads) and take the group back, and a revoked queue's final commit, which its next owner
//! reads, could be overwritten by an older periodic one.

use std::time::Instant;

use proto::headers::UpdateConsumerOffsetRequest;
use proto::{Command, MessageQueue, RequestCode};

use super::{Consumer, Epoch, Lifecycle, PendingKind, Phase, QueueKey};
use crate::config::MessageModel;
use crate::output::Output;
use crate::timer::Timer;

impl Consumer {
    /// Every `persist_interval`: the offset of every started queue, moved or not, as Java's
    /// `RemoteBrokerOffsetStore.persistAll` sends its whole table. Sending an unchanged offset
    /// again repairs one the broker lost or overwrote: a first commit lost in Apache 4.9's
    /// offset-map race (see `request_commit`), or one a broker restart lost.
    pub(super) fn persist_offsets(&mut self, now: Instant) {
        self.commit_moved(now, true);
    }

    /// Acknowledgements moved queue offsets: they are committed within `ack_commit_interval`
    /// (one timer for all queues).
    pub(super) fn acknowledged(&mut self, now: Instant) {
        let interval = self.config.ack_commit_interval;
        // Shutting down, the final commits follow the drain.
        // Set once until it fires: `now` only grows, so a later acknowledgement could not
        // move it earlier anyway (and this runs at every delivery: no scan of the timers).
        if !interval.is_zero()
            && !self.ack_commit_armed
            && self.config.message_model == MessageModel::Clustering
            && self.lifecycle == Lifecycle::Running
        {
            self.ack_commit_armed = true;
            self.timers.set(now + interval, Timer::AckCommit);
        }
    }

    /// Commits every started queue whose offset moved since its last commit (and, `again`,
    /// the unmoved ones committed before), except those whose last commit is still on its way.
    pub(super) fn commit_moved(&mut self, now: Instant, again: bool) {
        let clustering = self.config.message_model == MessageModel::Clustering;
        let mut due = Vec::new();
        for state in self.queues.iter_mut() {
            let offset = state.commit_point();
            let moved = state.persisted.is_none_or(|p| offset > p);
            let repeat = again && state.committed_once && state.persisted == Some(offset);
            if matches!(state.phase, Phase::Idle | Phase::Pulling)
                && (moved || repeat)
                && !state.committing
            {
                state.persisted = Some(offset);
                state.committed_once = true;
                state.committing = clustering;
                due.push((state.key, state.epoch, state.mq.clone(), offset));
            }
        }
        for (key, epoch, mq, offset) in due {
            if !clustering {
                self.local_offsets.record(&mq, offset);
                continue;
            }
            let Some(addr) = self.master_addr(mq.broker_name()) else {
                self.commit_ended(now, key, epoch);
                continue;
            };
            let command = self.commit_command(&mq, offset);
            self.request_commit(now, &addr, command, PendingKind::Persist(key, epoch));
        }
        self.flush_local_offsets();
    }

    /// Queue life `(key, epoch)`'s commit was answered or failed (the next periodic persist
    /// sends it again): the next may go, at once if acknowledgements moved the offset
    /// meanwhile.
    pub(super) fn commit_ended(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        let Some(state) = self.queues.live_mut(key, epoch) else {
            return;
        };
        state.committing = false;
        if state.persisted.is_some_and(|p| state.commit_point() > p) {
            self.acknowledged(now);
        }
    }

    /// Records `offset` as the group's next offset of `mq`: on the broker (clustering, oneway)
    /// or in the local table (broadcasting, handed out at the next `flush_local_offsets`).
    pub(super) fn store_offset(&mut self, now: Instant, mq: &MessageQueue, offset: i64) {
        if self.config.message_model == MessageModel::Broadcasting {
            self.local_offsets.record(mq, offset);
        } else {
            self.commit_oneway(now, mq, offset);
        }
    }

    /// Broadcasting: hands the local offset table to the driver when it changed.
    pub(super) fn flush_local_offsets(&mut self) {
        if let Some(table) = self.local_offsets.take_changed() {
            self.outputs.push_back(Output::StoreOffsets(table));
        }
    }

    /// Sends a confirmed commit to `addr`, or holds it behind the one in flight there (see
    /// [`HeldCommits::hold`](super::requests::HeldCommits::hold)).
    pub(super) fn request_commit(
        &mut self,
        now: Instant,
        addr: &str,
        command: Command,
        kind: PendingKind,
    ) {
        let in_flight = self.link.any(|p| p.addr == addr && p.kind.is_commit());
        if let Some((command, kind)) = self.commits.hold(addr, command, kind, in_flight) {
            self.request(now, addr, command, kind);
        }
    }

    /// The commit in flight to `addr` was answered or failed: sends the next one held.
    pub(super) fn send_next_commit(&mut self, now: Instant, addr: &str) {
        if let Some((command, kind)) = self.commits.next(addr) {
            self.request(now, addr, command, kind);
            // Shutting down, a final commit held behind another (one a broker was slow to
            // answer, or never did) gets its own `request_timeout` from when it goes out, not
            // what was left of the one that began at the drain's end.
            if self.lifecycle == Lifecycle::Finishing {
                self.timers
                    .reset_later(now + self.config.request_timeout, Timer::ShutdownFinish);
            }
        }
    }

    pub(super) fn commit_oneway(&mut self, now: Instant, mq: &MessageQueue, offset: i64) {
        let Some(addr) = self.master_addr(mq.broker_name()) else {
            return;
        };
        let command = self.commit_command(mq, offset);
        self.oneway(now, &addr, command);
    }

    /// `UPDATE_CONSUMER_OFFSET` storing `offset` for the group on `mq`.
    pub(super) fn commit_command(&self, mq: &MessageQueue, offset: i64) -> Command {
        let header = UpdateConsumerOffsetRequest {
            consumer_group: self.config.group.clone(),
            topic: mq.topic().to_owned(),
            queue_id: mq.queue_id(),
            commit_offset: offset,
        };
        Command::request(RequestCode::UPDATE_CONSUMER_OFFSET, &header)
    }
}
