//! The driver's connections: one task per connection reads frames into the driver's input
//! channel and writes the frames the driver queues for it (the loops are
//! [`connection::run`]); the driver keeps each one's write queue and abort handle.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use bytes::{Bytes, BytesMut};
use consumer_core::ConnId;
use futures_channel::mpsc;
use futures_util::FutureExt;
use futures_util::future::{AbortHandle, Abortable};
use proto::{Command, HeaderEncoding, frame};

use crate::connection;
use crate::input::Input;
use crate::runtime::Runtime;

/// The driver's side of a connection task.
struct Conn {
    /// The peer, for logs.
    addr: String,
    /// Encoded frames for the writer.
    writes: mpsc::UnboundedSender<Bytes>,
    /// Ends the connection task (and so drops the socket).
    abort: AbortHandle,
}

/// Every connection the consumer asked for and has not closed or lost.
pub(super) struct Conns<R: Runtime> {
    runtime: R,
    inputs: mpsc::UnboundedSender<Input>,
    open: BTreeMap<ConnId, Conn>,
}

impl<R: Runtime> Conns<R> {
    pub(super) fn new(runtime: R, inputs: mpsc::UnboundedSender<Input>) -> Self {
        Self {
            runtime,
            inputs,
            open: BTreeMap::new(),
        }
    }

    /// Starts a task that opens `addr`, then reads frames into the input channel and writes
    /// what [`Conns::send`] queues, until either side fails or the driver aborts it.
    pub(super) fn open(&mut self, conn: ConnId, addr: String) {
        let (writes, queued) = mpsc::unbounded();
        let (abort, registration) = AbortHandle::new_pair();
        let inputs = self.inputs.clone();
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
        self.open.insert(
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
    pub(super) fn send(&self, conn: ConnId, command: &Command) {
        let Some(conn) = self.open.get(&conn) else {
            return;
        };
        let mut buf = BytesMut::new();
        if frame::encode(command, HeaderEncoding::Json, &mut buf).is_ok() {
            let _ = conn.writes.unbounded_send(buf.freeze());
        }
    }

    /// Closes `conn` (the consumer asked); nothing more is reported of it.
    pub(super) fn close(&mut self, conn: ConnId) {
        if let Some(conn) = self.open.remove(&conn) {
            conn.abort.abort();
        }
    }

    /// The peer of `conn`, while it is one of ours.
    pub(super) fn addr(&self, conn: ConnId) -> Option<&str> {
        self.open.get(&conn).map(|c| c.addr.as_str())
    }

    /// `conn` was lost or refused: forgets it, and returns its peer if it was ours.
    pub(super) fn lost(&mut self, conn: ConnId) -> Option<String> {
        self.open.remove(&conn).map(|c| c.addr)
    }

    /// Ends every connection task.
    pub(super) fn abort_all(&mut self) {
        for conn in std::mem::take(&mut self.open).into_values() {
            conn.abort.abort();
        }
    }
}
