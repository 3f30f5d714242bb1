//! The driver task: owns the [`Consumer`] by value and carries out its outputs.
//!
//! Everything that happens outside the task (a connection opened, a frame arrived, a handler
//! finished, the application asked for something) comes in over one unbounded channel as an
//! [`Input`]; the consumer's single timer is a sleep re-armed to [`Consumer::poll_timeout`]. The
//! loop compares the clock with that deadline before it waits, as quinn's endpoint driver does,
//! so a timer already due is handled without a trip through the runtime's timer wheel.
//!
//! Poll mode (the lite pull consumer) has no handler: the application's requests arrive as
//! [`Input::Pull`], and the answers that depend on the brokers wait in [`Waiters`] for the
//! events that settle them.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use consumer_core::output::Polled;
use consumer_core::{
    ConnId, ConsumeOutcome, Consumer, Delivery, DeliveryId, Event, MessageQueue, Output,
    ShutdownReport,
};
use futures_channel::{mpsc, oneshot};
use futures_util::future::{self, AbortHandle, Abortable, Either};
use futures_util::{FutureExt, StreamExt};
use proto::message::Message;
use proto::{Command, HeaderEncoding, frame};

use crate::connection;
use crate::lite_pull::{CommitReport, ControlError};
use crate::offset_file::OffsetFile;
use crate::runtime::{BoxFuture, Runtime};

/// The user's handler, boxed once so the driver is not generic over it.
pub(crate) type Handler = Arc<dyn Fn(Vec<Message>) -> BoxFuture<ConsumeOutcome> + Send + Sync>;

/// An observer of the consumer's events.
pub(crate) type EventSink = Arc<dyn Fn(&Event) + Send + Sync>;

/// The request name the core gives commits in its `RequestFailed` events.
const COMMIT_REQUEST: &str = "UPDATE_CONSUMER_OFFSET";
/// The request name the core gives `seek_to_edge`'s lookups in its `RequestFailed` events.
const EDGE_REQUEST: &str = "GET_MIN_OFFSET/GET_MAX_OFFSET";

/// What the driver task is told.
#[derive(Debug)]
pub(crate) enum Input {
    /// The connection opened.
    Connected(ConnId),
    /// The connection could not be opened, broke, or the peer sent something that is not a frame.
    Lost(ConnId),
    /// A frame arrived.
    Frame(ConnId, Command),
    /// A handler finished.
    Completed(DeliveryId, ConsumeOutcome),
    /// The user asked for a graceful shutdown.
    Shutdown,
    /// A lite pull consumer's request.
    Pull(PullCommand),
}

/// What a lite pull consumer asks of its driver. Every command but `Take` first answers a
/// `Take` the driver is holding with `None`, so the asker, once answered, knows every
/// message it has been given.
#[derive(Debug)]
pub(crate) enum PullCommand {
    /// Up to `max` messages of one queue, as soon as some are ready.
    Take {
        max: usize,
        reply: oneshot::Sender<Option<Polled>>,
    },
    /// Nothing but the `Take` answer described above.
    Sync(oneshot::Sender<()>),
    /// Move `queue` to `offset`.
    Seek {
        queue: MessageQueue,
        offset: i64,
        reply: oneshot::Sender<Result<(), ControlError>>,
    },
    /// Move `queue` to its first offset, or its end.
    SeekToEdge {
        queue: MessageQueue,
        to_end: bool,
        reply: oneshot::Sender<Result<(), ControlError>>,
    },
    /// Stop `queue`.
    Pause {
        queue: MessageQueue,
        reply: oneshot::Sender<()>,
    },
    /// Start `queue` again.
    Resume {
        queue: MessageQueue,
        reply: oneshot::Sender<()>,
    },
    /// Commit every queue and answer when the brokers have.
    Commit(oneshot::Sender<CommitReport>),
    /// Messages given out but not seen by the application, back to the core's cache (sent
    /// before a pause, commit or shutdown, which then see them as not consumed). Refused by
    /// the core only when their queue was revoked or moved meanwhile: its position is no
    /// longer theirs then.
    Unread(Polled),
    /// The first offset of `queue` stored at or after `unix_ms`.
    OffsetForTimestamp {
        queue: MessageQueue,
        unix_ms: i64,
        reply: oneshot::Sender<Result<i64, ControlError>>,
    },
    /// The queues owned now.
    Assignment(oneshot::Sender<Vec<MessageQueue>>),
}

