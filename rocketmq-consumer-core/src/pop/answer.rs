//! How each request ends: one match over the request kinds, each arm deciding what an answer
//! means and what a failure costs (`PopConsumer::answer`).

use std::time::Instant;

use proto::body::{QueryAssignmentResponseBody, TopicRouteData};
use proto::headers::ChangeInvisibleTimeResponse;
use proto::{Command, ResponseCode};

use super::held::Settle;
use super::requests::{Kind, Pending};
use super::{Lifecycle, PopConsumer, PopEvent, PopOutput, PopTimer, Receipt};
use crate::output::FailureReason;

impl PopConsumer {
    /// The one way a request ends: its answer, or why there is none (a timeout, a lost
    /// connection, no connection or broker address at all). Each kind decides in one place
    /// what an answer means and what a failure costs.
    pub(super) fn answer(
        &mut self,
        now: Instant,
        pending: Pending,
        answer: Result<Command, FailureReason>,
    ) {
        let name = pending.kind.name();
        let addr = pending.addr.clone();
        match pending.kind {
            Kind::Route(topic) => {
                let route = answer.and_then(success).and_then(|r| {
                    TopicRouteData::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match route {
                    Ok(route) => self.on_route(now, &topic, route),
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.cluster.name_server_failed(&addr);
                        self.timers.reset_earlier(
                            now + self.config.exception_backoff,
                            PopTimer::RouteRefresh,
                        );
                    }
                }
            }
            Kind::Heartbeat | Kind::SetMode => match answer.and_then(success) {
                // The broker knows this member (and the group's mode) now: ask for the
                // assignment rather than wait for the next round.
                Ok(_) => self.timers.reset_earlier(now, PopTimer::Rebalance),
                Err(reason) => {
                    if matches!(pending.kind, Kind::SetMode) {
                        // Try the mode again soon (a 5.x broker refuses it with
                        // SUBSCRIPTION_GROUP_NOT_EXIST until a heartbeat created the group).
                        self.mode_set.retain(|(a, _)| *a != addr);
                        self.timers.reset_earlier(
                            now + self.config.exception_backoff,
                            PopTimer::RouteRefresh,
                        );
                    }
                    self.failed(&addr, name, reason);
                }
            },
            Kind::Assignment(topic) => {
                let body = answer.and_then(success).and_then(|r| {
                    QueryAssignmentResponseBody::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match body {
                    // No set at all: the broker could not assign (yet: the heartbeat may still
                    // be on its way); Java keeps the old assignment. Ask again soon.
                    Ok(QueryAssignmentResponseBody {
                        message_queue_assignments: None,
                    }) => self
                        .timers
                        .reset_earlier(now + self.config.exception_backoff, PopTimer::Rebalance),
                    Ok(QueryAssignmentResponseBody {
                        message_queue_assignments: Some(assignments),
                    }) => {
                        let queues = assignments
                            .into_iter()
                            .filter_map(|a| a.message_queue)
                            .filter(|mq| mq.topic() == topic)
                            .collect();
                        self.apply_assignment(&topic, queues);
                    }
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.assignment_turn = self.assignment_turn.wrapping_add(1);
                        self.timers.reset_earlier(
                            now + self.config.exception_backoff,
                            PopTimer::Rebalance,
                        );
                    }
                }
            }
            Kind::Pop {
                queue,
                topic,
                poller,
                receive,
            } => match answer {
                Ok(response) => {
                    self.on_pop(now, pending.sent, queue, topic, poller, receive, response)
                }
                Err(reason) => {
                    self.failed(&addr, name, reason.clone());
                    self.pop_failed(now, poller, receive, reason);
                }
            },
            Kind::Ack(ids) => match answer.and_then(success) {
                Ok(_) => {
                    for id in ids {
                        if self.held.remove(id).is_some() {
                            self.stats.acked += 1;
                        }
                    }
                }
                Err(reason) => {
                    for id in ids {
                        self.settle_retry_or_fail(now, id, name, reason.clone());
                    }
                }
            },
            Kind::Retry(id) | Kind::Release(id) => match answer.and_then(success) {
                Ok(_) => {
                    if matches!(pending.kind, Kind::Retry(_)) {
                        self.stats.retried += 1;
                    }
                    self.held.remove(id);
                }
                Err(reason) => self.settle_retry_or_fail(now, id, name, reason),
            },
            Kind::DeadLetter(id) => match answer.and_then(success) {
                Ok(_) => {
                    self.stats.dead_lettered += 1;
                    if let Some(held) = self.held.get_mut(id) {
                        held.settle_after_renewal = Some(Settle::Ack);
                        let receipt = Receipt {
                            topic: held.topic.clone(),
                            handle: held.handle.clone(),
                        };
                        self.outputs
                            .push_back(PopOutput::Event(PopEvent::DeadLettered { receipt }));
                        self.acks.push(id);
                    }
                }
                Err(reason) => {
                    // Not in the DLQ: delay it for as long as retries ever wait, and try again
                    // at its next delivery.
                    self.failed(&addr, name, reason);
                    let delay = self.config.retry_delay(i32::MAX, 0);
                    if let Some(held) = self.held.get(id) {
                        let (topic, handle) = (held.topic.clone(), held.handle.clone());
                        self.send_change(now, &topic, &handle, delay, Kind::Retry(id));
                    }
                }
            },
            Kind::Renew(id) => self.on_renewed(now, pending.sent, id, answer),
            Kind::AppAck(request) => {
                let result = answer.and_then(success).map(|_| ());
                if result.is_ok() {
                    self.stats.acked += 1;
                }
                self.outputs
                    .push_back(PopOutput::Event(PopEvent::Acked { request, result }));
            }
            Kind::AppChange(request, topic, handle) => {
                let receipt = answer
                    .and_then(success)
                    .and_then(|r| {
                        r.header::<ChangeInvisibleTimeResponse>()
                            .map_err(|e| FailureReason::Malformed(e.to_string()))
                    })
                    .map(|h| Receipt {
                        topic,
                        handle: handle.renewed(h.pop_time, h.invisible_time, h.revive_qid),
                    });
                self.outputs
                    .push_back(PopOutput::Event(PopEvent::InvisibilityChanged {
                        request,
                        receipt,
                    }));
            }
            Kind::Unregister => {
                if self.lifecycle == Lifecycle::Finishing
                    && !self.link.any(|p| matches!(p.kind, Kind::Unregister))
                {
                    self.close();
                }
            }
        }
    }

    /// Reports a failed request as [`PopEvent::RequestFailed`].
    pub(super) fn failed(&mut self, addr: &str, request: &'static str, reason: FailureReason) {
        self.outputs
            .push_back(PopOutput::Event(PopEvent::RequestFailed {
                addr: addr.to_owned(),
                request,
                reason,
            }));
    }
}

/// A response as a result: `SUCCESS`, or the broker's refusal.
pub(super) fn success(response: Command) -> Result<Command, FailureReason> {
    match response.response_code() {
        ResponseCode::SUCCESS => Ok(response),
        code => Err(FailureReason::Refused(code, response.remark)),
    }
}
