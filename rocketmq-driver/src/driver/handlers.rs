//! Running the user's handler for each delivery: on its own task, or (while handlers are
//! cheap) its first poll on the driver's task, which saves a task and a thread hand-off per
//! delivery ([`Inline`]).

use std::panic::AssertUnwindSafe;
use std::task::Context;

use consumer_core::{ConsumeOutcome, Consumer, Delivery, Handled};
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

    /// Whether there is a handler to run (none in poll mode).
    pub(super) fn has_handler(&self) -> bool {
        self.handler.is_some()
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

    /// The driver is about to do other work (write a frame, say), or ends its pass: the first
    /// polls not timed yet are timed now, and the next one's time starts afresh rather than
    /// counting that work.
    pub(super) fn interrupted(&mut self) {
        if self.inline.untimed > 0 {
            self.inline.timed(self.runtime.now());
        }
        self.inline.last_end = None;
    }

    /// When a delivery handed out now starts: the time of this pass's last clock read while
    /// first polls run here (they share reads, see [`Inline::TIMED_TOGETHER`]), else now.
    pub(super) fn start_time(&self) -> std::time::Instant {
        self.inline.last_end.unwrap_or_else(|| self.runtime.now())
    }

    /// Runs the handler for a delivery the consumer hands out now, at `now`: its first poll
    /// here when [`Inline`] says so, the rest on its own task, which reports the outcome as
    /// an input. A handler that panics, on either side, is answered
    /// [`ConsumeOutcome::ReconsumeLater`], so its messages come again. Orderly consumption
    /// needs nothing more here: the core hands out one delivery per queue at a time, so
    /// per-queue order holds across these tasks.
    pub(super) fn run(&mut self, delivery: Delivery, now: std::time::Instant) -> Handled {
        let Some(handler) = self.handler.as_mut() else {
            // Poll mode delivers nothing; should a delivery come anyway, say it failed so the
            // core retries it instead of waiting for a completion that never comes.
            return Handled::Done {
                outcome: ConsumeOutcome::ReconsumeLater,
                at: now,
            };
        };
        let Delivery { id, messages, .. } = delivery;
        let run = if self.inline.try_take() {
            // The first poll here: a handler that finishes without waiting costs no task, no
            // hand-off to another thread, no completion message and no allocation (see
            // `handler`). One that waits continues on its own task, whose first poll
            // registers its waker. A first poll's time counts from the end of the one before
            // in this pass (or the pass's start), so the consumer's own small share of each
            // is counted too; quick ones are timed together (`Inline::TIMED_TOGETHER`).
            if self.inline.last_end.is_none() {
                self.inline.last_end = Some(now);
            }
            let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
            let run = handler.start(messages, Some(&mut cx));
            let at = self
                .inline
                .first_polled(matches!(run, Started::Done(_)), || self.runtime.now());
            match run {
                Started::Done(outcome) => return Handled::Done { outcome, at },
                Started::Running(run) => run,
            }
        } else {
            match handler.start(messages, None) {
                Started::Done(outcome) => {
                    return Handled::Done {
                        outcome,
                        at: self.runtime.now(),
                    };
                }
                Started::Running(run) => run,
            }
        };
        let inputs = self.inputs.clone();
        self.runtime.spawn(Box::pin(async move {
            let outcome = AssertUnwindSafe(run)
                .catch_unwind()
                .await
                .unwrap_or(ConsumeOutcome::ReconsumeLater);
            let _ = inputs.unbounded_send(Input::Completed(id, outcome));
        }));
        Handled::Running
    }

    /// Runs the handler for `delivery`, one the consumer queued for
    /// [`Consumer::poll_delivery`] (a broker's `CONSUME_MESSAGE_DIRECTLY`), as
    /// [`Handlers::run`] does, and completes it when it finished at once.
    pub(super) fn deliver(&mut self, consumer: &mut Consumer, delivery: Delivery) {
        let id = delivery.id;
        let now = self.start_time();
        if let Handled::Done { outcome, at } = self.run(delivery, now) {
            consumer.complete(at, id, outcome);
        }
    }
}

