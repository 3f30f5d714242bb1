//! Handing messages to the application: the push dispatch (ready queues in turn, under the
//! rate limits, up to `max_in_flight_deliveries`), a delivery's trace records as it starts,
//! and what a completed delivery settles in its queue.

use std::time::{Duration, Instant};

use super::deliveries::{Flight, Source};
use super::message_trace::{self, OpenTrace};
use super::queues::Phase;
use super::rate_hold::RateHold;
use super::{Consumer, Lifecycle};
use crate::config::ConsumeMode;
use crate::id::{Epoch, QueueKey};
use crate::messages::Messages;
use crate::output::{ConsumeOutcome, Delivery, Handled, Output};
use crate::timer::Timer;

/// A queue's messages taken for a delivery that has no number yet.
struct Taken {
    queue: proto::MessageQueue,
    messages: Messages,
    source: Source,
    /// Boxed, as in [`Flight`]: a turn's result is moved a few times on every delivery.
    trace: Option<Box<OpenTrace>>,
}

impl Consumer {
    /// Hands ready messages to the user, round robin over queues with ready messages, until
    /// `max_in_flight_deliveries` are out. Handing out on demand, this is left to
    /// [`Consumer::deliver_now`].
    pub(super) fn dispatch(&mut self, now: Instant) {
        if self.on_demand || !self.delivers() {
            return;
        }
        let mut held = RateHold::default();
        while self.deliveries.len() < self.config.max_in_flight_deliveries {
            let Some(taken) = self.take_next(now, &mut held) else {
                break;
            };
            let id = self.deliveries.next_id();
            self.deliveries
                .insert(id, Flight::new(now, taken.source, taken.trace));
            self.to_deliver.push_back(Delivery {
                id,
                queue: taken.queue,
                messages: taken.messages,
            });
        }
        self.rate_hold_ends(held);
    }

    /// From now on, messages of owned queues are handed out only when asked for, one
    /// delivery at a time, by [`Consumer::deliver_now`]: [`Consumer::poll_output`] and
    /// [`Consumer::poll_delivery`] hand out only what a broker asks to have consumed
    /// directly. A driver that runs handlers on its own stack while they are quick asks for
    /// deliveries as it has room, and a handler that finishes as its delivery is handed out
    /// settles it in the same call, without a completion to look up. The order of deliveries,
    /// the in-flight limit and the rate limits are the same either way.
    pub fn deliver_on_demand(&mut self) {
        self.on_demand = true;
    }

    /// Hands the next ready messages (the next queue's turn, under the in-flight and rate
    /// limits) to `run` at `now`, and returns whether there was a delivery. What `run`
    /// answers settles it: [`Handled::Done`] at once, as if completed;
    /// [`Handled::Running`] leaves it in flight until [`Consumer::complete`]. `run` is
    /// called at most once.
    ///
    /// Messages are handed out this way only after [`Consumer::deliver_on_demand`] (before
    /// it, and in poll mode, this returns `false` and calls nothing).
    ///
    /// `run` must not unwind: catch a handler's panic inside it and answer a failure (the
    /// driver answers [`ConsumeOutcome::ReconsumeLater`]). A delivery whose `run` unwound is
    /// neither settled nor in flight, so its messages wait in their queue's cache, holding
    /// its commit point below them, until the queue is revoked.
    pub fn deliver_now(&mut self, now: Instant, run: impl FnOnce(Delivery) -> Handled) -> bool {
        if !self.on_demand
            || !self.delivers()
            || self.deliveries.len() >= self.config.max_in_flight_deliveries
        {
            return false;
        }
        let mut held = RateHold::default();
        let taken = self.take_next(now, &mut held);
        self.rate_hold_ends(held);
        let Some(taken) = taken else {
            return false;
        };
        let id = self.deliveries.next_id();
        let mut delivery = Delivery {
            id,
            queue: taken.queue,
            messages: taken.messages,
        };
        if let Some(ns) = &self.namespace {
            delivery = ns.unwrap_delivery(delivery);
        }
        let flight = Flight::new(now, taken.source, taken.trace);
        match run(delivery) {
            Handled::Done { outcome, at } => self.finish_flight(at.max(now), flight, outcome),
            Handled::Running => self.deliveries.insert(id, flight),
        }
        true
    }

    /// Whether queue deliveries go out now: running, and not in poll mode.
    fn delivers(&self) -> bool {
        self.lifecycle == Lifecycle::Running && self.config.consume_mode != ConsumeMode::Poll
    }

    /// The next queue's turn under the rate limits: its ready messages (up to
    /// `consume_batch_size`), marked in flight and counted as delivered. `None` when no queue
    /// may be served now; a rate limit that held one back is noted in `held`.
    #[inline]
    fn take_next(&mut self, now: Instant, held: &mut RateHold) -> Option<Taken> {
        let orderly = self.config.consume_mode == ConsumeMode::Orderly;
        let leased = self.needs_lock();
        loop {
            if held.consumer_wide(&self.rate, now) {
                return None;
            }
            let key = self.queues.next_turn()?;
            if held.topic_of(&self.rate, &self.queues, now, key) {
                if held.went_round(key) {
                    return None;
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
            // Checked here: the call costs a delivery more than the check.
            let trace = if self.config.trace {
                self.open_trace(now, &messages)
            } else {
                None
            };
            self.counters.delivered += 1;
            self.counters.delivered_messages += messages.len() as u64;
            return Some(Taken {
                queue,
                messages,
                source,
                trace,
            });
        }
    }

    /// With message trace: the `SubBefore` records of a delivery of `messages` starting now
    /// (out at once), and what its completion's records need.
    pub(super) fn open_trace(
        &mut self,
        now: Instant,
        messages: &[proto::message::Message],
    ) -> Option<Box<OpenTrace>> {
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
        Some(Box::new(open))
    }

    /// A rate limit held messages back: wake when the first of them may go.
    #[inline]
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
        // Orderly under broker locks, the lease is checked first: a batch whose lease lapsed
        // while it ran is not acknowledged at all.
        if self.needs_lock() {
            let Some(state) = self.queues.live(key, epoch) else {
                self.counters.stale_completions += 1;
                return;
            };
            if !state.lease_valid(now) {
                // The lease lapsed while the batch ran: someone else may own the queue now.
                self.counters.stale_completions += 1;
                self.lose_lease(now, key, Duration::ZERO);
                return;
            }
        }
        let consumed = outcome.consumed(offsets.len());
        let (done, failed) = offsets.split_at(consumed);
        let Some(((), phase)) = self.queues.change_live_cache(key, epoch, |pq| pq.ack(done)) else {
            self.counters.stale_completions += 1;
            return;
        };
        // Acknowledging does not change the phase.
        let revoking = phase == Phase::Revoking;
        if !done.is_empty() && !revoking {
            self.acknowledged(now);
        }
        if !failed.is_empty() {
            self.retry_failed(now, key, epoch, failed, outcome);
            self.after_queue_change(now, key);
        } else if revoking {
            self.maybe_finish_revoke(now, key);
        }
    }
}
