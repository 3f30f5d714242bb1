//! Poll mode (Java's lite pull consumer) and the offset controls that go with it: taking
//! messages, assigning queues by hand, seeking, pausing, committing, and looking up an
//! offset by time. Broadcasting's local offsets come in through [`Consumer::load_offsets`].
//!
//! Pulled messages wait in the per-queue caches until taken, so a slow reader stops the pulls
//! through the same flow control as a slow handler: nothing buffers without bound.

use std::collections::BTreeSet;
use std::time::Instant;

use proto::headers::{GetMaxOffsetRequest, GetMinOffsetRequest};
use proto::{Command, MessageQueue, RequestCode};

use super::pulling::search_offset_command;
use super::rate_hold::RateHold;
use super::{Consumer, Lifecycle, PendingKind, Phase};
use crate::config::{ConfigError, ConsumeMode, MessageModel};
use crate::output::{Event, FailureReason, Output, Polled, RequestId};

impl Consumer {
    /// Poll mode: takes up to `max` ready messages of one queue (queues take turns), which
    /// count as consumed from now on. `None` when nothing is ready.
    pub fn poll_messages(&mut self, now: Instant, max: usize) -> Option<Polled> {
        if self.config.consume_mode != ConsumeMode::Poll
            || self.lifecycle != Lifecycle::Running
            || max == 0
        {
            return None;
        }
        let mut held = RateHold::default();
        loop {
            if held.consumer_wide(&self.rate, now) {
                self.rate_hold_ends(held);
                return None;
            }
            let Some(key) = self.queues.next_turn() else {
                self.rate_hold_ends(held);
                return None;
            };
            if held.topic_of(&self.rate, &self.queues, now, key) {
                if held.went_round(key) {
                    self.rate_hold_ends(held);
                    return None;
                }
                continue;
            }
            let Some(state) = self.queues.get(key) else {
                continue;
            };
            if state.phase == Phase::Revoking
                || (!self.paused.is_empty() && self.paused.contains(&state.mq))
            {
                self.queues.not_ready(key);
                continue;
            }
            let (queue, epoch) = (state.mq.clone(), state.epoch);
            let messages = self
                .queues
                .change_cache(key, |pq| {
                    let messages = pq.take_ready(max);
                    let offsets: Vec<i64> = messages.iter().map(|m| m.queue_offset()).collect();
                    pq.ack(&offsets);
                    messages.into_vec()
                })
                .unwrap_or_default();
            self.after_queue_change(now, key);
            if messages.is_empty() {
                continue;
            }
            held.handed_out(&mut self.rate, now, &queue, &messages);
            self.rate_hold_ends(held);
            self.counters.delivered += 1;
            self.counters.delivered_messages += messages.len() as u64;
            // Room in the cache again: pull now rather than at the next flow-control check.
            self.try_pull(now, key, epoch);
            let polled = Polled {
                queue,
                messages,
                epoch,
            };
            return Some(match &self.namespace {
                Some(ns) => ns.unwrap_polled(polled),
                None => polled,
            });
        }
    }

    /// Poll mode: hands back messages taken with [`Consumer::poll_messages`] that the reader
    /// did not get to (the tail of a batch). They go back to the front of their queue's cache,
    /// to be taken again first, and no longer count as consumed: the committable offset moves
    /// back to the first of them. Nothing is pulled again.
    ///
    /// Returns false, dropping them, when the queue was revoked, moved (`seek`, a reset) or
    /// restarted since they were taken (its position is someone else's business then), when
    /// they are not the tail of what was taken, or once shutdown has begun.
    pub fn unread(&mut self, now: Instant, polled: Polled) -> bool {
        let polled = match &self.namespace {
            Some(ns) => ns.wrap_polled(polled),
            None => polled,
        };
        let Polled {
            queue,
            messages,
            epoch,
        } = polled;
        let Some(state) = self.queues.by_queue(&queue) else {
            return false;
        };
        let key = state.key;
        if self.config.consume_mode != ConsumeMode::Poll
            || self.lifecycle != Lifecycle::Running
            || state.epoch != epoch
            || state.phase == Phase::Revoking
        {
            return false;
        }
        if self.queues.change_cache(key, |pq| pq.unread(messages)) != Some(true) {
            return false;
        }
        self.after_queue_change(now, key);
        self.after_input(now);
        true
    }

