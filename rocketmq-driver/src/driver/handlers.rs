//! Running the user's handler for each delivery: on its own task, or (while handlers are
//! cheap) its first poll on the driver's task, which saves a task and a thread hand-off per
//! delivery ([`Inline`]).

use std::panic::AssertUnwindSafe;
use std::task::Context;

use consumer_core::{ConsumeOutcome, Consumer, Delivery};
use futures_channel::mpsc;
use futures_util::FutureExt;

use crate::handler::{Handler, Started};
use crate::input::Input;
use crate::runtime::Runtime;

/// The handler, and where and how its deliveries run.
pub(super) struct Handlers<R: Runtime> {
    runtime: R,
    /// `None` in poll mode, where nothing is delivered.
    handler: Option<Handler>,
    inputs: mpsc::UnboundedSender<Input>,
    inline: Inline,
}

impl<R: Runtime> Handlers<R> {
    pub(super) fn new(
        runtime: R,
        handler: Option<Handler>,
        inputs: mpsc::UnboundedSender<Input>,
    ) -> Self {
        Self {
            runtime,
            handler,
            inputs,
            inline: Inline::new(),
        }
    }

    /// A new pass over the consumer's outputs: a fresh budget of first polls here.
    pub(super) fn new_pass(&mut self) {
        self.inline.new_pass();
    }

    /// Whether this pass may start another delivery: its budget of first polls here is not
    /// spent (a handler that is not cheap goes to its own task, and takes no budget).
    pub(super) fn may_start_here(&self) -> bool {
        self.handler.is_none() || self.inline.left > 0 || !self.inline.cheap()
    }

    /// The driver did other work since the last delivery (wrote a frame, say): the next first
    /// poll's time starts afresh rather than counting it.
    pub(super) fn interrupted(&mut self) {
        self.inline.last_end = None;
    }

    /// Runs the handler (its first poll here when [`Inline`] says so, the rest on its own task)
    /// and reports the outcome. A handler that panics, on either side, is answered
    /// [`ConsumeOutcome::ReconsumeLater`], so its messages come again. Orderly
    /// consumption needs nothing more here: the core hands out one delivery per queue at a
    /// time, so per-queue order holds across these tasks.
    pub(super) fn deliver(&mut self, consumer: &mut Consumer, delivery: Delivery) {
        let Some(handler) = self.handler.as_mut() else {
            // Poll mode delivers nothing; should a delivery come anyway, say it failed so the
            // core retries it instead of waiting for a completion that never comes.
            consumer.complete(
                self.runtime.now(),
                delivery.id,
                ConsumeOutcome::ReconsumeLater,
            );
            return;
        };
        let Delivery { id, messages, .. } = delivery;
        let started = if self.inline.try_take() {
            // The first poll here: a handler that finishes without waiting costs no task, no
            // hand-off to another thread, no completion message and no allocation (see
            // `handler`). One that waits continues on its own task, whose first poll
            // registers its waker. One clock read a delivery: its time counts from the end of
            // the one before in this pass (or the pass's start), so the consumer's own small
            // share of each is counted too.
            let started = self.inline.last_end.unwrap_or_else(|| self.runtime.now());
            let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
            let run = handler.start(messages, Some(&mut cx));
            let now = self.runtime.now();
            self.inline.last_end = Some(now);
            self.inline.took(now.saturating_duration_since(started));
            (run, Some(now))
        } else {
            (handler.start(messages, None), None)
        };
        let run = match started {
            (Started::Done(outcome), now) => {
                let now = now.unwrap_or_else(|| self.runtime.now());
                consumer.complete(now, id, outcome);
                return;
            }
            (Started::Running(run), _) => run,
        };
        let inputs = self.inputs.clone();
        self.runtime.spawn(Box::pin(async move {
            let outcome = AssertUnwindSafe(run)
                .catch_unwind()
                .await
                .unwrap_or(ConsumeOutcome::ReconsumeLater);
            let _ = inputs.unbounded_send(Input::Completed(id, outcome));
        }));
    }
}

/// When the driver polls a handler's future itself first instead of spawning it.
///
/// Spawning a task per delivery and sending its outcome back costs about 2 µs of CPU more than
/// a handler that only looks at its messages, most of it waking another thread. So while
/// handlers are that cheap, a delivery's first poll happens on the driver's task, and a
/// handler done by then completes on the spot; one that waits continues on its own task. A
/// handler that does more work gains more from running on every thread than it loses to the
/// hand-off, so once first polls average over [`Inline::CHEAP`], deliveries are spawned at
/// once again, but for an occasional probe that keeps the average current: one in
/// [`Inline::PROBE_EVERY`] deliveries, twice as rare after each slow probe (up to one in
/// [`Inline::PROBE_EVERY_MAX`]), so a handler that blocks its thread holds up the driver
/// ever more rarely. At most [`Inline::PER_PASS`] deliveries are polled here between two
/// looks at the inputs, so pulls and timers are not held up.
struct Inline {
    /// Moving average of first-poll times, in nanoseconds (weight 1/8 to the newest).
    average_nanos: u64,
    /// While handlers are not cheap: deliveries between two probes, and since the last one.
    probe_every: u32,
    since_probe: u32,
    /// First polls left in this pass.
    left: usize,
    /// When the last first poll of this pass ended.
    last_end: Option<std::time::Instant>,
}

impl Inline {
    const CHEAP: std::time::Duration = std::time::Duration::from_micros(5);
    const PROBE_EVERY: u32 = 64;
    const PROBE_EVERY_MAX: u32 = 1 << 16;
    const PER_PASS: usize = 128;

    fn new() -> Self {
        Self {
            average_nanos: 0,
            probe_every: Self::PROBE_EVERY,
            since_probe: 0,
            left: 0,
            last_end: None,
        }
    }

    fn new_pass(&mut self) {
        self.left = Self::PER_PASS;
        self.last_end = None;
    }

    fn cheap(&self) -> bool {
        u128::from(self.average_nanos) <= Self::CHEAP.as_nanos()
    }

    /// Whether the next delivery's first poll happens here (taking one from this pass).
    fn try_take(&mut self) -> bool {
        if self.left == 0 {
            return false;
        }
        if !self.cheap() {
            self.since_probe += 1;
            if self.since_probe < self.probe_every {
                return false;
            }
            self.since_probe = 0;
        }
        self.left -= 1;
        true
    }

    fn took(&mut self, time: std::time::Duration) {
        let probing = !self.cheap();
        let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
        self.average_nanos = self.average_nanos - self.average_nanos / 8 + nanos / 8;
        if self.cheap() {
            self.probe_every = Self::PROBE_EVERY;
        } else if probing && time > Self::CHEAP {
            self.probe_every = (self.probe_every * 2).min(Self::PROBE_EVERY_MAX);
        }
    }
}
