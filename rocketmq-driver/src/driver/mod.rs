//! The driver task: owns the [`Consumer`] by value and carries out its outputs.
//!
//! What happens on the connections the task reads itself (`conns`); everything else that
//! happens outside it comes in over one unbounded channel as an [`Input`]; the consumer's
//! single timer is a sleep re-armed to [`Consumer::poll_timeout`]. The
//! loop compares the clock with that deadline before it waits, as quinn's endpoint driver does,
//! so a timer already due is handled without a trip through the runtime's timer wheel.
//!
//! What the task does is split by duty: `conns` the connection tasks, `handlers` running the
//! user's handler (with the inline first poll), `waiters` the lite pull consumer's requests
//! waiting for their answers (poll mode has no handler: the application's requests arrive as
//! [`Input::Pull`]), `trace` what is logged.

pub(crate) mod conns;
mod handlers;
pub(crate) mod hooks;
mod trace;
mod waiters;
pub(crate) mod wake;

use std::time::Instant;

use consumer_core::{Consumer, Event, MessageQueue, Output, ShutdownReport};
use futures_channel::{mpsc, oneshot};

use crate::control::ControlError;
use crate::handler::Handler;
use crate::input::{EventSink, Input, PullCommand};
use crate::offset_file::OffsetFile;
use crate::runtime::Runtime;
use conns::Conns;
use handlers::Handlers;
use hooks::{Hooks, RebalanceHooks};
use waiters::Waiters;
use wake::{Wake, Woken};

/// How long a closing consumer waits for its last message trace records to be sent.
const TRACE_FLUSH: std::time::Duration = std::time::Duration::from_secs(3);
/// Most connection events a push consumer with a handler is fed in one pass: the first, and
/// those already read with it (a read of the socket brings several answers when the broker is
/// quick). The pulls their answers make go out in one write, then their messages are
/// delivered, and the frames still read wait for the next pass.
///
/// Few, so that the pulls go out soon and the broker works on them while the consumer delivers
/// the messages that came with the next frames. Fed all at once (up to 32), every queue's
/// answers came in one read and every queue's next pull in one write: the broker answered
/// them all while the consumer had next to nothing left to deliver, and the consumer slept
/// through the round trip each time (two wake-ups, about 35 µs each on this benchmark's VM).
/// `ceiling`, 8 queues, pulls of 32: at 32 frames a pass the consumer's thread blocked once a
/// read; at 4 it ran through, at 1.3× the rate (1.4× at 1 KiB) and the same CPU a message.
/// Fewer than 4 means more writes for no more rate (a write costs the sender the broker's
/// receive path).
const FEED_AT_ONCE: usize = 4;
/// The same without a handler (a lite pull consumer): a pass only caches what the frames bring
/// and answers the application's `Take`, so there is no delivering to overlap with the
/// broker's work, and frames fed 4 at a time cost the lite pull stream a third more CPU a
/// message (`ceiling`: 1.0-1.24 -> 1.55-1.9 µs).
const FEED_AT_ONCE_POLLED: usize = 32;

