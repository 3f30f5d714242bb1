//! The driver's connections. The driver task reads them itself: each connection is a stream
//! of what happens on it (opened, a frame, lost) polled together with the driver's inputs, so
//! a pull answer is decoded and handed to the consumer on the task that owns the consumer,
//! with no hop to another thread. Writes go through a queue to a small task per connection
//! (the loops are in [`connection`]), so the driver never waits on a socket. Every driver task
//! (push and lite pull consumers, pop consumers, the producer) keeps its connections in one.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use consumer_core::ConnId;
use futures_channel::mpsc;
use futures_util::future::{AbortHandle, Abortable};
use futures_util::io::AsyncReadExt;
use futures_util::stream::{self, BoxStream, SelectAll};
use futures_util::{FutureExt, StreamExt};
use proto::{Command, HeaderEncoding, frame};

use crate::connection;
use crate::runtime::Runtime;
use crate::transport::{self, Connector};

/// What happened on a connection.
pub(crate) enum ConnEvent {
    /// It opened.
    Connected,
    /// A frame arrived.
    Frame(Command),
    /// It could not be opened, broke, or the peer sent something that is not a frame; why, as
    /// the system, the TLS handshake or the decoder said.
    Lost(String),
}

/// The driver's side of a connection.
struct Conn {
    /// The peer, for logs.
    addr: String,
    /// Encoded frames for the writer.
    writes: mpsc::UnboundedSender<Bytes>,
    /// Ends the reading (and so, with the writer's end, drops the socket).
    abort_read: AbortHandle,
    /// Ends the writer task.
    abort_write: AbortHandle,
}

/// Every connection the client asked for and has not closed or lost, and their reads.
pub(crate) struct Conns<R: Runtime> {
    runtime: R,
    /// Where a writer reports that its connection broke: one of the streams `reads` polls.
    writes_failed: mpsc::UnboundedSender<(ConnId, ConnEvent)>,
    open: BTreeMap<ConnId, Conn>,
    /// TLS for every connection, when the client has it.
    tls: Option<Connector>,
    /// Every connection's events, and the writers' failures, polled by the driver task; never
    /// ends (the writers' channel stays open while `writes_failed` is held), so polling it with
    /// no connection open waits instead of spinning.
    reads: SelectAll<BoxStream<'static, (ConnId, ConnEvent)>>,
}

impl<R: Runtime> Conns<R> {
    pub(crate) fn new(runtime: R, tls: Option<Connector>) -> Self {
        let (writes_failed, failures) = mpsc::unbounded();
        let mut reads = SelectAll::new();
        reads.push(failures.boxed());
        Self {
            runtime,
            writes_failed,
            open: BTreeMap::new(),
            tls,
            reads,
        }
    }

    /// Opens `addr`: its events ([`ConnEvent::Connected`], then each frame, and
    /// [`ConnEvent::Lost`] when it ends) come from [`Conns::next_event`]; what
    /// [`Conns::send`] queues is written by a task of its own.
    pub(crate) fn open(&mut self, conn: ConnId, addr: String) {
        let (writes, queued) = mpsc::unbounded();
        let (abort_write, registration) = AbortHandle::new_pair();
        let runtime = self.runtime.clone();
        let writes_failed = self.writes_failed.clone();
        let peer = addr.clone();
        let tls = self.tls.clone();
        let opened = async move {
            let stream = match transport::connect(&runtime, peer.clone(), tls.as_ref()).await {
                Ok(stream) => stream,
                Err(error) => {
                    // The core retries with its backoff; the reason (a refused port, a TLS
                    // certificate the client does not trust) is only known here.
                    tracing::warn!(peer = %peer, %error, "could not connect");
                    let lost = ConnEvent::Lost(format!("connect: {error}"));
                    return stream::iter([(conn, lost)]).boxed();
                }
            };
            let (reader, writer) = stream.split();
            // Stops when a write fails or the driver drops the sender; a failure is reported
            // (the driver ignores the report of a connection it already closed or lost).
            let write = async move {
                let ended = connection::write_frames(writer, queued).await;
                let _ = writes_failed.unbounded_send((conn, ConnEvent::Lost(ended.to_string())));
            };
            runtime.spawn(Box::pin(Abortable::new(write, registration).map(drop)));
            let frames = connection::frames(reader).map(move |read| match read {
                Ok(command) => (conn, ConnEvent::Frame(command)),
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
                    (conn, ConnEvent::Lost(ended.to_string()))
                }
            });
            stream::iter([(conn, ConnEvent::Connected)])
                .chain(frames)
                .boxed()
        };
        let (events, abort_read) = stream::abortable(stream::once(opened).flatten());
        self.reads.push(events.boxed());
        self.open.insert(
            conn,
            Conn {
                addr,
                writes,
                abort_read,
                abort_write,
            },
        );
    }

    /// The next event on any connection (waits for ever when none is open).
    pub(crate) fn next_event(
        &mut self,
    ) -> stream::Next<'_, SelectAll<BoxStream<'static, (ConnId, ConnEvent)>>> {
        self.reads.next()
    }

    /// Encodes `command` and queues it for `conn`'s writer. A command for a connection that is
    /// already gone is dropped: its loss is on its way to the consumer, which fails the request.
    /// So is one that does not encode (larger than a frame may be): the consumer's request
    /// deadline fails it, as it would any unanswered request.
    pub(crate) fn send(&self, conn: ConnId, command: &Command) {
        let Some(conn) = self.open.get(&conn) else {
            return;
        };
        let mut buf = BytesMut::new();
        if frame::encode(command, HeaderEncoding::Json, &mut buf).is_ok() {
            let _ = conn.writes.unbounded_send(buf.freeze());
        }
    }

    /// Closes `conn` (the consumer asked); nothing more is reported of it.
    pub(crate) fn close(&mut self, conn: ConnId) {
        if let Some(conn) = self.open.remove(&conn) {
            conn.abort();
        }
    }

    /// The peer of `conn`, while it is one of ours.
    pub(crate) fn addr(&self, conn: ConnId) -> Option<&str> {
        self.open.get(&conn).map(|c| c.addr.as_str())
    }

    /// `conn` was lost or refused: forgets it, and returns its peer if it was ours.
    pub(crate) fn lost(&mut self, conn: ConnId) -> Option<String> {
        let conn = self.open.remove(&conn)?;
        conn.abort();
        Some(conn.addr)
    }

    /// Ends every connection.
    pub(crate) fn abort_all(&mut self) {
        for conn in std::mem::take(&mut self.open).into_values() {
            conn.abort();
        }
    }
}

impl Conn {
    fn abort(&self) {
        self.abort_read.abort();
        self.abort_write.abort();
    }
}
