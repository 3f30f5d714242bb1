//! A queue's life between assignment and revoke: its start offset (the committed one, or
//! Java's table for a queue without one), then long-polling pulls under flow control.

use std::time::Instant;

use proto::headers::{GetMaxOffsetRequest, QueryConsumerOffsetRequest, SearchOffsetRequest};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use super::pull_template::PullTemplate;
use super::{Consumer, Epoch, Lifecycle, PendingKind, Phase, QueueKey, RETRY_TOPIC_PREFIX};
use crate::config::{ConsumeFrom, MessageModel};
use crate::output::{Event, FailureReason, Output};
use crate::pull::{self, PullOutcome};
use crate::queue::flow::{self, FlowReason, Limits, Load};
use crate::timer::Timer;

impl Consumer {
    pub(super) fn resolve_offset(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        let group = self.config.group.clone();
        let Some(mq) = self.queues.get(key).map(|s| s.mq.clone()) else {
            return;
        };
        if self.config.message_model == MessageModel::Broadcasting {
            match self.local_offsets.get(&mq) {
                Some(offset) => self.start_queue(now, key, epoch, offset),
                None => self.resolve_without_commit(now, key, epoch),
            }
            return;
        }
        let Some(addr) = self.master_addr(mq.broker_name()) else {
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            return;
        };
        if let Some(state) = self.queues.live_mut(key, epoch) {
            state.phase = Phase::Resolving;
        }
        let header = QueryConsumerOffsetRequest {
            consumer_group: group,
            topic: mq.topic().to_owned(),
            queue_id: mq.queue_id(),
            set_zero_if_not_found: Some(false),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::QUERY_CONSUMER_OFFSET, &header),
            PendingKind::QueryOffset(key, epoch),
        );
    }

    /// The broker answered the queue's committed offset (`None`: it has none). A queue that
    /// was revoked here while its broker was unreachable resumes where it stood when that is
    /// ahead (see [`StrandedOffsets`](super::stranded::StrandedOffsets)), and commits it again.
    pub(super) fn start_from_committed(
        &mut self,
        now: Instant,
        key: QueueKey,
        epoch: Epoch,
        committed: Option<i64>,
    ) {
        let Some(mq) = self.queues.live_mut(key, epoch).map(|s| s.mq.clone()) else {
            self.counters.stale_responses += 1;
            return;
        };
        match (self.stranded.resume(&mq, committed), committed) {
            (Some(offset), _) => {
                self.outputs.push_back(Output::Event(Event::OffsetRestored {
                    queue: mq.clone(),
                    offset,
                    committed,
                }));
                self.start_queue(now, key, epoch, offset);
                if let Some(state) = self.queues.live_mut(key, epoch) {
                    // Repeated by the periodic persist until it moves, as any commit.
                    state.committed_once = true;
                }
                self.commit_oneway(now, &mq, offset);
            }
            (None, Some(offset)) => self.start_queue(now, key, epoch, offset),
            (None, None) => self.resolve_without_commit(now, key, epoch),
        }
    }

    /// Java's table for a queue without a committed offset (`remoting-protocol.md` §7.8).
    pub(super) fn resolve_without_commit(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        let Some(mq) = self.queues.get(key).map(|s| s.mq.clone()) else {
            return;
        };
        let is_retry = mq.topic().starts_with(RETRY_TOPIC_PREFIX);
        let Some(addr) = self.master_addr(mq.broker_name()) else {
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            if let Some(state) = self.queues.live_mut(key, epoch) {
                state.phase = Phase::Resolve;
            }
            return;
        };
        match (self.config.consume_from, is_retry) {
            (ConsumeFrom::First, _) | (ConsumeFrom::Last, true) => {
                self.start_queue(now, key, epoch, 0);
            }
            (ConsumeFrom::Last, false) | (ConsumeFrom::Timestamp(_), true) => {
                let header = GetMaxOffsetRequest {
                    topic: mq.topic().to_owned(),
                    queue_id: mq.queue_id(),
                    committed: Some(true),
                };
                let request = Command::request(RequestCode::GET_MAX_OFFSET, &header);
                self.request(now, &addr, request, PendingKind::MaxOffset(key, epoch));
            }
            (ConsumeFrom::Timestamp(ms), false) => {
                let request = search_offset_command(&mq, ms);
                self.request(now, &addr, request, PendingKind::SearchOffset(key, epoch));
            }
        }
    }

    pub(super) fn start_queue(&mut self, now: Instant, key: QueueKey, epoch: Epoch, offset: i64) {
        let Some(state) = self.queues.live_mut(key, epoch) else {
            self.counters.stale_responses += 1;
            return;
        };
        if state.phase != Phase::Resolving && state.phase != Phase::Resolve {
            return;
        }
        state.phase = Phase::Idle;
        let queue = state.mq.clone();
        self.queues.restart_at(key, offset);
        self.outputs
            .push_back(Output::Event(Event::QueueStarted { queue, offset }));
        self.try_pull(now, key, epoch);
    }

    // ----- pulling -----

    pub(super) fn on_pull_timer(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        let Some(state) = self.queues.live_mut(key, epoch) else {
            return;
        };
        match state.phase {
            Phase::Resolve => self.resolve_offset(now, key, epoch),
            Phase::Idle => self.try_pull(now, key, epoch),
            Phase::Lock | Phase::Resolving | Phase::Pulling | Phase::Revoking => {}
        }
    }

    /// Wherever the cache may have shrunk (after every input, and after a poll-mode take): if
    /// the consumer-wide cache has room again (see `cache_room`), the queues waiting for it
    /// pull, oldest first, one for each pull batch of room (at least one).
    pub(super) fn pull_into_room(&mut self, now: Instant) {
        if self.cache_room.is_empty() {
            return;
        }
        let (messages, bytes) = self.queues.cached();
        let config = &self.config;
        if messages > config.max_cached_messages_total || bytes > config.max_cached_bytes_total {
            return;
        }
        let batch = usize::try_from(config.pull_batch_size).unwrap_or(1).max(1);
        let room = (config.max_cached_messages_total - messages) / batch;
        for (key, epoch) in self.cache_room.take(room.max(1)) {
            self.try_pull(now, key, epoch);
        }
    }

    pub(super) fn try_pull(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let limits = self.limits_for(key);
        let (total_messages, total_bytes) = self.queues.cached();
        // One lookup for the whole pull: the checks below read other fields of `self`.
        let Some(state) = self.queues.get_mut(key) else {
            return;
        };
        if state.epoch != epoch || state.phase != Phase::Idle {
            return;
        }
        // A paused queue waits for `resume`, which pulls it again.
        if !self.paused.is_empty() && self.paused.contains(&state.mq) {
            return;
        }
        let mq = &state.mq;
        let load = Load {
            queue_messages: state.pq().len(),
            queue_bytes: state.pq().bytes(),
            span: state.pq().span(),
            total_messages,
            total_bytes,
        };
        if let Err(reason) = flow::decide(load, limits) {
            self.counters.flow_control_pauses += 1;
            if matches!(reason, FlowReason::TotalMessages | FlowReason::TotalBytes) {
                self.cache_room.wait(key, epoch);
            }
            self.timers.set(
                now + self.config.flow_control_backoff,
                Timer::Pull(key, epoch),
            );
            return;
        }
        // A rate-limited queue caching one second of its limit need not pull more: the cache
        // would only grow (the rate-limit requests, apache/rocketmq#8302, want the pulls to
        // slow down with the consumption). Flow control with the limit's threshold.
        if self.rate.is_active()
            && let Some((messages, bytes)) = self.rate.cache_cap(mq.topic())
            && (state.pq().len() >= messages || bytes.is_some_and(|b| state.pq().bytes() >= b))
        {
            self.counters.rate_limit_pull_pauses += 1;
            self.timers.reset_earlier(
                now + self.config.flow_control_backoff,
                Timer::Pull(key, epoch),
            );
            return;
        }
        let offset = state.next_offset;
        let broker_id = state.pull_broker_id;
        let sub_version = self
            .subscriptions
            .get(mq.topic())
            .map_or(0, |s| s.sub_version);
        let Some(addr) = self.cluster.pull_addr(mq.broker_name(), broker_id) else {
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            return;
        };
        state.phase = Phase::Pulling;
        let config = &self.config;
        let pull = state
            .pull_template
            .get_or_insert_with(|| PullTemplate::new(config, &state.mq))
            .request(offset, sub_version);
        self.request(now, &addr, pull, PendingKind::Pull { key, epoch, offset });
    }

    pub(super) fn on_pull(
        &mut self,
        now: Instant,
        addr: &str,
        key: QueueKey,
        epoch: Epoch,
        offset: i64,
        response: Command,
    ) {
        let Some(state) = self
            .queues
            .get_mut(key)
            .filter(|s| s.epoch == epoch && s.phase == Phase::Pulling)
        else {
            self.counters.stale_responses += 1;
            return;
        };
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let subscription = self.subscriptions.get(state.mq.topic());
        let retry_now = response.response_code() == ResponseCode::PULL_RETRY_IMMEDIATELY;
        let outcome = pull::interpret(&response, offset, subscription, &self.retry_topic);
        let mq = state.mq.clone();
        state.phase = Phase::Idle;
        match outcome {
            PullOutcome::Found {
                messages,
                next_offset,
                max_offset,
                suggested_broker,
                corrupt,
            } => {
                let messages_len = messages.len();
                state.next_offset = next_offset;
                state.max_offset = max_offset;
                state.pull_broker_id = suggested_broker;
                self.queues.change_cache(key, |pq| {
                    if messages.is_empty() {
                        // Java's correctTagsOffset: with nothing cached, the offset may move on.
                        pq.advance_empty(next_offset);
                    } else {
                        pq.put(messages);
                    }
                });
                if let Some((error, _)) = corrupt {
                    // Said once: a record that never decodes is re-pulled every `pull_backoff`,
                    // and the queue's stats carry the error for as long as it stays stuck.
                    let first = self.queues.get_mut(key).is_some_and(|s| {
                        let at = s.next_offset;
                        let before = s.stuck.replace((at, error.clone()));
                        before.is_none_or(|(offset, _)| offset != at)
                    });
                    if first {
                        self.outputs
                            .push_back(Output::Event(Event::CorruptMessages { queue: mq, error }));
                    }
                    self.timers
                        .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
                } else if retry_now && messages_len == 0 && next_offset == offset {
                    // "Retry immediately" without moving on is what a slave answers for an
                    // offset it does not hold yet: it corrects no offsets and turns a master's
                    // PULL_OFFSET_MOVED into PULL_RETRY_IMMEDIATELY at the request's offset
                    // (4.9 `PullMessageProcessor`, `DefaultMessageStore.nextOffsetCorrection`),
                    // so a consumer ahead of a lagging slave whose master is gone would get the
                    // same answer at once, for as long as the master stays away (Java's pull
                    // callback spins on it). Ask again after the pull backoff instead.
                    self.timers
                        .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
                } else {
                    if let Some(state) = self.queues.get_mut(key) {
                        state.stuck = None;
                    }
                    self.pull_next(now, key, epoch);
                }
            }
            PullOutcome::OffsetMoved { next_offset } => {
                self.outputs.push_back(Output::Event(Event::OffsetMoved {
                    queue: mq.clone(),
                    from: offset,
                    to: next_offset,
                }));
                // Java drops the process queue, persists the corrected offset and lets the next
                // rebalance add the queue again; re-creating it here at the corrected offset is
                // the same without waiting for a rebalance or racing the oneway commit.
                let lease = self.queues.remove(key).and_then(|s| s.lease);
                self.store_offset(now, &mq, next_offset);
                let (key, epoch) = self.insert_queue(mq, Some(next_offset), lease);
                self.try_pull(now, key, epoch);
            }
            PullOutcome::BrokerBusy => {
                self.timers.set(
                    now + self.config.broker_flow_control_backoff,
                    Timer::Pull(key, epoch),
                );
            }
            PullOutcome::Failed { code, remark } => {
                if matches!(
                    code,
                    ResponseCode::SUBSCRIPTION_NOT_EXIST | ResponseCode::SUBSCRIPTION_NOT_LATEST
                ) {
                    self.heartbeat(now);
                    // Once per queue: a broker that keeps refusing while no heartbeat works
                    // does not grow the list.
                    let waiting = (addr.to_owned(), key, epoch);
                    if code == ResponseCode::SUBSCRIPTION_NOT_EXIST
                        && !self.awaiting_heartbeat.contains(&waiting)
                    {
                        self.awaiting_heartbeat.push(waiting);
                    }
                }
                self.failed(addr, "PULL_MESSAGE", FailureReason::Refused(code, remark));
                self.timers
                    .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            }
        }
    }

    pub(super) fn pull_next(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        if self.config.pull_interval.is_zero() {
            self.try_pull(now, key, epoch);
        } else {
            self.timers
                .set(now + self.config.pull_interval, Timer::Pull(key, epoch));
        }
    }

    pub(super) fn limits_for(&self, key: QueueKey) -> Limits {
        let c = &self.config;
        let topic_limits =
            c.max_cached_messages_per_topic.is_some() || c.max_cached_bytes_per_topic.is_some();
        // Counting a topic's queues is a scan: only pay it when per-topic limits are set.
        let queues_of_topic = if topic_limits {
            let topic = self
                .queues
                .get(key)
                .map(|s| s.mq.topic())
                .unwrap_or_default();
            self.queues.iter().filter(|s| s.mq.topic() == topic).count()
        } else {
            0
        };
        let queue_messages = match c.max_cached_messages_per_topic {
            Some(limit) => (flow::per_queue_share(limit as u64, queues_of_topic) as usize)
                .min(c.max_cached_messages_per_queue),
            None => c.max_cached_messages_per_queue,
        };
        let queue_bytes = match c.max_cached_bytes_per_topic {
            Some(limit) => {
                flow::per_queue_share(limit, queues_of_topic).min(c.max_cached_bytes_per_queue)
            }
            None => c.max_cached_bytes_per_queue,
        };
        Limits {
            queue_messages,
            queue_bytes,
            span: c.max_offset_span,
            total_messages: c.max_cached_messages_total,
            total_bytes: c.max_cached_bytes_total,
        }
    }
}

/// `SEARCH_OFFSET_BY_TIMESTAMP`: the first offset of `mq` stored at or after `unix_ms`.
pub(super) fn search_offset_command(mq: &MessageQueue, unix_ms: i64) -> Command {
    let header = SearchOffsetRequest {
        topic: mq.topic().to_owned(),
        queue_id: mq.queue_id(),
        timestamp: unix_ms,
        boundary_type: None,
    };
    Command::request(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &header)
}