/// The driver's side of a connection task.
struct Conn {
    /// The peer, for logs.
    addr: String,
    /// Encoded frames for the writer.
    writes: mpsc::UnboundedSender<Bytes>,
    /// Ends the connection task (and so drops the socket).
    abort: AbortHandle,
}

/// The task that drives one consumer.
pub(crate) struct Driver<R: Runtime> {
    pub(crate) runtime: R,
    pub(crate) consumer: Consumer,
    /// `None` in poll mode, where nothing is delivered.
    pub(crate) handler: Option<Handler>,
    pub(crate) events: Option<EventSink>,
    /// Broadcasting: where `StoreOffsets` goes.
    pub(crate) offsets: Option<OffsetFile>,
    /// Broadcasting: a commit is confirmed by the local store, all queues at once.
    pub(crate) broadcasting: bool,
    pub(crate) inputs_tx: mpsc::UnboundedSender<Input>,
    pub(crate) inputs: mpsc::UnboundedReceiver<Input>,
    pub(crate) done: oneshot::Sender<ShutdownReport>,
}

impl<R: Runtime> Driver<R> {
    /// Runs until the consumer has closed, then reports how shutdown went.
    pub(crate) async fn run(self) {
        let Self {
            runtime,
            mut consumer,
            handler,
            events,
            offsets,
            broadcasting,
            inputs_tx,
            mut inputs,
            done,
        } = self;
        let mut io = Io {
            runtime: &runtime,
            handler: handler.as_ref(),
            events: events.as_ref(),
            offsets: offsets.as_ref(),
            offsets_stored: true,
            inputs_tx: &inputs_tx,
            conns: BTreeMap::new(),
            report: None,
            waiters: Waiters::default(),
            broadcasting,
            inline: Inline::new(),
        };
        let mut timer: Option<(Instant, BoxFuture<()>)> = None;
        loop {
            io.drain(&mut consumer);
            if consumer.is_closed() {
                break;
            }
            let now = runtime.now();
            if consumer.poll_timeout().is_some_and(|at| at <= now) {
                consumer.handle_timeout(now);
                continue;
            }
            match consumer.poll_timeout() {
                Some(at) => {
                    if timer.as_ref().is_none_or(|(armed, _)| *armed != at) {
                        timer = Some((at, runtime.sleep_until(at)));
                    }
                }
                None => timer = None,
            }
            let input = match &mut timer {
                Some((_, sleep)) => match future::select(inputs.next(), sleep.as_mut()).await {
                    Either::Left((input, _)) => input,
                    Either::Right(((), _)) => {
                        // Fired: the loop reads the clock and handles what is due.
                        timer = None;
                        continue;
                    }
                },
                None => inputs.next().await,
            };
            // The driver holds a sender itself, so the channel never ends while it runs.
            let Some(input) = input else { break };
            io.handle(&mut consumer, runtime.now(), input);
        }
        for conn in io.conns.values() {
            conn.abort.abort();
        }
        let mut report = io.report.take().unwrap_or_default();
        if !io.offsets_stored {
            // The final table never reached the file: nothing is committed after all.
            tracing::error!(
                queues = report.committed.len(),
                "the final broadcasting offsets were not stored"
            );
            let lost = std::mem::take(&mut report.committed);
            report
                .uncommitted
                .extend(lost.into_iter().map(|(mq, _)| mq));
            report.uncommitted.sort();
        }
        // The user may have stopped waiting for the report; nothing to do then.
        let _ = done.send(report);
    }
}

