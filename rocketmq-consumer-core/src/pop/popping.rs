//! The pop loops: push mode's pollers (one per assigned queue, popping again as soon as an
//! answer is in, unless the held messages fill the budget) and simple mode's waiting
//! receives; each `POP_MESSAGE` sent, and its answer read into held messages (or a
//! [`PopEvent::Received`]) with their receipt handles.

use std::time::{Duration, Instant};

use proto::headers::receipt::{PoppedAt, receipt_handles};
use proto::headers::{PopMessageRequest, PopMessageResponse, ReceiptHandle};
use proto::message::{DecodeOptions, decode_messages, property};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use super::held::{HeldMessage, Stage};
use super::orderly::order_count;
use super::requests::Kind;
use super::{Lifecycle, PopConsumer, PopEvent, PopMessage, PopOutput, PopTimer, Receipt};
use crate::output::{FailureReason, RequestId};

/// One assigned queue's pop loop (push mode).
#[derive(Debug)]
pub(super) struct Poller {
    pub(super) seq: u64,
    pub(super) topic: String,
    /// A pop is out; the next waits for its answer.
    pub(super) in_flight: bool,
    /// Waiting for a timer (backoff) before popping again.
    pub(super) waiting: bool,
}

/// A simple-mode receive not sent yet (no queue assigned so far).
#[derive(Debug)]
pub(super) struct WaitingReceive {
    pub(super) request: RequestId,
    pub(super) max: u32,
    pub(super) invisible: Duration,
}

impl PopConsumer {
    /// Sends the pops that may go now: push mode, one per idle poller while the budget allows;
    /// simple mode, the waiting receives, round robin over the assigned queues.
    pub(super) fn pop_ready(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let ready: Vec<(MessageQueue, u64, String)> = self
            .pollers
            .iter()
            .filter(|(_, p)| !p.in_flight && !p.waiting)
            .map(|(mq, p)| (mq.clone(), p.seq, p.topic.clone()))
            .collect();
        for (mq, seq, topic) in ready {
            let batch = self.config.batch_size as usize;
            if self.held.len() + batch > self.config.max_cached_messages
                || self.held.bytes() >= self.config.max_cached_bytes
            {
                break;
            }
            if let Some(poller) = self.pollers.get_mut(&mq) {
                poller.in_flight = true;
            }
            let invisible = self.config.invisible_time;
            self.send_pop(
                now,
                &mq,
                &topic,
                self.config.batch_size,
                invisible,
                Some(seq),
                None,
            );
        }
        while !self.receives.is_empty() {
            let queues: Vec<(MessageQueue, String)> = self
                .assignment
                .iter()
                .flat_map(|(t, qs)| qs.iter().map(move |q| (q.clone(), t.clone())))
                .collect();
            if queues.is_empty() {
                break;
            }
            let Some(waiting) = self.receives.pop_front() else {
                break;
            };
            self.receive_turn = self.receive_turn.wrapping_add(1);
            let (mq, topic) = queues[self.receive_turn % queues.len()].clone();
            self.send_pop(
                now,
                &mq,
                &topic,
                waiting.max,
                waiting.invisible,
                None,
                Some(waiting.request),
            );
        }
    }

    /// `POP_MESSAGE` of up to `max` messages of `mq`, invisible for `invisible`, for the poller
    /// or the receive given; a broker without a master address fails it at once.
    #[allow(clippy::too_many_arguments)]
    fn send_pop(
        &mut self,
        now: Instant,
        mq: &MessageQueue,
        topic: &str,
        max: u32,
        invisible: Duration,
        poller: Option<u64>,
        receive: Option<RequestId>,
    ) {
        let Some(addr) = self.cluster.master_addr(mq.broker_name()) else {
            self.pop_failed(now, poller, receive, FailureReason::Disconnected);
            return;
        };
        let subscription = self.subscriptions.get(topic);
        let header = PopMessageRequest {
            consumer_group: self.config.group.clone(),
            topic: topic.to_owned(),
            queue_id: mq.queue_id(),
            max_msg_nums: max as i32,
            invisible_time: invisible.as_millis() as i64,
            poll_time: self.config.poll_time.as_millis() as i64,
            born_time: self.unix_ms(now),
            init_mode: 0,
            exp_type: subscription.map(|s| s.expression_type.name().to_owned()),
            exp: subscription.map(|s| s.sub_string.clone()),
            order: Some(self.config.orderly),
            attempt_id: None,
            broker_name: Some(mq.broker_name().to_owned()),
        };
        self.stats.pops += 1;
        let command = Command::request(RequestCode::POP_MESSAGE, &header);
        let kind = Kind::Pop {
            queue: mq.clone(),
            topic: topic.to_owned(),
            poller,
            receive,
        };
        self.request(now, &addr, command, kind);
    }

