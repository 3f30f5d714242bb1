//! Deliveries and settling: held messages handed to the handler, and each one's end: acked
//! (gathered per input and batched per broker), made invisible for a retry, dead-lettered then
//! acked, or released; the renewals that keep a running delivery's messages invisible; and
//! the retries of a settle that timed out or lost its connection.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proto::body::{BatchAck, BatchAckMessageRequestBody};
use proto::headers::{
    AckMessageRequest, ChangeInvisibleTimeRequest, ChangeInvisibleTimeResponse,
    ConsumerSendMsgBackRequest, ReceiptHandle,
};
use proto::{Command, RequestCode};

use super::answer::success;
use super::held::{HeldId, HeldMessage, Settle, Stage};
use super::orderly::OrderKey;
use super::requests::Kind;
use super::{
    Lifecycle, PopConsumer, PopDelivery, PopDeliveryId, PopEvent, PopMessage, PopOutput, PopTimer,
    Receipt,
};
use crate::output::{ConsumeOutcome, FailureReason};

/// A retried settle (after a timeout or a lost connection) waits this long.
const SETTLE_RETRY: Duration = Duration::from_secs(1);

/// Settle attempts before giving up on a message (its invisibility ends anyway).
const MAX_SETTLE_ATTEMPTS: u32 = 3;

impl PopConsumer {
    /// Settles each message of `delivery` as the handler's `outcome` says (see
    /// [`PopConsumer::complete`]); orderly, a retry holds the queue's later messages back too.
    pub(super) fn settle_delivery(
        &mut self,
        now: Instant,
        delivery: PopDeliveryId,
        outcome: ConsumeOutcome,
    ) {
        let ids = self.held.of_delivery(delivery);
        let consumed = outcome.consumed(ids.len());
        let queue = self.ordered.finish(delivery);
        let mut retry_after = None;
        for (index, id) in ids.into_iter().enumerate() {
            let Some(held) = self.held.get(id) else {
                continue;
            };
            let settle = if index < consumed {
                Settle::Ack
            } else {
                match outcome {
                    ConsumeOutcome::Suspend(pause) => Settle::Retry(pause),
                    ConsumeOutcome::Retry { delay_level, .. } if delay_level < 0 => {
                        Settle::DeadLetter
                    }
                    _ if held.reconsume_times >= self.config.max_reconsume_times => {
                        Settle::DeadLetter
                    }
                    ConsumeOutcome::Retry { delay_level, .. } => {
                        Settle::Retry(self.config.retry_delay(held.reconsume_times, delay_level))
                    }
                    _ => Settle::Retry(self.config.retry_delay(held.reconsume_times, 0)),
                }
            };
            if let Settle::Retry(delay) = settle {
                retry_after.get_or_insert(delay);
            }
            self.settle(now, id, settle);
        }
        if let (Some(queue), Some(delay)) = (queue, retry_after) {
            self.hold_back_queue(now, &queue, delay);
        }
    }

    /// Hands ready messages to the handler, up to `max_in_flight_deliveries` deliveries of
    /// `consume_batch_size` messages (orderly: one delivery per queue at a time); each gets
    /// its renewal timer.
    pub(super) fn dispatch(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        while self.deliveries.len() < self.config.max_in_flight_deliveries && self.held.has_ready()
        {
            self.next_delivery += 1;
            let delivery = PopDeliveryId(self.next_delivery);
            let mut messages = Vec::new();
            // Orderly: the delivery's queue, fixed by its first message.
            let mut queue: Option<OrderKey> = None;
            while messages.len() < self.config.consume_batch_size {
                let taken = if self.config.orderly {
                    let (ordered, wanted) = (&self.ordered, queue.as_ref());
                    self.held.take_ready_where(delivery, |m| {
                        let key = OrderKey::of(m);
                        wanted.map_or(!ordered.is_busy(&key), |q| *q == key)
                    })
                } else {
                    self.held.take_ready(delivery)
                };
                let Some((id, message)) = taken else {
                    break;
                };
                let Some(held) = self.held.get(id) else {
                    continue;
                };
                if held.visible_until <= now {
                    // Its invisibility ran out while it waited: another member may have it
                    // now (Java drops such a request too, `ConsumeRequest.isPopTimeout`).
                    self.stats.expired += 1;
                    self.held.remove(id);
                    continue;
                }
                if self.config.orderly && queue.is_none() {
                    queue = Some(OrderKey::of(held));
                }
                let receipt = Receipt {
                    topic: held.topic.clone(),
                    handle: held.handle.clone(),
                };
                if let Some(at) = held.visible_until.checked_sub(self.renew_ahead()) {
                    self.timers.set(at.max(now), PopTimer::Renew(id));
                }
                messages.push(PopMessage { message, receipt });
            }
            if messages.is_empty() {
                if self.config.orderly {
                    // Every ready message's queue is at the handler already.
                    break;
                }
                continue;
            }
            if let Some(queue) = queue {
                self.ordered.start(delivery, queue);
            }
            self.deliveries.insert(delivery);
            self.outputs.push_back(PopOutput::Deliver(PopDelivery {
                id: delivery,
                messages,
            }));
        }
    }

