//! Handing messages to the application: the push dispatch (ready queues in turn, under the
//! rate limits, up to `max_in_flight_deliveries`), a delivery's trace records as it starts,
//! and what a completed delivery settles in its queue.

use std::time::{Duration, Instant};

use super::deliveries::Source;
use super::message_trace::{self, OpenTrace};
use super::queues::Phase;
use super::rate_hold::RateHold;
use super::{Consumer, Lifecycle};
use crate::config::ConsumeMode;
use crate::id::{Epoch, QueueKey};
use crate::output::{ConsumeOutcome, Delivery, Output};
use crate::timer::Timer;

impl Consumer {
    /// Hands ready messages to the user, round robin over queues with ready messages, until
    /// `max_in_flight_deliveries` are out.
    pub(super) fn dispatch(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running || self.config.consume_mode == ConsumeMode::Poll {
            return;
        }
        let orderly = self.config.consume_mode == ConsumeMode::Orderly;
        let leased = self.needs_lock();
        let mut held = RateHold::default();
        while self.deliveries.len() < self.config.max_in_flight_deliveries {
            if held.consumer_wide(&self.rate, now) {
                break;
            }
            let Some(key) = self.queues.next_turn() else {
                break;
            };
            if held.topic_of(&self.rate, &self.queues, now, key) {
                if held.went_round(key) {
                    break;
                }
                continue;
            }
            // Orderly: one batch of a queue at a time, and only under a valid lease; the queue
            // comes back to the turns when its batch completes or its suspension ends.
            let batch = self.config.consume_batch_size;
            let paused = &self.paused;
            let taken = self.queues.take_turn(key, batch, |state| {
                state.phase != Phase::Revoking
                    && !(orderly && (state.pq().is_busy() || (leased && !state.lease_valid(now))))
                    // A paused queue leaves the turns; `resume` puts it back.
                    && (paused.is_empty() || !paused.contains(&state.mq))
            });
            let Some((queue, epoch, messages)) = taken else {
                continue;
            };
            if messages.is_empty() {
                continue;
            }
            held.handed_out(&mut self.rate, now, &queue, &messages);
            let source = Source::Queue {
                key,
                epoch,
                offsets: messages.iter().map(|m| m.queue_offset()).collect(),
            };
            let trace = self.open_trace(now, &messages);
            let id = self.deliveries.start(now, source, trace);
            self.counters.delivered += 1;
            self.counters.delivered_messages += messages.len() as u64;
            self.to_deliver.push_back(Delivery {
                id,
                queue,
                messages,
            });
        }
        self.rate_hold_ends(held);
    }

    /// With message trace: the `SubBefore` records of a delivery of `messages` starting now
    /// (out at once), and what its completion's records need.
    pub(super) fn open_trace(
        &mut self,
        now: Instant,
        messages: &[proto::message::Message],
    ) -> Option<OpenTrace> {
        if !self.config.trace {
            return None;
        }
        self.traced += 1;
        // 32 hex digits, as Java's `MessageClientIDSetter.createUniqID` request ids: this
        // consumer's salt (its client id and start time) and a sequence number.
        let request_id = format!("{:016X}{:016X}", self.trace_salt, self.traced);
        let group = match &self.namespace {
            Some(ns) => ns.unwrap(&self.config.group).into_owned(),
            None => self.config.group.clone(),
        };
        let (open, records) = message_trace::open(&group, request_id, self.unix_ms(now), messages)?;
        self.outputs.push_back(Output::Trace(records));
        Some(open)
    }

    /// A rate limit held messages back: wake when the first of them may go.
    pub(super) fn rate_hold_ends(&mut self, held: RateHold) {
        if let Some(at) = held.until {
            self.counters.rate_limited += 1;
            self.timers.reset_earlier(at, Timer::RateLimit);
        }
    }

    /// Applies a handler's outcome to the queue it came from.
    pub(super) fn settle(
        &mut self,
        now: Instant,
        key: QueueKey,
        epoch: Epoch,
        offsets: &[i64],
        outcome: ConsumeOutcome,
    ) {
        let leased = self.needs_lock();
        let Some(state) = self.queues.live(key, epoch) else {
            self.counters.stale_completions += 1;
            return;
        };
        let revoking = state.phase == Phase::Revoking;
        if leased && !state.lease_valid(now) {
            // The lease lapsed while the batch ran: someone else may own the queue now.
            self.counters.stale_completions += 1;
            self.lose_lease(now, key, Duration::ZERO);
            return;
        }
        let consumed = outcome.consumed(offsets.len());
        let (done, failed) = offsets.split_at(consumed);
        self.queues.change_cache(key, |pq| pq.ack(done));
        if !done.is_empty() && !revoking {
            self.acknowledged(now);
        }
        if !failed.is_empty() {
            self.retry_failed(now, key, epoch, failed, outcome);
            self.after_queue_change(now, key);
        } else if revoking {
            // Acknowledging does not change the phase: no need to look the queue up again.
            self.maybe_finish_revoke(now, key);
        }
    }
}
