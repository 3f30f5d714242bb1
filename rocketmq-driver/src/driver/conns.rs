//! The driver's connections. The driver task reads and writes them itself: each connection is a
//! stream of what happens on it (opened, a frame, lost) polled together with the driver's
//! inputs, so a pull answer is decoded and handed to the client on the task that owns it; and
//! what the client sends is written on the socket by the same task, at once, so a pull request
//! leaves with no hop to another task or thread either. Every driver task (push and lite pull
//! consumers, pop consumers, the producer) keeps its connections in one.
//!
//! A write that cannot finish (the socket's buffer is full) keeps the rest in the connection's
//! buffer and registers the driver task's waker with the socket, so the task comes back to it
//! when the socket can take more ([`Conns::next_event`] writes what waits before it reads).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, BytesMut};
use consumer_core::{ConnId, Wire};
use futures_util::stream::{self, BoxStream, SelectAll};
use futures_util::{AsyncWrite, StreamExt, future};
use proto::{Command, HeaderEncoding, frame};

use crate::connection;
use crate::runtime::Runtime;
use crate::transport::{self, Connector, Half};

/// What happened on one of the client's connections (events of connections it closed are
/// dropped: it expects nothing more of them).
pub(crate) enum ConnEvent {
    /// It opened.
    Connected,
    /// A frame arrived.
    Frame(Command),
    /// It could not be opened, broke, or the peer sent something that is not a frame; it is
    /// forgotten here (and logged with its peer).
    Lost {
        /// Why, as the system, the TLS handshake or the decoder said.
        reason: String,
    },
}

/// The write half of an open connection.
type Writer<R> = Half<<R as Runtime>::Stream>;

/// What a connection's stream yields: as [`ConnEvent`], but an opening hands its write half
/// over.
enum Raw<W> {
    Opened(W),
    Frame(Command),
    Lost(String),
}

/// The driver's side of a connection.
struct Conn<W> {
    /// The peer, for logs.
    addr: String,
    /// The write half, once it opened.
    writer: Option<W>,
    /// Encoded frames not written yet.
    out: BytesMut,
    /// Bytes were written since the last flush (TLS keeps records until flushed).
    unflushed: bool,
    /// Why writing failed, once it did: reported as its loss.
    failed: Option<String>,
    /// Ends the reading (and so, with the write half dropped, the socket).
    abort_read: stream::AbortHandle,
}

/// The future of [`Conns::next_event`] (a type of its own, with no destructor, so the driver's
/// loop may use the connections again as soon as it has the event).
pub(crate) struct NextEvent<'a, R: Runtime>(&'a mut Conns<R>);

impl<R: Runtime> Future for NextEvent<'_, R> {
    type Output = Option<(ConnId, ConnEvent)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().0.poll_event(cx)
    }
}

impl<W: AsyncWrite + Unpin> Conn<W> {
    /// Writes what waits, then flushes; stops where the socket cannot take more (its waker in
    /// `cx` is then registered). A failure is kept in `failed`.
    fn write_out(&mut self, cx: &mut Context<'_>) {
        let Some(writer) = self.writer.as_mut() else {
            return;
        };
        if self.failed.is_some() {
            return;
        }
        while !self.out.is_empty() {
            match Pin::new(&mut *writer).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => {
                    self.failed = Some("write: the connection took no bytes".to_owned());
                    return;
                }
                Poll::Ready(Ok(n)) => {
                    self.out.advance(n);
                    self.unflushed = true;
                }
                Poll::Ready(Err(e)) => {
                    self.failed = Some(format!("write: {e}"));
                    return;
                }
                Poll::Pending => return,
            }
        }
        if self.unflushed {
            match Pin::new(writer).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.unflushed = false,
                Poll::Ready(Err(e)) => self.failed = Some(format!("write: {e}")),
                Poll::Pending => {}
            }
        }
    }
}