    /// Starts message `id`'s settle; one whose renewal is on its way waits for its answer, so
    /// that it settles with the renewed handle.
    pub(super) fn settle(&mut self, now: Instant, id: HeldId, settle: Settle) {
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.stage = Stage::Settling;
        if held.renewing {
            held.settle_after_renewal = Some(settle);
            return;
        }
        held.settle_after_renewal = Some(settle);
        let (topic, handle) = (held.topic.clone(), held.handle.clone());
        match settle {
            Settle::Ack => self.acks.push(id),
            Settle::Retry(delay) => self.send_change(now, &topic, &handle, delay, Kind::Retry(id)),
            Settle::DeadLetter => self.send_dead_letter(now, id),
        }
    }

    /// Orderly: a delivery of `queue` failed and comes back after `delay`; the queue's later
    /// messages held here must not go to the handler before it. They become invisible for the
    /// same `delay`, so the broker, which restarts the queue from its first message not acked,
    /// delivers them again after it, in order.
    fn hold_back_queue(&mut self, now: Instant, queue: &OrderKey, delay: Duration) {
        for id in self.held.drain_ready_where(|m| OrderKey::of(m) == *queue) {
            let Some(held) = self.held.get_mut(id) else {
                continue;
            };
            held.settle_after_renewal = Some(Settle::Retry(delay));
            let (topic, handle) = (held.topic.clone(), held.handle.clone());
            self.send_change(now, &topic, &handle, delay, Kind::Release(id));
        }
    }

    /// Keeps a running delivery's message invisible for another `invisible_time`.
    pub(super) fn renew(&mut self, now: Instant, id: HeldId) {
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        if !matches!(held.stage, Stage::Handling(_)) || held.renewing {
            return;
        }
        held.renewing = true;
        let (topic, handle) = (held.topic.clone(), held.handle.clone());
        let invisible = self.config.invisible_time;
        self.send_change(now, &topic, &handle, invisible, Kind::Renew(id));
    }

    /// Makes a message not delivered visible to the group again at once.
    pub(super) fn release(&mut self, now: Instant, id: HeldId) {
        let Some(held) = self.held.get(id) else {
            return;
        };
        let (topic, handle) = (held.topic.clone(), held.handle.clone());
        self.report.released += 1;
        self.send_change(now, &topic, &handle, Duration::ZERO, Kind::Release(id));
    }

