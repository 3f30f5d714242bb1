//! Committing offsets: the periodic persist of every started queue, the oneway commit on the
//! broker (clustering) or in the local table (broadcasting), and confirmed commits.

use std::time::Instant;

use proto::headers::UpdateConsumerOffsetRequest;
use proto::{Command, MessageQueue, RequestCode};

use super::{Consumer, PendingKind, Phase};
use crate::config::MessageModel;
use crate::output::Output;

impl Consumer {
    /// Every `persist_interval`: the offset of every started queue, moved or not, as Java's
    /// `RemoteBrokerOffsetStore.persistAll` sends its whole table. Sending an unchanged offset
    /// again repairs one the broker lost or overwrote: a first commit lost in Apache 4.9's
    /// offset-map race (see `request_commit`), or a later commit overwritten by an earlier
    /// oneway one that another of the broker's threads handled after it (pulls carry no
    /// commit: see `pulling.rs`).
    pub(super) fn persist_offsets(&mut self, now: Instant) {
        let mut due = Vec::new();
        for state in self.queues.iter_mut() {
            let offset = state.commit_point();
            let moved = state.persisted.is_none_or(|p| offset > p);
            let again = state.committed_once && state.persisted == Some(offset);
            if matches!(state.phase, Phase::Idle | Phase::Pulling) && (moved || again) {
                state.persisted = Some(offset);
                state.committed_once = true;
                due.push((state.mq.clone(), offset));
            }
        }
        for (mq, offset) in due {
            self.store_offset(now, &mq, offset);
        }
        self.flush_local_offsets();
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