/// Application requests waiting for the brokers (poll mode).
#[derive(Default)]
struct Waiters {
    /// A `Take` with nothing ready yet.
    take: Option<(usize, oneshot::Sender<Option<Polled>>)>,
    commit: Option<CommitWait>,
    /// A `seek_to_edge` waiting for the queue's reset.
    edge: Option<EdgeWait>,
    /// `offset_for_timestamp` answers by request number (the core's deadline bounds them).
    searches: BTreeMap<u64, oneshot::Sender<Result<i64, ControlError>>>,
}

/// A `seek_to_edge` of a queue and where to answer. The core answers every one (a reset of
/// the queue, or a failure by its request deadline at the latest), so nothing here times out.
type EdgeWait = (MessageQueue, oneshot::Sender<Result<(), ControlError>>);

/// A commit waiting for one answer per queue (the core answers each, by its request deadline
/// at the latest).
struct CommitWait {
    expected: BTreeSet<MessageQueue>,
    committed: Vec<(MessageQueue, i64)>,
    answers: usize,
    reply: oneshot::Sender<CommitReport>,
}

impl CommitWait {
    fn finish(self) {
        let confirmed: BTreeSet<&MessageQueue> = self.committed.iter().map(|(mq, _)| mq).collect();
        let unconfirmed = self
            .expected
            .iter()
            .filter(|mq| !confirmed.contains(mq))
            .cloned()
            .collect();
        let mut committed = self.committed;
        committed.sort();
        // The asker may have given up; nothing to do then.
        let _ = self.reply.send(CommitReport {
            committed,
            unconfirmed,
        });
    }
}

impl Waiters {
    /// Settles what `event` answers.
    fn on_event(&mut self, event: &Event, broadcasting: bool) {
        match event {
            Event::Committed(offsets) => {
                if let Some(commit) = &mut self.commit {
                    commit.answers += offsets.len();
                    commit.committed.extend(offsets.iter().cloned());
                    if (broadcasting || commit.answers >= commit.expected.len())
                        && let Some(commit) = self.commit.take()
                    {
                        commit.finish();
                    }
                }
            }
            Event::RequestFailed {
                request, reason, ..
            } => {
                if *request == COMMIT_REQUEST
                    && let Some(commit) = &mut self.commit
                {
                    commit.answers += 1;
                    if commit.answers >= commit.expected.len()
                        && let Some(commit) = self.commit.take()
                    {
                        commit.finish();
                    }
                } else if *request == EDGE_REQUEST
                    && let Some((_, reply)) = self.edge.take()
                {
                    let _ = reply.send(Err(ControlError::Failed(reason.clone())));
                }
            }
            Event::OffsetReset { queue, .. } => {
                if self.edge.as_ref().is_some_and(|(mq, _)| mq == queue)
                    && let Some((_, reply)) = self.edge.take()
                {
                    let _ = reply.send(Ok(()));
                }
            }
            Event::OffsetForTimestamp {
                request, offset, ..
            } => {
                if let Some(reply) = self.searches.remove(request) {
                    let _ = reply.send(offset.clone().map_err(ControlError::Failed));
                }
            }
            _ => {}
        }
    }
}

/// The driver's I/O state, apart from the consumer it feeds.
struct Io<'a, R: Runtime> {
    runtime: &'a R,
    handler: Option<&'a Handler>,
    events: Option<&'a EventSink>,
    offsets: Option<&'a OffsetFile>,
    /// Whether the last `StoreOffsets` reached the file.
    offsets_stored: bool,
    inputs_tx: &'a mpsc::UnboundedSender<Input>,
    conns: BTreeMap<ConnId, Conn>,
    report: Option<ShutdownReport>,
    waiters: Waiters,
    broadcasting: bool,
    inline: Inline,
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
}