/// Every connection the client asked for and has not closed or lost, and their reads.
pub(crate) struct Conns<R: Runtime> {
    runtime: R,
    open: BTreeMap<ConnId, Conn<Writer<R>>>,
    /// TLS for every connection, when the client has it.
    tls: Option<Connector>,
    /// Every connection's events, polled by the driver task; never ends (it holds a stream
    /// that yields nothing), so polling it with no connection open waits instead of spinning.
    reads: SelectAll<BoxStream<'static, (ConnId, Raw<Writer<R>>)>>,
    /// The driver task's waker, as of its last poll of [`Conns::next_event`] or
    /// [`Conns::flush`]: writes made in between register it when a socket is full.
    waker: Option<Waker>,
}

impl<R: Runtime> Conns<R> {
    pub(crate) fn new(runtime: R, tls: Option<Connector>) -> Self {
        let mut reads = SelectAll::new();
        reads.push(stream::pending().boxed());
        Self {
            runtime,
            open: BTreeMap::new(),
            tls,
            reads,
            waker: None,
        }
    }

    /// Carries out a client's work on its connections.
    pub(crate) fn carry(&mut self, wire: Wire) {
        match wire {
            Wire::Connect { conn, addr } => self.open(conn, addr),
            Wire::Send { conn, command } => self.send(conn, &command),
            Wire::Close { conn } => self.close(conn),
        }
    }

    /// Opens `addr`: its events ([`ConnEvent::Connected`], then each frame, and
    /// [`ConnEvent::Lost`] when it ends) come from [`Conns::next_event`]; what [`Conns::send`]
    /// queues is written once it is open.
    pub(crate) fn open(&mut self, conn: ConnId, addr: String) {
        let runtime = self.runtime.clone();
        let peer = addr.clone();
        let tls = self.tls.clone();
        let opened = async move {
            let stream = match transport::connect(&runtime, peer.clone(), tls.as_ref()).await {
                Ok(stream) => stream,
                Err(error) => {
                    // The client retries with its backoff; the reason (a refused port, a TLS
                    // certificate the client does not trust) is only known here.
                    tracing::warn!(peer = %peer, %error, "could not connect");
                    let lost = Raw::Lost(format!("connect: {error}"));
                    return stream::iter([(conn, lost)]).boxed();
                }
            };
            let (reader, writer) = transport::split(stream);
            let frames = connection::frames(connection::Reader::<R>::new(reader)).map(move |read| match read {
                Ok(command) => (conn, Raw::Frame(command)),
                Err(ended) => {
                    // A consumer only hears "lost" (its requests fail as Disconnected): a peer
                    // that does not speak the protocol (a wrong port, a broken or hostile
                    // server) is told apart from one that closed only here.
                    if let connection::Ended::BadFrame(error) = &ended {
                        tracing::warn!(
                            peer = %peer,
                            %error,
                            "the peer sent something that is not a frame; dropping the connection"
                        );
                    }
                    (conn, Raw::Lost(ended.to_string()))
                }
            });
            stream::iter([(conn, Raw::Opened(writer))])
                .chain(frames)
                .boxed()
        };
        let (events, abort_read) = stream::abortable(stream::once(opened).flatten());
        self.reads.push(events.boxed());
        self.open.insert(
            conn,
            Conn {
                addr,
                writer: None,
                out: BytesMut::new(),
                unflushed: false,
                failed: None,
                abort_read,
            },
        );
    }