    /// A pop failed: its receive hears why, its poller tries again after `exception_backoff`.
    pub(super) fn pop_failed(
        &mut self,
        now: Instant,
        poller: Option<u64>,
        receive: Option<RequestId>,
        reason: FailureReason,
    ) {
        // A lost or refused connection (a broker restarting) is dialled again after the
        // reconnect backoff, and the pop goes then, as the push consumer's pulls go again after
        // `pull_backoff`: the 3 s exception backoff on top would keep a restarted broker's
        // messages waiting up to 3 s after it registered again.
        let after = match reason {
            FailureReason::Disconnected => self.config.reconnect_backoff,
            _ => self.config.exception_backoff,
        };
        if let Some(request) = receive {
            self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                request,
                messages: Err(reason),
            }));
        }
        if let Some(seq) = poller {
            self.poll_later(now, seq, after);
        }
    }

    /// The poller `seq` may pop again after `after` (at once when zero).
    fn poll_later(&mut self, now: Instant, seq: u64, after: Duration) {
        if let Some(poller) = self.pollers.values_mut().find(|p| p.seq == seq) {
            poller.in_flight = false;
            if !after.is_zero() {
                poller.waiting = true;
                self.timers.set(now + after, PopTimer::Poll(seq));
            }
        }
    }

    /// A `POP_MESSAGE` answer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_pop(
        &mut self,
        now: Instant,
        sent: Instant,
        queue: MessageQueue,
        topic: String,
        poller: Option<u64>,
        receive: Option<RequestId>,
        response: Command,
    ) {
        self.stats.pop_time += now.saturating_duration_since(sent);
        let code = response.response_code();
        match code {
            ResponseCode::SUCCESS => {}
            // Nothing within the long poll: pop again at once (`DefaultMQPushConsumerImpl`
            // treats NO_NEW_MSG and POLLING_NOT_FOUND alike).
            ResponseCode::POLLING_TIMEOUT | ResponseCode::PULL_NOT_FOUND => {
                if let Some(request) = receive {
                    self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                        request,
                        messages: Ok(Vec::new()),
                    }));
                }
                if let Some(seq) = poller {
                    self.poll_later(now, seq, Duration::ZERO);
                }
                return;
            }
            _ => {
                let reason = FailureReason::Refused(code, response.remark.clone());
                self.report_failure(&queue, "POP_MESSAGE", &reason);
                self.pop_failed(now, poller, receive, reason);
                return;
            }
        }
        let header = match response.header::<PopMessageResponse>() {
            Ok(header) => header,
            Err(e) => {
                // Nothing to ack them with: the messages come back after their invisibility.
                let reason = FailureReason::Malformed(e.to_string());
                self.report_failure(&queue, "POP_MESSAGE", &reason);
                self.pop_failed(now, poller, receive, reason);
                return;
            }
        };
        let batch = decode_messages(&response.body, &DecodeOptions::default());
        if let Some(error) = &batch.error {
            // What decoded is still handed out; the rest comes back after its invisibility.
            self.report_failure(
                &queue,
                "POP_MESSAGE",
                &FailureReason::Malformed(error.to_string()),
            );
        }
        let mut messages = batch.messages;
        // A 5.x broker re-encodes a redelivery from the pop retry topic under the subscribed
        // topic and puts its handle in `POP_CK` (`PopMessageProcessor.popMsgFromQueue`, unless
        // `popResponseReturnActualRetryTopic`): that handle wins, and the offset info only
        // names the others (`MQClientAPIImpl.processPopResponse` reads it for messages without
        // `POP_CK`).
        let own: Vec<Option<ReceiptHandle>> = messages
            .iter()
            .map(|m| {
                m.property(property::POP_CK)
                    .and_then(|text| ReceiptHandle::parse(text).ok())
            })
            .collect();
        let at: Vec<PoppedAt<'_>> = messages
            .iter()
            .zip(&own)
            .filter(|(_, own)| own.is_none())
            .map(|(m, _)| PoppedAt {
                topic: m.topic(),
                queue_id: m.queue_id(),
                queue_offset: m.queue_offset(),
            })
            .collect();
        let computed = receipt_handles(
            queue.broker_name(),
            header.pop_time,
            header.invisible_time,
            header.revive_qid,
            header.start_offset_info.as_deref(),
            header.msg_offset_info.as_deref(),
            &at,
        );
        drop(at);
        let computed = match computed {
            Ok(handles) => handles,
            Err(e) => {
                // Nothing to ack them with: the messages come back after their invisibility.
                let reason = FailureReason::Malformed(e.to_string());
                self.report_failure(&queue, "POP_MESSAGE", &reason);
                self.pop_failed(now, poller, receive, reason);
                return;
            }
        };
        let mut computed = computed.into_iter();
        let mut handles: Vec<ReceiptHandle> = Vec::with_capacity(messages.len());
        for own in own {
            match own.or_else(|| computed.next()) {
                Some(handle) => handles.push(handle),
                None => break,
            }
        }
        // `receipt_handles` answers one handle per message it was given, so every message has
        // one; a shorter list would drop the tail rather than pair a wrong handle.
        messages.truncate(handles.len());
        for m in &mut messages {
            // Redeliveries come from the pop retry topic; the handle keeps that, the
            // application sees the subscribed topic (`processPopResponse`).
            if m.topic() != topic {
                m.set_topic(topic.clone());
            }
        }
        if self.config.orderly
            && let Some(info) = header.order_count_info.as_deref()
        {
            // Orderly redeliveries stay in the topic; the broker counts them apart
            // (`MQClientAPIImpl.processPopResponse` sets the reconsume count from this).
            match proto::headers::receipt::parse_order_count_info(info) {
                Ok(counts) => {
                    for (m, handle) in messages.iter_mut().zip(&handles) {
                        if let Some(count) = order_count(&counts, handle).filter(|c| *c > 0) {
                            m.set_reconsume_times(count);
                        }
                    }
                }
                Err(e) => self.report_failure(
                    &queue,
                    "POP_MESSAGE",
                    &FailureReason::Malformed(e.to_string()),
                ),
            }
        }
        self.stats.popped += messages.len() as u64;
        let visible_until = self.visible_until(sent, now, header.pop_time, header.invisible_time);
        match receive {
            Some(request) => {
                let popped = messages
                    .into_iter()
                    .zip(handles)
                    .map(|(message, handle)| PopMessage {
                        message,
                        receipt: Receipt {
                            topic: topic.clone(),
                            handle,
                        },
                    })
                    .collect();
                self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                    request,
                    messages: Ok(popped),
                }));
            }
            None => {
                for (message, handle) in messages.into_iter().zip(handles) {
                    let held = HeldMessage {
                        topic: topic.clone(),
                        handle,
                        visible_until,
                        bytes: message.body().len(),
                        reconsume_times: message.reconsume_times(),
                        commit_log_offset: message.commit_log_offset(),
                        msg_id: message.msg_id(),
                        stage: Stage::Ready(Box::new(message)),
                        renewing: false,
                        settle_after_renewal: None,
                        attempts: 0,
                    };
                    let id = self.held.insert(held);
                    if self.lifecycle != Lifecycle::Running {
                        // Popped while shutting down: let the group have it at once.
                        if let Some(h) = self.held.get_mut(id) {
                            h.stage = Stage::Settling;
                        }
                        self.release(now, id);
                    }
                }
                if let Some(seq) = poller {
                    self.poll_later(now, seq, Duration::ZERO);
                }
            }
        }
    }

    /// Reports a failed request about `queue`, named by its broker's master address.
    fn report_failure(
        &mut self,
        queue: &MessageQueue,
        request: &'static str,
        reason: &FailureReason,
    ) {
        let addr = self
            .cluster
            .master_addr(queue.broker_name())
            .unwrap_or_default();
        self.failed(&addr, request, reason.clone());
    }

    /// When the broker makes a message visible again, as well as this side can tell: it popped
    /// (or renewed) it between `sent` and `now`, so the end lies within those two plus the
    /// invisibility; within that, the broker's own `pop_time` places it (Java's
    /// `ConsumeRequest.isPopTimeout` compares the broker's pop time with the local clock too).
    /// The send time alone would be far too early for a long poll answered seconds later.
    pub(super) fn visible_until(
        &self,
        sent: Instant,
        now: Instant,
        pop_time: i64,
        invisible_ms: i64,
    ) -> Instant {
        let invisible = Duration::from_millis(u64::try_from(invisible_ms).unwrap_or(0));
        let (earliest, latest) = (sent + invisible, now + invisible);
        let ahead = pop_time.saturating_add(invisible_ms) - self.unix_ms(now);
        let by_clock = match u64::try_from(ahead) {
            Ok(ahead) => now + Duration::from_millis(ahead),
            Err(_) => now
                .checked_sub(Duration::from_millis(ahead.unsigned_abs()))
                .unwrap_or(earliest),
        };
        by_clock.clamp(earliest, latest)
    }
}
