//! How each request ends: one match over the request kinds, each arm deciding what an answer
//! means and what a failure costs (`Consumer::answer`).

use std::time::Instant;

use proto::body::{ConsumerListBody, LockBatchResponseBody, TopicRouteData};
use proto::headers::{GetMaxOffsetResponse, QueryConsumerOffsetResponse, SearchOffsetResponse};
use proto::{Command, ResponseCode};

use super::commit_retry::Retried;
use super::lease::LockFailure;
use super::{Consumer, Epoch, Pending, PendingKind, Phase, QueueKey};
use crate::config::MessageModel;
use crate::output::{Event, FailureReason, Output};
use crate::timer::Timer;

impl Consumer {
    /// The one way a request ends: its answer, or why there is none (a timeout, a lost
    /// connection, no connection at all). Each kind decides in one place what an answer means
    /// and what a failure costs; a failure is also reported as [`Event::RequestFailed`].
    pub(super) fn answer(
        &mut self,
        now: Instant,
        pending: Pending,
        answer: Result<Command, FailureReason>,
    ) {
        if pending.kind.is_commit() {
            self.send_next_commit(now, &pending.addr);
        }
        if let Ok(response) = &answer {
            self.note_access(&pending, response);
        }
        let Pending {
            addr, kind, sent, ..
        } = pending;
        let name = kind.name();
        match kind {
            PendingKind::Route(topic) => match answer.and_then(route_of) {
                Ok(route) => self.on_route(now, &topic, route),
                Err(reason) => {
                    self.failed(&addr, name, reason);
                    self.cluster.name_server_failed(&addr);
                    self.timers
                        .reset(now + self.config.rebalance_retry, Timer::RouteRefresh);
                }
            },
            PendingKind::Heartbeat => match answer.and_then(success) {
                Ok(_) => {
                    // The broker knows the group now: pull what it refused before.
                    let (ready, waiting) = std::mem::take(&mut self.awaiting_heartbeat)
                        .into_iter()
                        .partition(|(at, ..)| *at == addr);
                    self.awaiting_heartbeat = waiting;
                    for (_, key, epoch) in ready {
                        self.timers.set(now, Timer::Pull(key, epoch));
                    }
                    if self.rebalance_after_heartbeat {
                        self.rebalance_after_heartbeat = false;
                        self.rebalance(now);
                    }
                }
                Err(reason) => {
                    self.failed(&addr, name, reason);
                    // No heartbeat has worked yet, so the first rebalance still waits for one:
                    // try again after `rebalance_retry`, not a whole `heartbeat_interval` (or
                    // the next periodic rebalance, 20 s) later.
                    if self.rebalance_after_heartbeat {
                        self.timers
                            .reset_earlier(now + self.config.rebalance_retry, Timer::Heartbeat);
                    }
                }
            },
            PendingKind::ConsumerList(topic) => {
                let list = answer.and_then(success).and_then(|r| {
                    ConsumerListBody::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match list {
                    Ok(list) => self.apply_rebalance(now, &topic, &list.consumer_id_list),
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.timers
                            .reset(now + self.config.rebalance_retry, Timer::Rebalance);
                    }
                }
            }
            PendingKind::QueryOffset(key, epoch) => {
                let offset = answer.and_then(|r| match r.response_code() {
                    // No committed offset: a new group (`RebalancePushImpl.computePullFromWhere`).
                    ResponseCode::QUERY_NOT_FOUND => Ok(None),
                    _ => offset_of::<QueryConsumerOffsetResponse>(r, |h| h.offset).map(Some),
                });
                match offset {
                    Ok(committed) => self.start_from_committed(now, key, epoch, committed),
                    Err(reason) => self.resolve_failed(now, &addr, name, key, epoch, reason),
                }
            }
            PendingKind::MaxOffset(key, epoch) => {
                match answer.and_then(|r| offset_of::<GetMaxOffsetResponse>(r, |h| h.offset)) {
                    Ok(offset) => self.start_queue(now, key, epoch, offset),
                    Err(reason) => self.resolve_failed(now, &addr, name, key, epoch, reason),
                }
            }
            PendingKind::SearchOffset(key, epoch) => {
                match answer.and_then(|r| offset_of::<SearchOffsetResponse>(r, |h| h.offset)) {
                    Ok(offset) => self.start_queue(now, key, epoch, offset),
                    Err(reason) => self.resolve_failed(now, &addr, name, key, epoch, reason),
                }
            }
            PendingKind::Pull { key, epoch, offset } => {
                self.counters.pulls += 1;
                match answer {
                    Ok(response) => {
                        let took = now.saturating_duration_since(sent);
                        self.counters.pull_time += took;
                        if let Some(state) = self.queues.live_mut(key, epoch) {
                            state.last_pull = Some(now);
                            // Messages were waiting when it left (as far as the last answer
                            // told): the broker answered at once, without suspending it.
                            if offset < state.max_offset {
                                self.counters.pull_latency.record(took);
                            }
                        }
                        self.on_pull(now, &addr, key, epoch, offset, response)
                    }
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        if let Some(state) = self.queues.live_mut(key, epoch) {
                            if state.phase == Phase::Pulling {
                                state.phase = Phase::Idle;
                            }
                            self.timers
                                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
                        }
                    }
                }
            }
            PendingKind::FinalCommit(mq, offset) => {
                // A refusal is reported in the shutdown report, not as a failed request.
                match answer {
                    Ok(r) if r.response_code() == ResponseCode::SUCCESS => {
                        self.commit_retries.answered(&mq);
                        self.report.committed.push((mq, offset))
                    }
                    Ok(_) => self.report.uncommitted.push(mq),
                    Err(reason) => {
                        let lost = reason == FailureReason::Disconnected;
                        self.failed(&addr, name, reason);
                        if !(lost && self.retry_commit(now, &addr, Retried::Final, &mq, offset)) {
                            self.report.uncommitted.push(mq);
                        }
                    }
                }
            }
            PendingKind::Persist(key, epoch) => {
                // Not stored: the next periodic persist sends it again.
                if let Err(reason) = answer.and_then(success) {
                    self.failed(&addr, name, reason);
                }
                self.commit_ended(now, key, epoch);
            }
            PendingKind::HandOverCommit(mq, offset) => {
                match answer.and_then(success) {
                    Ok(_) => self.commit_retries.answered(&mq),
                    Err(reason) => {
                        // Lost with its connection: the lock waits for one more try.
                        let lost = reason == FailureReason::Disconnected;
                        self.failed(&addr, name, reason);
                        if lost && self.retry_commit(now, &addr, Retried::HandOver, &mq, offset) {
                            return;
                        }
                        if lost && self.config.message_model == MessageModel::Clustering {
                            // Its broker stayed away (a crash, say): kept, so a broker that
                            // lost the commits it had not written does not send us back,
                            // should the queue be ours again (`stranded`).
                            self.stranded.strand(mq.clone(), offset);
                        }
                    }
                }
                // Not stored after all: the lock goes all the same (the next owner starts
                // from the broker's older offset, as after any lost commit); holding it would
                // only stall the queue until the broker's lock expires, 60 s.
                self.hand_over_commit_ended(now, &mq);
            }
            PendingKind::Unregister | PendingKind::Unlock => {
                // Whatever the answer: shutdown goes on.
                if let Err(reason) = answer {
                    self.failed(&addr, name, reason);
                }
            }
            PendingKind::Lock(queues) => {
                let granted = answer.and_then(success).and_then(|r| {
                    LockBatchResponseBody::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match granted {
                    Ok(body) => self.on_lock(now, sent, &queues, &body.lock_ok_mq_set),
                    Err(reason) => {
                        let failure = LockFailure::of(&reason);
                        self.failed(&addr, name, reason);
                        self.on_lock_failed(now, &queues, failure);
                    }
                }
            }
            PendingKind::SendBack(back) => match answer.and_then(success) {
                Ok(_) => self.on_sent_back(now, *back),
                Err(reason) => {
                    self.failed(&addr, name, reason);
                    self.on_send_back_failed(now, *back);
                }
            },
            PendingKind::SeekBound {
                request,
                key,
                epoch,
            } => {
                // Both answers carry the one field `offset`. Every seek is answered: moved, or
                // a failure (the queue was revoked or restarted meanwhile, say).
                let queue = self.queues.live(key, epoch).map(|s| s.mq.clone());
                let offset =
                    answer.and_then(|r| offset_of::<GetMaxOffsetResponse>(r, |h| h.offset));
                let moved = match (offset, &queue) {
                    (_, None) => Err(FailureReason::Stale),
                    (Ok(offset), Some(mq)) if self.reset_queue(now, mq, offset) => Ok(offset),
                    (Ok(_), Some(_)) => Err(FailureReason::Stale),
                    (Err(reason), Some(_)) => Err(reason),
                };
                if let Err(reason) = &moved {
                    self.failed(&addr, name, reason.clone());
                }
                if let Some(queue) = queue {
                    self.outputs.push_back(Output::Event(Event::SeekDone {
                        request,
                        queue,
                        offset: moved,
                    }));
                }
            }
            PendingKind::Search(request, queue) => {
                let offset = answer.and_then(|r| {
                    let h = success(r)?
                        .header::<SearchOffsetResponse>()
                        .map_err(|e| FailureReason::Malformed(e.to_string()))?;
                    Ok(h.offset)
                });
                if let Err(reason) = &offset {
                    self.failed(&addr, name, reason.clone());
                }
                self.outputs
                    .push_back(Output::Event(Event::OffsetForTimestamp {
                        request,
                        queue,
                        offset,
                    }));
            }
            PendingKind::CheckClient(topic) => match answer {
                Ok(r) if r.response_code() == ResponseCode::SUCCESS => {}
                Ok(r) => {
                    let reason = FailureReason::Refused(r.response_code(), r.remark);
                    self.reject_subscription(now, &topic, reason);
                }
                Err(reason) => {
                    // Asked again with the next route refresh.
                    self.failed(&addr, name, reason);
                    self.unchecked.insert(topic);
                }
            },
            PendingKind::Commit {
                request,
                queue,
                offset,
            } => match answer.and_then(success) {
                Ok(_) => self.commit_answered(request, queue, Some(offset)),
                Err(reason) => {
                    self.failed(&addr, name, reason);
                    self.commit_answered(request, queue, None);
                }
            },
        }
    }

    /// Keeps [`AccessDenials`](super::access::AccessDenials) up to date with `response`, and
    /// reports a refusal that is news.
    fn note_access(&mut self, pending: &Pending, response: &Command) {
        let name = pending.kind.name();
        if !super::access::is_access_refusal(response) {
            self.access.granted(&pending.addr, name);
            return;
        }
        if !self.access.refused(&pending.addr, name) {
            return;
        }
        let topic = match pending.kind.topic() {
            Ok(topic) => topic.map(str::to_owned),
            Err(key) => self.queues.get(key).map(|s| s.mq.topic().to_owned()),
        };
        self.outputs.push_back(Output::Event(Event::AccessDenied {
            addr: pending.addr.clone(),
            request: name,
            topic,
            group: self.config.group.clone(),
            code: response.response_code(),
            remark: response.remark.clone(),
        }));
    }

    /// Reports a failed request (the consumer retries on its own).
    pub(super) fn failed(&mut self, addr: &str, request: &'static str, reason: FailureReason) {
        self.outputs.push_back(Output::Event(Event::RequestFailed {
            addr: addr.to_owned(),
            request,
            reason,
        }));
    }

    /// A start-offset request failed: ask again after the pull backoff.
    pub(super) fn resolve_failed(
        &mut self,
        now: Instant,
        addr: &str,
        name: &'static str,
        key: QueueKey,
        epoch: Epoch,
        reason: FailureReason,
    ) {
        self.failed(addr, name, reason);
        if let Some(state) = self.queues.live_mut(key, epoch) {
            state.phase = Phase::Resolve;
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
        }
    }
}

/// A response that says it succeeded, or the refusal it carries.
fn success(response: Command) -> Result<Command, FailureReason> {
    match response.response_code() {
        ResponseCode::SUCCESS => Ok(response),
        code => Err(FailureReason::Refused(code, response.remark)),
    }
}

/// The offset a successful response's header `H` carries; a negative one is malformed.
fn offset_of<H: proto::CommandHeader>(
    response: Command,
    offset: impl FnOnce(&H) -> i64,
) -> Result<i64, FailureReason> {
    let header = success(response)?
        .header::<H>()
        .map_err(|e| FailureReason::Malformed(e.to_string()))?;
    match offset(&header) {
        offset if offset >= 0 => Ok(offset),
        offset => Err(FailureReason::Malformed(format!("offset {offset}"))),
    }
}

/// A topic's route from the name server's answer; `None` for a topic it does not know.
fn route_of(response: Command) -> Result<Option<TopicRouteData>, FailureReason> {
    if response.response_code() == ResponseCode::TOPIC_NOT_EXIST {
        return Ok(None);
    }
    TopicRouteData::decode(&success(response)?.body)
        .map(Some)
        .map_err(|e| FailureReason::Malformed(e.to_string()))
}