impl Inline {
    const CHEAP: std::time::Duration = std::time::Duration::from_micros(5);
    const PROBE_EVERY: u32 = 64;
    const PROBE_EVERY_MAX: u32 = 1 << 16;
    const PER_PASS: usize = 32;

    fn new() -> Self {
        Self {
            average_nanos: 0,
            probe_every: Self::PROBE_EVERY,
            since_probe: 0,
            left: 0,
        }
    }

    fn new_pass(&mut self) {
        self.left = Self::PER_PASS;
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

impl<R: Runtime> Io<'_, R> {
    /// Feeds one input to the consumer. Inputs about connections the consumer already closed
    /// are dropped: it expects nothing more from them.
    fn handle(&mut self, consumer: &mut Consumer, now: Instant, input: Input) {
        match input {
            Input::Connected(conn) => {
                if let Some(c) = self.conns.get(&conn) {
                    tracing::debug!(addr = %c.addr, "connected");
                    consumer.handle_connected(now, conn);
                }
            }
            Input::Lost(conn) => {
                if let Some(c) = self.conns.remove(&conn) {
                    tracing::warn!(addr = %c.addr, "connection lost or refused");
                    consumer.handle_disconnected(now, conn);
                }
            }
            Input::Frame(conn, command) => {
                if self.conns.contains_key(&conn) {
                    consumer.handle_command(now, conn, command);
                }
            }
            Input::Completed(id, outcome) => consumer.complete(now, id, outcome),
            Input::Shutdown => {
                // A lite pull consumer shutting down no longer reads; its `Take` ends with it.
                self.waiters.take = None;
                consumer.shutdown(now);
            }
            Input::Pull(command) => self.pull_command(consumer, now, command),
        }
    }

    /// Carries out a lite pull consumer's request.
    fn pull_command(&mut self, consumer: &mut Consumer, now: Instant, command: PullCommand) {
        if !matches!(command, PullCommand::Take { .. })
            && let Some((_, reply)) = self.waiters.take.take()
        {
            let _ = reply.send(None);
        }
        match command {
            PullCommand::Take { max, reply } => self.waiters.take = Some((max, reply)),
            PullCommand::Sync(reply) => {
                let _ = reply.send(());
            }
            PullCommand::Seek {
                queue,
                offset,
                reply,
            } => {
                let done = consumer
                    .seek(now, &queue, offset)
                    .map_err(ControlError::Rejected);
                let _ = reply.send(done);
            }
            PullCommand::SeekToEdge {
                queue,
                to_end,
                reply,
            } => match consumer.seek_to_edge(now, &queue, to_end) {
                Ok(()) => {
                    if let Some((_, earlier)) = self.waiters.edge.replace((queue, reply)) {
                        let _ = earlier.send(Err(ControlError::Superseded));
                    }
                }
                Err(e) => {
                    let _ = reply.send(Err(ControlError::Rejected(e)));
                }
            },
            PullCommand::Pause { queue, reply } => {
                consumer.pause(&queue);
                let _ = reply.send(());
            }
            PullCommand::Resume { queue, reply } => {
                consumer.resume(now, &queue);
                let _ = reply.send(());
            }
            PullCommand::Unread(unread) => {
                consumer.unread(now, unread);
            }
            PullCommand::Commit(reply) => {
                if let Some(earlier) = self.waiters.commit.take() {
                    earlier.finish();
                }
                let expected: BTreeSet<MessageQueue> = consumer.commit(now).into_iter().collect();
                let wait = CommitWait {
                    expected,
                    committed: Vec::new(),
                    answers: 0,
                    reply,
                };
                // Nothing started yet: nothing to wait for.
                if wait.expected.is_empty() {
                    wait.finish();
                } else {
                    self.waiters.commit = Some(wait);
                }
            }
            PullCommand::OffsetForTimestamp {
                queue,
                unix_ms,
                reply,
            } => {
                let request = consumer.offset_for_timestamp(now, &queue, unix_ms);
                self.waiters.searches.insert(request, reply);
            }
            PullCommand::Assignment(reply) => {
                let _ = reply.send(consumer.assignment().cloned().collect());
            }
        }
    }

    /// Carries out everything the consumer asks for, and hands ready messages to a waiting
    /// `Take` (which may make the consumer pull, so its outputs are drained again).
    fn drain(&mut self, consumer: &mut Consumer) {
        self.inline.new_pass();
        loop {
            while let Some(output) = consumer.poll_output() {
                match output {
                    Output::Connect { conn, addr } => self.connect(conn, addr),
                    Output::Send { conn, command } => self.send(conn, &command),
                    Output::Close { conn } => {
                        if let Some(conn) = self.conns.remove(&conn) {
                            conn.abort.abort();
                        }
                    }
                    Output::Deliver(delivery) => self.deliver(consumer, delivery),
                    Output::StoreOffsets(table) => self.store_offsets(&table),
                    Output::Event(event) => {
                        trace_event(&event);
                        self.waiters.on_event(&event, self.broadcasting);
                        if let Some(sink) = self.events {
                            sink(&event);
                        }
                        if let Event::Closed(report) = event {
                            self.report = Some(report);
                        }
                    }
                    // Outputs added to the core later are not this driver's business yet.
                    _ => {}
                }
            }
            if !self.serve_take(consumer) {
                return;
            }
        }
    }

    /// Answers a waiting `Take` when messages are ready; returns whether it did.
    fn serve_take(&mut self, consumer: &mut Consumer) -> bool {
        let Some((max, reply)) = self.waiters.take.take() else {
            return false;
        };
        if reply.is_canceled() {
            return false;
        }
        match consumer.poll_messages(self.runtime.now(), max) {
            Some(polled) => {
                // Taken messages count as consumed. The send fails only if the lite pull
                // consumer was dropped since the check above; a dropped consumer has stopped
                // reading, so the batch is lost to it as its unread messages are (use
                // `shutdown`, which moves unread messages back, to avoid that).
                let _ = reply.send(Some(polled));
                true
            }
            None => {
                self.waiters.take = Some((max, reply));
                false
            }
        }
    }

    /// Broadcasting: replaces the offset file's table. A failed write is logged and tried
    /// again with the next table (each holds every queue); a final one that fails turns the
    /// shutdown report's commits into uncommitted queues.
    fn store_offsets(&mut self, table: &[(MessageQueue, i64)]) {
        let Some(file) = self.offsets else {
            tracing::error!("broadcasting offsets to store, but no offset file is configured");
            self.offsets_stored = false;
            return;
        };
        match file.store(table) {
            Ok(()) => self.offsets_stored = true,
            Err(e) => {
                tracing::error!(path = %file.path().display(), error = %e, "cannot store the broadcasting offsets");
                self.offsets_stored = false;
            }
        }
    }

    /// Starts a task that opens `addr`, then reads frames into the input channel and writes
    /// what [`Io::send`] queues, until either side fails or the driver aborts it.
    fn connect(&mut self, conn: ConnId, addr: String) {
        let (writes, queued) = mpsc::unbounded();
        let (abort, registration) = AbortHandle::new_pair();
        let inputs = self.inputs_tx.clone();
        let runtime = self.runtime.clone();
        let peer = addr.clone();
        let task = async move {
            let Ok(stream) = runtime.connect(peer).await else {
                let _ = inputs.unbounded_send(Input::Lost(conn));
                return;
            };
            if inputs.unbounded_send(Input::Connected(conn)).is_err() {
                return;
            }
            // Stops when the stream ends, fails or carries something that is not a frame, a
            // write fails, the driver drops the sender, or the driver is gone.
            connection::run(stream, queued, |command| {
                if inputs.unbounded_send(Input::Frame(conn, command)).is_err() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .await;
            let _ = inputs.unbounded_send(Input::Lost(conn));
        };
        self.runtime
            .spawn(Box::pin(Abortable::new(task, registration).map(drop)));
        self.conns.insert(
            conn,
            Conn {
                addr,
                writes,
                abort,
            },
        );
    }

    /// Encodes `command` and queues it for `conn`'s writer. A command for a connection that is
    /// already gone is dropped: its loss is on its way to the consumer, which fails the request.
    /// So is one that does not encode (larger than a frame may be): the consumer's request
    /// deadline fails it, as it would any unanswered request.
    fn send(&mut self, conn: ConnId, command: &Command) {
        let Some(conn) = self.conns.get(&conn) else {
            return;
        };
        let mut buf = BytesMut::new();
        if frame::encode(command, HeaderEncoding::Json, &mut buf).is_ok() {
            let _ = conn.writes.unbounded_send(buf.freeze());
        }
    }

    /// Runs the handler (its first poll here when [`Inline`] says so, the rest on its own task)
    /// and reports the outcome. A handler that panics, on either side, is answered
    /// [`ConsumeOutcome::ReconsumeLater`], so its messages come again. Orderly
    /// consumption needs nothing more here: the core hands out one delivery per queue at a
    /// time, so per-queue order holds across these tasks.
    fn deliver(&mut self, consumer: &mut Consumer, delivery: Delivery) {
        let Some(handler) = self.handler else {
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
        let handler = Arc::clone(handler);
        let mut run: BoxFuture<ConsumeOutcome> = Box::pin(
            AssertUnwindSafe(async move { handler(messages).await })
                .catch_unwind()
                .map(|outcome| outcome.unwrap_or(ConsumeOutcome::ReconsumeLater)),
        );
        if self.inline.try_take() {
            // The first poll here: a handler that finishes without waiting costs no task, no
            // hand-off to another thread and no completion message. One that waits continues
            // on its own task, whose first poll registers its waker.
            let started = self.runtime.now();
            let polled = run.as_mut().poll(&mut Context::from_waker(
                futures_util::task::noop_waker_ref(),
            ));
            let now = self.runtime.now();
            self.inline.took(now - started);
            if let Poll::Ready(outcome) = polled {
                consumer.complete(now, id, outcome);
                return;
            }
        }
        let inputs = self.inputs_tx.clone();
        self.runtime.spawn(Box::pin(async move {
            let outcome = run.await;
            let _ = inputs.unbounded_send(Input::Completed(id, outcome));
        }));
    }
}

/// Logs what changes a consumer's shape: assignments, offset corrections, leases, failures.
/// Nothing per message: those events do not exist, and `Committed` is per commit.
fn trace_event(event: &Event) {
    match event {
        Event::Assigned(queues) => tracing::info!(?queues, "queues assigned"),
        Event::Revoked(queues) => tracing::info!(?queues, "queues revoked"),
        Event::OffsetMoved { queue, from, to } => {
            tracing::warn!(?queue, from, to, "broker moved an illegal offset")
        }
        Event::OffsetReset { queue, offset } => tracing::info!(?queue, offset, "offset reset"),
        Event::LeaseAcquired(queues) => tracing::info!(?queues, "queue locks acquired"),
        Event::LeaseLost(queues) => tracing::warn!(?queues, "queue locks lost"),
        Event::SendBackFailed { queue, offset } => tracing::warn!(
            ?queue,
            offset,
            "failed message could not be sent back; it will be redelivered locally"
        ),
        Event::GaveUp { queue, offset } => {
            tracing::warn!(?queue, offset, "message gave up after max_reconsume_times")
        }
        Event::RequestFailed {
            addr,
            request,
            reason,
        } => tracing::debug!(%addr, request, ?reason, "request failed; the consumer retries"),
        Event::CorruptMessages { queue, error } => {
            tracing::warn!(?queue, %error, "corrupt records in a pull response")
        }
        Event::Committed(offsets) => tracing::debug!(?offsets, "offsets committed"),
        Event::Closed(report) => tracing::info!(?report, "consumer closed"),
        _ => {}
    }
}