/// When the driver polls a handler's future itself first instead of spawning it.
///
/// Spawning a task per delivery and sending its outcome back costs about 2 µs of CPU more than
/// a handler that only looks at its messages, most of it waking another thread. So while
/// handlers are that cheap, a delivery's first poll happens on the driver's task, and a
/// handler done by then completes on the spot; one that waits continues on its own task. A
/// handler that does more work gains more from running on every thread than it loses to the
/// hand-off, so once first polls take over [`Inline::CHEAP`], deliveries are spawned at
/// once again, but for an occasional probe that keeps the measure current: one in
/// [`Inline::PROBE_EVERY`] deliveries, twice as rare after each slow probe (up to one in
/// [`Inline::PROBE_EVERY_MAX`]), so a handler that blocks its thread holds up the driver
/// ever more rarely. At most [`Inline::PER_PASS`] deliveries are polled here between two
/// looks at the inputs, so pulls and timers are not held up.
///
/// First polls are timed by the wall clock, and the driver's thread is sometimes not running
/// for a while (the system gave its core to another process: a broker on the same machine
/// does, every few milliseconds). So what decides is the median of the last
/// [`Inline::SAMPLES`] timings, not an average: one timing that a preemption stretched does
/// not send the next thousands of deliveries to tasks (it did: a fifth of a drain's
/// deliveries against Java's broker, each waking another worker), while a handler that is
/// slow every time is slow in most timings. After a slow timing, first polls are timed one by
/// one until one is quick again, so a handler that blocks is found after one more poll.
struct Inline {
    /// The last timings of first polls, in nanoseconds each (a group's share, or one poll's).
    samples: [u64; Self::SAMPLES],
    /// Where the next timing goes in `samples`.
    next_sample: usize,
    /// The median of `samples` is at most [`Inline::CHEAP`] (kept as each timing comes, as it
    /// is asked at every delivery).
    cheap: bool,
    /// The newest of `samples` is over [`Inline::CHEAP`].
    last_slow: bool,
    /// While handlers are not cheap: deliveries between two probes, and since the last one.
    probe_every: u32,
    since_probe: u32,
    /// First polls left in this pass.
    left: usize,
    /// When the clock was last read in this pass: the end of the first polls timed so far.
    last_end: Option<std::time::Instant>,
    /// First polls run since `last_end`, to be timed together at the next clock read.
    untimed: u32,
}

impl Inline {
    const CHEAP: std::time::Duration = std::time::Duration::from_micros(5);
    const PROBE_EVERY: u32 = 64;
    const PROBE_EVERY_MAX: u32 = 1 << 16;
    const PER_PASS: usize = 128;
    /// Quick first polls in a row share one clock read. A clock read is about as dear as a
    /// quick handler's whole delivery through the consumer (a twentieth of its CPU at one
    /// read a delivery), and grouping a few loses nothing the median needs. A first poll
    /// that waits, one while handlers are not cheap (a probe), and one after a slow timing
    /// are timed alone and at once.
    const TIMED_TOGETHER: u32 = 8;
    /// Timings the median is taken over: two slow ones of the last three make handlers
    /// not cheap, two quick ones cheap again.
    const SAMPLES: usize = 3;

    fn new() -> Self {
        Self {
            samples: [0; Self::SAMPLES],
            next_sample: 0,
            cheap: true,
            last_slow: false,
            probe_every: Self::PROBE_EVERY,
            since_probe: 0,
            left: 0,
            last_end: None,
            untimed: 0,
        }
    }

    fn new_pass(&mut self) {
        self.left = Self::PER_PASS;
        self.last_end = None;
        self.untimed = 0;
    }

    /// A first poll just ran (`done`: its handler finished): the time the driver hands its
    /// completion, from `clock` when it is timed now, else the last clock read.
    fn first_polled(
        &mut self,
        done: bool,
        clock: impl FnOnce() -> std::time::Instant,
    ) -> std::time::Instant {
        self.untimed += 1;
        match self.last_end {
            Some(last)
                if done
                    && self.cheap()
                    && !self.last_was_slow()
                    && self.untimed < Self::TIMED_TOGETHER =>
            {
                last
            }
            _ => {
                let now = clock();
                self.timed(now);
                now
            }
        }
    }

    /// The clock read `now`: the first polls since the last read share the time between.
    fn timed(&mut self, now: std::time::Instant) {
        if let Some(last) = self.last_end {
            let each = now.saturating_duration_since(last) / self.untimed.max(1);
            self.took(each);
        }
        self.untimed = 0;
        self.last_end = Some(now);
    }

    /// Whether first polls are cheap: the median of the last timings is.
    fn cheap(&self) -> bool {
        self.cheap
    }