    /// Poll mode: consume exactly `queues` (assign mode), without rebalancing them. Topics
    /// not subscribed are subscribed with `*`, so brokers know the group reads them.
    pub fn assign(
        &mut self,
        now: Instant,
        queues: impl IntoIterator<Item = MessageQueue>,
    ) -> Result<(), ConfigError> {
        let mut by_topic: std::collections::BTreeMap<String, BTreeSet<MessageQueue>> =
            std::collections::BTreeMap::new();
        for mq in queues {
            let mq = self.inward_queue(&mq).into_owned();
            by_topic
                .entry(mq.topic().to_owned())
                .or_default()
                .insert(mq);
        }
        for topic in by_topic.keys() {
            if !self.subscriptions.contains_key(topic) {
                self.subscribe(now, topic, "*")?;
            }
        }
        // Topics assigned before and not now keep no queues.
        for topic in self.assigned.keys() {
            by_topic.entry(topic.clone()).or_default();
        }
        self.assigned = by_topic;
        self.rebalance(now);
        self.after_input(now);
        Ok(())
    }

    /// Moves owned queue `mq` to `offset`: what is cached is dropped, pulling restarts there,
    /// and the offset is stored as consumed up to there.
    pub fn seek(
        &mut self,
        now: Instant,
        mq: &MessageQueue,
        offset: i64,
    ) -> Result<(), ConfigError> {
        let mq = &*self.inward_queue(mq);
        if offset < 0 || !self.reset_queue(now, mq, offset) {
            return Err(ConfigError(format!(
                "cannot seek {mq:?} to {offset}: not an owned, started queue"
            )));
        }
        self.flush_local_offsets();
        self.after_input(now);
        Ok(())
    }

    /// Moves owned queue `mq` to its first (`to_end` false) or next-to-be-written offset, once
    /// the broker says where that is. Always answered, by the request timeout at the latest:
    /// [`Event::SeekDone`] with the returned id (and, when it moved, [`Event::OffsetReset`]
    /// for the queue).
    pub fn seek_to_edge(
        &mut self,
        now: Instant,
        mq: &MessageQueue,
        to_end: bool,
    ) -> Result<RequestId, ConfigError> {
        let mq = &*self.inward_queue(mq);
        let target = self.queues.by_queue(mq).map(|s| (s.key, s.epoch));
        let (Some((key, epoch)), Some(addr)) = (target, self.master_addr(mq.broker_name())) else {
            return Err(ConfigError(format!(
                "cannot seek {mq:?}: not an owned queue"
            )));
        };
        let request = if to_end {
            let header = GetMaxOffsetRequest {
                topic: mq.topic().to_owned(),
                queue_id: mq.queue_id(),
                committed: Some(true),
            };
            Command::request(RequestCode::GET_MAX_OFFSET, &header)
        } else {
            let header = GetMinOffsetRequest {
                topic: mq.topic().to_owned(),
                queue_id: mq.queue_id(),
            };
            Command::request(RequestCode::GET_MIN_OFFSET, &header)
        };
        let id = self.app_answers.next_id();
        let kind = PendingKind::SeekBound {
            request: id,
            key,
            epoch,
        };
        self.request(now, &addr, request, kind);
        self.after_input(now);
        Ok(id)
    }

    /// Stops pulling and handing out `mq` until [`Consumer::resume`], in every mode: a push
    /// consumer delivers nothing more from it (deliveries already out finish as usual), a poll
    /// consumer hands none out; what is cached stays. The pause is by queue, so it outlasts
    /// rebalances that keep the queue, and applies to a queue assigned later.
    pub fn pause(&mut self, mq: &MessageQueue) {
        let mq = self.inward_queue(mq).into_owned();
        self.paused.insert(mq);
    }

    /// Pulls and hands out (delivers) `mq` again.
    pub fn resume(&mut self, now: Instant, mq: &MessageQueue) {
        let mq = &*self.inward_queue(mq);
        if !self.paused.remove(mq) {
            return;
        }
        if let Some(state) = self.queues.by_queue(mq) {
            let (key, epoch) = (state.key, state.epoch);
            if state.pq().has_ready() {
                self.queues.mark_ready(key);
            }
            self.try_pull(now, key, epoch);
        }
        self.after_input(now);
    }