    /// `ACK_MESSAGE` of the message `handle` names.
    pub(super) fn send_ack(
        &mut self,
        now: Instant,
        topic: &str,
        handle: &ReceiptHandle,
        kind: Kind,
    ) {
        let Some(addr) = self.cluster.master_addr(&handle.broker_name) else {
            self.answer_unsent(now, kind);
            return;
        };
        let header = AckMessageRequest {
            consumer_group: self.config.group.clone(),
            topic: handle.real_topic(topic, &self.config.group),
            queue_id: handle.queue_id,
            extra_info: handle.to_string(),
            offset: handle.queue_offset,
            broker_name: Some(handle.broker_name.clone()),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::ACK_MESSAGE, &header),
            kind,
        );
    }

    /// `CHANGE_MESSAGE_INVISIBLETIME` of the message `handle` names: invisible for
    /// `invisible` from now.
    pub(super) fn send_change(
        &mut self,
        now: Instant,
        topic: &str,
        handle: &ReceiptHandle,
        invisible: Duration,
        kind: Kind,
    ) {
        let Some(addr) = self.cluster.master_addr(&handle.broker_name) else {
            self.answer_unsent(now, kind);
            return;
        };
        let header = ChangeInvisibleTimeRequest {
            consumer_group: self.config.group.clone(),
            topic: handle.real_topic(topic, &self.config.group),
            queue_id: handle.queue_id,
            extra_info: handle.to_string(),
            offset: handle.queue_offset,
            invisible_time: invisible.as_millis() as i64,
            broker_name: Some(handle.broker_name.clone()),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::CHANGE_MESSAGE_INVISIBLETIME, &header),
            kind,
        );
    }

    /// Sends held message `id` to the group's dead-letter queue.
    fn send_dead_letter(&mut self, now: Instant, id: HeldId) {
        let Some(held) = self.held.get(id) else {
            return;
        };
        let Some(addr) = self.cluster.master_addr(&held.handle.broker_name) else {
            self.answer_unsent(now, Kind::DeadLetter(id));
            return;
        };
        // Delay level -1 sends the stored message to `%DLQ%<group>`
        // (`AbstractSendMessageProcessor`/`SendMessageProcessor.consumerSendMsgBack`), as the 5.x
        // proxy's `forwardMessageToDeadLetterQueue` does for pop; the ack follows.
        let header = ConsumerSendMsgBackRequest {
            offset: held.commit_log_offset,
            group: self.config.group.clone(),
            delay_level: -1,
            origin_msg_id: Some(held.msg_id.clone()),
            origin_topic: Some(held.topic.clone()),
            unit_mode: false,
            max_reconsume_times: Some(self.config.max_reconsume_times),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::CONSUMER_SEND_MSG_BACK, &header),
            Kind::DeadLetter(id),
        );
    }

    /// Sends the acks gathered during this input: one `ACK_MESSAGE` for a lone message of a
    /// broker, else one `BATCH_ACK_MESSAGE` per broker with an entry per checkpoint
    /// (`MQClientAPIImpl.batchAckMessageAsync` merges by retry, queue, start offset and pop
    /// time).
    pub(super) fn flush_acks(&mut self, now: Instant) {
        let ids = std::mem::take(&mut self.acks);
        let mut by_broker: BTreeMap<String, Vec<HeldId>> = BTreeMap::new();
        for id in ids {
            if let Some(held) = self.held.get(id) {
                by_broker
                    .entry(held.handle.broker_name.clone())
                    .or_default()
                    .push(id);
            }
        }
        for (broker, ids) in by_broker {
            // A bit index must fit the checkpoint (at most 32 messages per pop); a handle that
            // does not is acked alone.
            let (batchable, alone): (Vec<HeldId>, Vec<HeldId>) = ids.into_iter().partition(|id| {
                self.held.get(*id).is_some_and(|h| {
                    (0..1024).contains(&(h.handle.queue_offset - h.handle.ck_queue_offset))
                })
            });
            let (batchable, alone) = if batchable.len() > 1 {
                (batchable, alone)
            } else {
                (Vec::new(), [batchable, alone].concat())
            };
            for id in alone {
                if let Some(held) = self.held.get(id) {
                    let (topic, handle) = (held.topic.clone(), held.handle.clone());
                    self.send_ack(now, &topic, &handle, Kind::Ack(vec![id]));
                }
            }
            if batchable.is_empty() {
                continue;
            }
            let mut acks: BTreeMap<(String, String, i32, i64, i64), BatchAck> = BTreeMap::new();
            for id in &batchable {
                let Some(held) = self.held.get(*id) else {
                    continue;
                };
                let h = &held.handle;
                let key = (
                    held.topic.clone(),
                    h.retry.as_str().to_owned(),
                    h.queue_id,
                    h.ck_queue_offset,
                    h.pop_time,
                );
                let entry = acks.entry(key).or_insert_with(|| BatchAck {
                    consumer_group: self.config.group.clone(),
                    topic: held.topic.clone(),
                    retry: h.retry.as_str().to_owned(),
                    start_offset: h.ck_queue_offset,
                    queue_id: h.queue_id,
                    revive_queue_id: h.revive_qid,
                    pop_time: h.pop_time,
                    invisible_time: h.invisible_time,
                    bit_set: Vec::new(),
                });
                entry
                    .bit_set
                    .push((h.queue_offset - h.ck_queue_offset) as u32);
            }
            let Some(addr) = self.cluster.master_addr(&broker) else {
                self.answer_unsent(now, Kind::Ack(batchable));
                continue;
            };
            let body = BatchAckMessageRequestBody {
                broker_name: broker.clone(),
                acks: acks.into_values().collect(),
            };
            let command = Command::request_with_fields(
                RequestCode::BATCH_ACK_MESSAGE,
                proto::ExtFields::new(),
            )
            .with_body(body.encode());
            self.request(now, &addr, command, Kind::Ack(batchable));
        }
    }

    /// A renewal's answer: the new handle and time, and the next renewal; or, failed, another
    /// try soon while the old handle holds. A settle that waited for it goes now.
    pub(super) fn on_renewed(
        &mut self,
        now: Instant,
        sent: Instant,
        id: HeldId,
        answer: Result<Command, FailureReason>,
    ) {
        let header = answer.and_then(success).and_then(|r| {
            r.header::<ChangeInvisibleTimeResponse>()
                .map_err(|e| FailureReason::Malformed(e.to_string()))
        });
        let renew_ahead = self.renew_ahead();
        let renewed_until = header
            .as_ref()
            .map(|h| self.visible_until(sent, now, h.pop_time, h.invisible_time));
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.renewing = false;
        match header {
            Ok(h) => {
                held.handle = held
                    .handle
                    .renewed(h.pop_time, h.invisible_time, h.revive_qid);
                held.visible_until = renewed_until.unwrap_or(held.visible_until);
                self.stats.renewed += 1;
                if matches!(held.stage, Stage::Handling(_)) {
                    let at = held.visible_until.checked_sub(renew_ahead).unwrap_or(now);
                    self.timers.set(at.max(now), PopTimer::Renew(id));
                }
            }
            Err(reason) => {
                // The old handle still holds until its time; try again soon while it does.
                let retry_at = now + SETTLE_RETRY;
                let still = held.visible_until > retry_at;
                let receipt = Receipt {
                    topic: held.topic.clone(),
                    handle: held.handle.clone(),
                };
                if still && matches!(held.stage, Stage::Handling(_)) {
                    self.timers.set(retry_at, PopTimer::Renew(id));
                }
                self.stats.settle_failures += 1;
                self.outputs
                    .push_back(PopOutput::Event(PopEvent::SettleFailed {
                        receipt,
                        request: "CHANGE_MESSAGE_INVISIBLETIME",
                        reason,
                    }));
            }
        }
        // The handler finished meanwhile: settle with the handle we have now.
        if let Some(held) = self.held.get(id)
            && !matches!(held.stage, Stage::Handling(_))
            && let Some(settle) = held.settle_after_renewal
        {
            self.settle(now, id, settle);
        }
    }

    /// A settle failed: a timeout or lost connection is tried again while the message is
    /// still invisible; a refusal (`NO_MESSAGE`: the handle is spent) is final.
    pub(super) fn settle_retry_or_fail(
        &mut self,
        now: Instant,
        id: HeldId,
        name: &'static str,
        reason: FailureReason,
    ) {
        let transient = matches!(reason, FailureReason::Timeout | FailureReason::Disconnected);
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.attempts += 1;
        if transient
            && held.attempts < MAX_SETTLE_ATTEMPTS
            && held.visible_until > now + SETTLE_RETRY
        {
            self.timers.set(now + SETTLE_RETRY, PopTimer::Resettle(id));
            return;
        }
        if let Some(held) = self.held.remove(id) {
            self.stats.settle_failures += 1;
            let receipt = Receipt {
                topic: held.topic,
                handle: held.handle,
            };
            self.outputs
                .push_back(PopOutput::Event(PopEvent::SettleFailed {
                    receipt,
                    request: name,
                    reason,
                }));
        }
    }

    /// Reports a settle given up on as [`PopEvent::SettleFailed`].
    pub(super) fn settle_failed(
        &mut self,
        held: &HeldMessage,
        request: &'static str,
        reason: FailureReason,
    ) {
        self.stats.settle_failures += 1;
        self.outputs
            .push_back(PopOutput::Event(PopEvent::SettleFailed {
                receipt: Receipt {
                    topic: held.topic.clone(),
                    handle: held.handle.clone(),
                },
                request,
                reason,
            }));
    }

    /// How long before a running delivery's invisibility ends it is renewed: `renew_ahead`, but
    /// never more than half the invisibility (or a renewal would follow each renewal at once).
    fn renew_ahead(&self) -> Duration {
        self.config.renew_ahead.min(self.config.invisible_time / 2)
    }
}