    fn last_was_slow(&self) -> bool {
        self.last_slow
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

    /// First polls just timed took `each`. They were one probe when first polls were not
    /// cheap before them (a probe is timed alone).
    fn took(&mut self, each: std::time::Duration) {
        let probing = !self.cheap;
        let cheap_nanos = u64::try_from(Self::CHEAP.as_nanos()).unwrap_or(u64::MAX);
        let nanos = u64::try_from(each.as_nanos()).unwrap_or(u64::MAX);
        self.samples[self.next_sample] = nanos;
        self.next_sample = (self.next_sample + 1) % Self::SAMPLES;
        let mut sorted = self.samples;
        sorted.sort_unstable();
        self.cheap = sorted[Self::SAMPLES / 2] <= cheap_nanos;
        self.last_slow = nanos > cheap_nanos;
        if self.cheap {
            self.probe_every = Self::PROBE_EVERY;
        } else if probing && each > Self::CHEAP {
            self.probe_every = (self.probe_every * 2).min(Self::PROBE_EVERY_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    use super::Inline;

    /// An `Inline` in a fresh pass whose clock was read at `start`.
    fn in_pass(start: Instant) -> Inline {
        let mut inline = Inline::new();
        inline.new_pass();
        inline.last_end = Some(start);
        inline
    }

    /// Quick handlers share one clock read per `TIMED_TOGETHER` first polls; the ones between
    /// complete at the last read, and each is counted with its share of the time.
    #[test]
    fn quick_first_polls_share_a_clock_read() {
        let start = Instant::now();
        let mut inline = in_pass(start);
        let reads = Cell::new(0);
        let read_at = start + Duration::from_micros(8);
        let clock = || {
            reads.set(reads.get() + 1);
            read_at
        };
        for _ in 1..Inline::TIMED_TOGETHER {
            assert_eq!(inline.first_polled(true, clock), start);
        }
        assert_eq!(reads.get(), 0, "no clock read before the group is full");
        assert_eq!(inline.first_polled(true, clock), read_at);
        assert_eq!(reads.get(), 1);
        assert_eq!(inline.untimed, 0);
        assert!(inline.cheap());
        assert!(
            inline.samples.contains(&1_000),
            "8 µs over 8 polls: {:?}",
            inline.samples
        );
    }

    /// A first poll whose handler waits is timed alone and at once: it goes on on its own task.
    #[test]
    fn a_waiting_first_poll_reads_the_clock() {
        let start = Instant::now();
        let mut inline = in_pass(start);
        let later = start + Duration::from_micros(3);
        assert_eq!(inline.first_polled(true, || later), start);
        assert_eq!(inline.first_polled(false, || later), later);
        assert_eq!(inline.untimed, 0);
    }

    /// A slow handler turns first polls here off: after a slow group, the next first poll is
    /// timed alone, and a second slow timing sends the next deliveries to tasks of their own
    /// but for the probes.
    #[test]
    fn slow_handlers_turn_first_polls_off() {
        let start = Instant::now();
        let mut inline = in_pass(start);
        let slow = start + Duration::from_micros(200) * Inline::TIMED_TOGETHER;
        for _ in 0..Inline::TIMED_TOGETHER {
            inline.first_polled(true, || slow);
        }
        assert!(inline.cheap(), "one slow timing alone decides nothing");
        let reads = Cell::new(0);
        let slower = slow + Duration::from_micros(200);
        let at = inline.first_polled(true, || {
            reads.set(reads.get() + 1);
            slower
        });
        assert_eq!(
            (at, reads.get()),
            (slower, 1),
            "after a slow timing, one poll is timed"
        );
        assert!(
            !inline.cheap(),
            "two slow timings of three: {:?}",
            inline.samples
        );
        let here = (0..Inline::PROBE_EVERY * 2)
            .filter(|_| inline.try_take())
            .count();
        assert_eq!(here, 2, "only the probes are polled here");
    }

    /// A group that a preemption stretched (4 ms for 8 quick handlers) keeps first polls here:
    /// the next one is timed alone, is quick, and quick handlers are timed in groups again.
    #[test]
    fn a_preempted_group_keeps_first_polls_here() {
        let start = Instant::now();
        let mut inline = in_pass(start);
        let stretched = start + Duration::from_millis(4);
        for _ in 0..Inline::TIMED_TOGETHER {
            inline.first_polled(true, || stretched);
        }
        let quick = stretched + Duration::from_nanos(500);
        assert_eq!(inline.first_polled(true, || quick), quick);
        assert!(inline.cheap(), "timings {:?}", inline.samples);
        assert!(
            inline.try_take(),
            "the next delivery's first poll happens here"
        );
        assert_eq!(
            inline.first_polled(true, || quick + Duration::from_micros(1)),
            quick,
            "quick again: grouped, no clock read"
        );
    }

    /// The driver doing other work times the group so far, and the next first poll's time
    /// starts afresh.
    #[test]
    fn interruption_times_the_group() {
        let start = Instant::now();
        let mut inline = in_pass(start);
        inline.first_polled(true, || start);
        inline.first_polled(true, || start);
        inline.timed(start + Duration::from_micros(400));
        assert_eq!(inline.untimed, 0);
        assert!(
            inline.samples.contains(&200_000) && inline.last_was_slow(),
            "two polls of 200 µs each were counted: {:?}",
            inline.samples
        );
    }
}