    /// Stores the consumed position of every started queue now: clustering asks the brokers,
    /// broadcasting hands the table to the driver ([`Output::StoreOffsets`]). Answered with
    /// [`Event::CommitDone`] for the returned id once every queue is (broadcasting, and a
    /// consumer with no started queue: at once); a queue not started yet has nothing to
    /// commit and is in neither of its lists.
    pub fn commit(&mut self, now: Instant) -> RequestId {
        let id = self.app_answers.next_id();
        let mut stored = Vec::new();
        if self.lifecycle == Lifecycle::Running {
            for state in self.queues.iter_mut() {
                if state.persisted.is_none() || state.phase == Phase::Revoking {
                    continue;
                }
                let offset = state.pq().committable();
                if state.manual_commit.is_some() {
                    state.manual_commit = Some(offset);
                }
                state.persisted = Some(offset);
                state.committed_once = true;
                stored.push((state.mq.clone(), offset));
            }
        }
        if self.config.message_model == MessageModel::Broadcasting || stored.is_empty() {
            for (mq, offset) in &stored {
                self.store_offset(now, mq, *offset);
            }
            self.flush_local_offsets();
            self.outputs.push_back(Output::Event(Event::CommitDone {
                request: id,
                committed: stored,
                unconfirmed: Vec::new(),
            }));
            return id;
        }
        let queues: Vec<MessageQueue> = stored.iter().map(|(mq, _)| mq.clone()).collect();
        // Answers may come back synchronously (no connection at all), so the tally first.
        let done = self.app_answers.expect_commit(id, queues);
        debug_assert!(done.is_none(), "a tally of started queues waits for them");
        for (queue, offset) in stored {
            let command = self.commit_command(&queue, offset);
            match self.master_addr(queue.broker_name()) {
                Some(addr) => {
                    let kind = PendingKind::Commit {
                        request: id,
                        queue,
                        offset,
                    };
                    self.request_commit(now, &addr, command, kind);
                }
                None => {
                    self.failed("", "UPDATE_CONSUMER_OFFSET", FailureReason::Disconnected);
                    self.commit_answered(id, queue, None);
                }
            }
        }
        self.after_input(now);
        id
    }

    /// One queue of application commit `request` was answered (`None`: not confirmed).
    pub(super) fn commit_answered(
        &mut self,
        request: RequestId,
        queue: MessageQueue,
        confirmed: Option<i64>,
    ) {
        if let Some(done) = self.app_answers.commit_answered(request, queue, confirmed) {
            self.outputs.push_back(Output::Event(done));
        }
    }

    /// Asks the broker for the first offset of `mq` stored at or after `unix_ms`; the answer
    /// comes as [`Event::OffsetForTimestamp`] carrying the returned id.
    pub fn offset_for_timestamp(
        &mut self,
        now: Instant,
        mq: &MessageQueue,
        unix_ms: i64,
    ) -> RequestId {
        let mq = &*self.inward_queue(mq);
        let request = self.app_answers.next_id();
        let command = search_offset_command(mq, unix_ms);
        match self.master_addr(mq.broker_name()) {
            Some(addr) => {
                self.request(
                    now,
                    &addr,
                    command,
                    PendingKind::Search(request, mq.clone()),
                );
            }
            None => self
                .outputs
                .push_back(Output::Event(Event::OffsetForTimestamp {
                    request,
                    queue: mq.clone(),
                    offset: Err(FailureReason::Disconnected),
                })),
        }
        request
    }

    /// Broadcasting: the offsets stored at the last run (see [`Output::StoreOffsets`]); call
    /// before the first input. Queues found here start at their offset, others as
    /// `consume_from` says.
    pub fn load_offsets(&mut self, offsets: impl IntoIterator<Item = (MessageQueue, i64)>) {
        for (mq, offset) in offsets {
            if offset >= 0 {
                self.local_offsets.load(mq, offset);
            }
        }
    }
}