    /// The next event on any connection (waits for ever when none is open). Writes what waits
    /// first; a connection whose write failed is reported lost.
    pub(crate) fn next_event(&mut self) -> NextEvent<'_, R> {
        NextEvent(self)
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<(ConnId, ConnEvent)>> {
        self.write_all(cx);
        let failed = self
            .open
            .iter_mut()
            .find_map(|(id, c)| c.failed.take().map(|r| (*id, r)));
        if let Some((conn, reason)) = failed
            && let Some(lost) = self.lost(conn, reason)
        {
            return Poll::Ready(Some((conn, lost)));
        }
        loop {
            let (conn, raw) = match self.reads.poll_next_unpin(cx) {
                Poll::Ready(Some(event)) => event,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            };
            let Some(open) = self.open.get_mut(&conn) else {
                // Closed by the client meanwhile (a write half that arrives goes with it).
                continue;
            };
            let event = match raw {
                Raw::Opened(writer) => {
                    tracing::debug!(addr = %open.addr, "connected");
                    open.writer = Some(writer);
                    // Anything queued before it opened goes now.
                    open.write_out(cx);
                    ConnEvent::Connected
                }
                Raw::Frame(command) => ConnEvent::Frame(command),
                Raw::Lost(reason) => match self.lost(conn, reason) {
                    Some(lost) => lost,
                    None => continue,
                },
            };
            return Poll::Ready(Some((conn, event)));
        }
    }

    /// `conn` was lost or refused for `reason`: forgets it, and says so if it was ours.
    fn lost(&mut self, conn: ConnId, reason: String) -> Option<ConnEvent> {
        let conn = self.open.remove(&conn)?;
        conn.abort_read.abort();
        tracing::warn!(addr = %conn.addr, %reason, "connection lost or refused");
        Some(ConnEvent::Lost { reason })
    }

    /// Writes what waits on every connection now (the driver calls it after each pass over the
    /// client's outputs, so nothing waits for the next event).
    pub(crate) async fn flush(&mut self) {
        future::poll_fn(|cx| {
            self.write_all(cx);
            Poll::Ready(())
        })
        .await;
    }

    /// Writes what waits on every connection, with the task's waker in `cx`.
    fn write_all(&mut self, cx: &mut Context<'_>) {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            self.waker = Some(cx.waker().clone());
        }
        write_each(&mut self.open, cx);
    }

    /// Encodes `command` for `conn`; it is written with what else the task asks in the same
    /// pass, at [`Conns::write_held`] or [`Conns::flush`] (what the socket cannot take then is
    /// kept and written when it can). So the pulls that several answers read together make go
    /// out in one write: on loopback a write costs the sender the broker's receive path and its
    /// wake-up, and a write a frame was a third of the push consumer's CPU. A command for a
    /// connection that is already gone is dropped: its loss is on its way to the client, which
    /// fails the request. So is one that does not encode (larger than a frame may be): the
    /// client's request deadline fails it, as it would any unanswered request.
    pub(crate) fn send(&mut self, conn: ConnId, command: &Command) {
        let Some(open) = self.open.get_mut(&conn) else {
            return;
        };
        // Not written here: see above.
        let _ = frame::encode(command, HeaderEncoding::Json, &mut open.out);
    }

    /// Writes what [`Conns::send`] holds, now (the driver does before it runs handlers, so the
    /// brokers work on the next pulls meanwhile).
    pub(crate) fn write_held(&mut self) {
        // Written from the driver task, with its waker: called between two of its polls.
        let waker = self.waker.as_ref().unwrap_or(Waker::noop());
        write_each(&mut self.open, &mut Context::from_waker(waker));
    }

    /// Closes `conn` (the client asked); nothing more is reported of it.
    pub(crate) fn close(&mut self, conn: ConnId) {
        if let Some(conn) = self.open.remove(&conn) {
            conn.abort_read.abort();
        }
    }

    /// Ends every connection.
    pub(crate) fn abort_all(&mut self) {
        for conn in std::mem::take(&mut self.open).into_values() {
            conn.abort_read.abort();
        }
    }
}

/// Writes what waits on each connection in `open`, with the task's waker in `cx`.
fn write_each<W: AsyncWrite + Unpin>(open: &mut BTreeMap<ConnId, Conn<W>>, cx: &mut Context<'_>) {
    for conn in open.values_mut() {
        if !conn.out.is_empty() || conn.unflushed {
            conn.write_out(cx);
        }
    }
}