/// The task that drives one consumer.
pub(crate) struct Driver<R: Runtime> {
    pub(crate) runtime: R,
    pub(crate) consumer: Consumer,
    /// `None` in poll mode, where nothing is delivered.
    pub(crate) handler: Option<Handler>,
    pub(crate) events: Option<EventSink>,
    /// Broadcasting: where `StoreOffsets` goes.
    pub(crate) offsets: Option<OffsetFile>,
    pub(crate) inputs_tx: mpsc::UnboundedSender<Input>,
    pub(crate) inputs: mpsc::UnboundedReceiver<Input>,
    pub(crate) done: oneshot::Sender<ShutdownReport>,
    /// TLS for every connection, when the client has it.
    pub(crate) tls: Option<crate::transport::Connector>,
    /// The application's rebalance hooks.
    pub(crate) hooks: RebalanceHooks,
    /// Message trace: where its records go.
    pub(crate) traces: Option<crate::trace_dispatch::TraceQueue>,
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
            inputs_tx,
            mut inputs,
            done,
            tls,
            hooks,
            traces,
        } = self;
        let mut io = Io {
            runtime: runtime.clone(),
            events,
            offsets,
            offsets_stored: true,
            conns: Conns::new(runtime.clone(), tls),
            hooks: Hooks::new(runtime.clone(), hooks, inputs_tx.clone()),
            traces,
            handlers: Handlers::new(runtime.clone(), handler, inputs_tx),
            report: None,
            waiters: Waiters::default(),
        };
        let mut wake = Wake::new(runtime.clone());
        let feed_at_once = if io.handlers.has_handler() {
            // Deliveries are asked for as each pass has room for them (see `Io::drain`).
            consumer.deliver_on_demand();
            FEED_AT_ONCE
        } else {
            FEED_AT_ONCE_POLLED
        };
        loop {
            let more = io.drain(&mut consumer);
            io.conns.flush().await;
            if consumer.is_closed() {
                break;
            }
            let deadline = consumer.poll_timeout();
            let woken = if !more {
                wake.next(deadline, &mut inputs, &mut io.conns).await
            } else {
                // Deliveries left for the next pass: a look at what came meanwhile, no wait.
                match wake::ready_now(wake.next(deadline, &mut inputs, &mut io.conns)).await {
                    Some(woken) => woken,
                    None => continue,
                }
            };
            match woken {
                Woken::Due(now) => consumer.handle_timeout(now),
                Woken::Input(input) => {
                    // The driver holds a sender itself, so the channel never ends while it runs.
                    let Some(input) = input else { break };
                    io.handle(&mut consumer, runtime.now(), input);
                }
                Woken::Conn(conn, event) => {
                    let now = runtime.now();
                    wake::feed(&mut consumer, now, conn, event);
                    // Some of the frames read with it too, before the pass: the pulls their
                    // answers make go out in one write (see `Conns::send`, `FEED_AT_ONCE`).
                    for _ in 1..feed_at_once {
                        let Some(Some((conn, event))) =
                            wake::ready_now(io.conns.next_event()).await
                        else {
                            break;
                        };
                        wake::feed(&mut consumer, now, conn, event);
                    }
                }
            }
        }
        io.conns.abort_all();
        if let Some(traces) = io.traces.take() {
            traces.close(&runtime, TRACE_FLUSH).await;
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

/// The driver's I/O state, apart from the consumer it feeds.
struct Io<R: Runtime> {
    runtime: R,
    events: Option<EventSink>,
    offsets: Option<OffsetFile>,
    /// Whether the last `StoreOffsets` reached the file.
    offsets_stored: bool,
    conns: Conns<R>,
    handlers: Handlers<R>,
    hooks: Hooks<R>,
    traces: Option<crate::trace_dispatch::TraceQueue>,
    report: Option<ShutdownReport>,
    waiters: Waiters,
}

impl<R: Runtime> Io<R> {
    /// Feeds one input to the consumer.
    fn handle(&mut self, consumer: &mut Consumer, now: Instant, input: Input) {
        match input {
            Input::Completed(id, outcome) => consumer.complete(now, id, outcome),
            Input::Shutdown => {
                // A lite pull consumer shutting down no longer reads; its `Take` ends with it.
                self.waiters.take = None;
                consumer.shutdown(now);
            }
            Input::Pull(command) => self.pull_command(consumer, now, command),
            Input::Credentials(credentials) => consumer.set_credentials(credentials),
            Input::Pause(queues) => {
                for queue in &queues {
                    consumer.pause(queue);
                }
            }
            Input::Resume(queues) => {
                for queue in &queues {
                    consumer.resume(now, queue);
                }
            }
            Input::RevokeDone(request) => consumer.revoke_done(now, request),
        }
    }

    /// Carries out a lite pull consumer's request.
    fn pull_command(&mut self, consumer: &mut Consumer, now: Instant, command: PullCommand) {
        if !command.leaves_take()
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
                Ok(request) => {
                    self.waiters.seeks.insert(request, reply);
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
                let request = consumer.commit(now);
                self.waiters.commits.insert(request, reply);
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
                let _ = reply.send(consumer.assignment().collect());
            }
            PullCommand::Stats(reply) => {
                let _ = reply.send(self.stats(consumer));
            }
            #[cfg(feature = "metrics")]
            PullCommand::Metrics(reply) => {
                let _ = reply.send((self.stats(consumer), consumer.latency_buckets()));
            }
            PullCommand::Subscribe {
                topic,
                expression,
                sql92,
                reply,
            } => {
                let done = if sql92 {
                    consumer.subscribe_sql92(now, &topic, &expression)
                } else {
                    consumer.subscribe(now, &topic, &expression)
                };
                let _ = reply.send(done.map_err(ControlError::Rejected));
            }
            PullCommand::Unsubscribe { topic, reply } => {
                let _ = reply.send(consumer.unsubscribe(now, &topic));
            }
            PullCommand::Assign { queues, reply } => {
                let done = consumer.assign(now, queues);
                let _ = reply.send(done.map_err(ControlError::Rejected));
            }
        }
    }

    /// The consumer's stats, with what the driver counts itself.
    fn stats(&self, consumer: &Consumer) -> consumer_core::ConsumerStats {
        let mut stats = consumer.stats();
        stats.trace_dropped = self.traces.as_ref().map_or(0, |t| t.dropped());
        stats
    }

    /// Carries out everything the consumer asks for, runs the handler for the messages it
    /// has ready, and hands ready messages to a waiting `Take` (which may make the consumer
    /// pull, so its outputs are drained again). Returns whether deliveries may be left for
    /// the next pass.
    ///
    /// Deliveries wait until the consumer has nothing else to ask: what it asked of the
    /// brokers by then (the next pulls of every queue whose answer came) is written first, in
    /// one write, and the handlers run while the brokers work on it. The consumer hands out
    /// one delivery at a time, when asked ([`Consumer::deliver_now`]), and a handler that
    /// finishes on its first poll here settles it in the same call; what that asks of the
    /// brokers goes out before the next delivery. Once the pass's budget of first polls here
    /// is spent, the rest wait for the next pass, after a look at the inputs, rather than go
    /// to tasks of their own.
    fn drain(&mut self, consumer: &mut Consumer) -> bool {
        self.handlers.new_pass();
        loop {
            let mut carried = false;
            while let Some(output) = consumer.poll_output_except_deliveries() {
                self.handlers.interrupted();
                carried = true;
                match output {
                    Output::Wire(wire) => self.conns.carry(wire),
                    Output::Deliver(delivery) => self.handlers.deliver(consumer, delivery),
                    Output::Trace(records) => {
                        if let Some(traces) = &mut self.traces {
                            traces.append(records);
                        }
                    }
                    Output::Revoking { request, queues } => {
                        self.hooks.revoking(consumer, request, queues)
                    }
                    Output::StoreOffsets(table) => self.store_offsets(&table),
                    Output::Event(event) => self.on_event(event),
                }
            }
            if !self.handlers.may_start_here() {
                self.handlers.interrupted();
                self.hooks.end_pass();
                return true;
            }
            if carried {
                self.conns.write_held();
            }
            // A broker's `CONSUME_MESSAGE_DIRECTLY` waits in the consumer's queue; the owned
            // queues' messages are asked for.
            let handed = match consumer.poll_delivery() {
                Some(delivery) => {
                    self.handlers.deliver(consumer, delivery);
                    true
                }
                None => {
                    let now = self.handlers.start_time();
                    let handlers = &mut self.handlers;
                    consumer.deliver_now(now, |delivery| handlers.run(delivery, now))
                }
            };
            if handed {
                continue;
            }
            self.handlers.interrupted();
            if !self.serve_take(consumer) {
                self.hooks.end_pass();
                return false;
            }
        }
    }

    /// Logs an event, settles what it answers, and hands it to the application's observer.
    fn on_event(&mut self, event: Event) {
        trace::trace_event(&event);
        if let Event::QueueStarted { queue, offset } = &event {
            self.hooks.started(queue, *offset);
        }
        self.waiters.on_event(&event);
        if let Some(sink) = &self.events {
            sink(&event);
        }
        if let Event::Closed(report) = event {
            self.report = Some(report);
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
        let Some(file) = &self.offsets else {
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
}
