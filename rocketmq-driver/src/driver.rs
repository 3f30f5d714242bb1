//! The driver task: owns the [`Consumer`] by value and carries out its outputs.
//!
//! Everything that happens outside the task (a connection opened, a frame arrived, a handler
//! finished, the user asked to shut down) comes in over one unbounded channel as an [`Input`];
//! the consumer's single timer is a sleep re-armed to [`Consumer::poll_timeout`]. The loop
//! compares the clock with that deadline before it waits, as quinn's endpoint driver does, so a
//! timer already due is handled without a trip through the runtime's timer wheel.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use consumer_core::{
    ConnId, ConsumeOutcome, Consumer, Delivery, DeliveryId, Event, Output, ShutdownReport,
};
use futures_channel::{mpsc, oneshot};
use futures_io::{AsyncRead, AsyncWrite};
use futures_util::future::{self, AbortHandle, Abortable, Either};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::{FutureExt, StreamExt};
use proto::message::Message;
use proto::{Command, FrameDecoder, HeaderEncoding, frame};

use crate::runtime::{BoxFuture, Runtime};

/// The user's handler, boxed once so the driver is not generic over it.
pub(crate) type Handler = Arc<dyn Fn(Vec<Message>) -> BoxFuture<ConsumeOutcome> + Send + Sync>;

/// An observer of the consumer's events.
pub(crate) type EventSink = Arc<dyn Fn(&Event) + Send + Sync>;

/// Bytes read from a socket at a time.
const READ_CHUNK: usize = 64 * 1024;

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
}

/// The driver's side of a connection task.
struct Conn {
    /// Encoded frames for the writer.
    writes: mpsc::UnboundedSender<Bytes>,
    /// Ends the connection task (and so drops the socket).
    abort: AbortHandle,
}

/// The task that drives one consumer.
pub(crate) struct Driver<R: Runtime> {
    pub(crate) runtime: R,
    pub(crate) consumer: Consumer,
    pub(crate) handler: Handler,
    pub(crate) events: Option<EventSink>,
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
            inputs_tx,
            mut inputs,
            done,
        } = self;
        let mut io = Io {
            runtime: &runtime,
            handler: &handler,
            events: events.as_ref(),
            inputs_tx: &inputs_tx,
            conns: BTreeMap::new(),
            report: None,
        };
        let mut timer: Option<(Instant, BoxFuture<()>)> = None;
        loop {
            io.drain(&mut consumer);
            if consumer.is_closed() {
                break;
            }
            let now = runtime.now();
            match consumer.poll_timeout() {
                Some(at) if at <= now => {
                    consumer.handle_timeout(now);
                    continue;
                }
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
                        // Fired: the loop reads the clock and calls handle_timeout.
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
        // The user may have stopped waiting for the report; nothing to do then.
        let _ = done.send(io.report.take().unwrap_or_default());
    }
}

/// The driver's I/O state, apart from the consumer it feeds.
struct Io<'a, R: Runtime> {
    runtime: &'a R,
    handler: &'a Handler,
    events: Option<&'a EventSink>,
    inputs_tx: &'a mpsc::UnboundedSender<Input>,
    conns: BTreeMap<ConnId, Conn>,
    report: Option<ShutdownReport>,
}

impl<R: Runtime> Io<'_, R> {
    /// Feeds one input to the consumer. Inputs about connections the consumer already closed
    /// are dropped: it expects nothing more from them.
    fn handle(&mut self, consumer: &mut Consumer, now: Instant, input: Input) {
        match input {
            Input::Connected(conn) => {
                if self.conns.contains_key(&conn) {
                    consumer.handle_connected(now, conn);
                }
            }
            Input::Lost(conn) => {
                if self.conns.remove(&conn).is_some() {
                    consumer.handle_disconnected(now, conn);
                }
            }
            Input::Frame(conn, command) => {
                if self.conns.contains_key(&conn) {
                    consumer.handle_command(now, conn, command);
                }
            }
            Input::Completed(id, outcome) => consumer.complete(now, id, outcome),
            Input::Shutdown => consumer.shutdown(now),
        }
    }

    /// Carries out everything the consumer asks for.
    fn drain(&mut self, consumer: &mut Consumer) {
        while let Some(output) = consumer.poll_output() {
            match output {
                Output::Connect { conn, addr } => self.connect(conn, addr),
                Output::Send { conn, command } => self.send(conn, &command),
                Output::Close { conn } => {
                    if let Some(conn) = self.conns.remove(&conn) {
                        conn.abort.abort();
                    }
                }
                Output::Deliver(delivery) => self.deliver(delivery),
                Output::Event(event) => {
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
    }

    /// Starts a task that opens `addr`, then reads frames into the input channel and writes
    /// what [`Io::send`] queues, until either side fails or the driver aborts it.
    fn connect(&mut self, conn: ConnId, addr: String) {
        let (writes, queued) = mpsc::unbounded();
        let (abort, registration) = AbortHandle::new_pair();
        let inputs = self.inputs_tx.clone();
        let runtime = self.runtime.clone();
        let task = async move {
            let Ok(stream) = runtime.connect(addr).await else {
                let _ = inputs.unbounded_send(Input::Lost(conn));
                return;
            };
            if inputs.unbounded_send(Input::Connected(conn)).is_err() {
                return;
            }
            let (reader, writer) = stream.split();
            let read = Box::pin(read_frames(conn, reader, inputs.clone()));
            let write = Box::pin(write_frames(writer, queued));
            future::select(read, write).await;
            let _ = inputs.unbounded_send(Input::Lost(conn));
        };
        self.runtime
            .spawn(Box::pin(Abortable::new(task, registration).map(drop)));
        self.conns.insert(conn, Conn { writes, abort });
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

    /// Runs the handler on its own task and reports the outcome. A handler that panics is
    /// answered [`ConsumeOutcome::ReconsumeLater`], so its messages come again.
    fn deliver(&mut self, delivery: Delivery) {
        let handler = Arc::clone(self.handler);
        let inputs = self.inputs_tx.clone();
        let Delivery { id, messages, .. } = delivery;
        self.runtime.spawn(Box::pin(async move {
            let run = AssertUnwindSafe(async move { handler(messages).await });
            let outcome = run
                .catch_unwind()
                .await
                .unwrap_or(ConsumeOutcome::ReconsumeLater);
            let _ = inputs.unbounded_send(Input::Completed(id, outcome));
        }));
    }
}

/// Decodes frames from `reader` into the input channel until the stream ends, fails or carries
/// something that is not a frame.
async fn read_frames(
    conn: ConnId,
    mut reader: impl AsyncRead + Unpin,
    inputs: mpsc::UnboundedSender<Input>,
) {
    let mut decoder = FrameDecoder::default();
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut chunk = vec![0; READ_CHUNK];
    loop {
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(command)) => {
                    if inputs.unbounded_send(Input::Frame(conn, command)).is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Writes queued frames, flushing once the queue is empty, until a write fails or the driver
/// drops the sender.
async fn write_frames(
    mut writer: impl AsyncWrite + Unpin,
    mut queued: mpsc::UnboundedReceiver<Bytes>,
) {
    while let Some(frame) = queued.next().await {
        if writer.write_all(&frame).await.is_err() {
            return;
        }
        while let Ok(frame) = queued.try_recv() {
            if writer.write_all(&frame).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.close().await;
}
