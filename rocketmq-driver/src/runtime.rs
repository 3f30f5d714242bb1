//! The small runtime abstraction the driver is generic over (after quinn's `Runtime`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::BytesMut;
use futures_io::{AsyncRead, AsyncWrite};

/// A boxed, sendable future: what the runtime hands back and what it is asked to spawn.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the driver needs from an async runtime: a clock, a timer, a way to spawn tasks and TCP
/// connections. Each adapter crate implements it in a few lines; everything else is shared.
pub trait Runtime: Clone + Default + Send + Sync + 'static {
    /// A connected TCP stream. The driver splits it into a read half and a write half.
    type Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static;

    /// The runtime's clock. Every `Instant` the consumer sees comes from here, so a runtime with
    /// a virtual clock (tokio's paused time) drives the consumer consistently.
    fn now(&self) -> Instant;

    /// A future that completes at `deadline` (at once when it has passed).
    fn sleep_until(&self, deadline: Instant) -> BoxFuture<()>;

    /// Runs `task` in the background; nothing joins it.
    fn spawn(&self, task: BoxFuture<()>);

    /// Runs a client's driver task in the background: the task that owns a state machine and
    /// reads and writes its sockets, woken by little else. By default it is spawned as any
    /// task; a runtime whose sockets' readiness is seen on another thread than the one a task
    /// runs on may give it a thread of its own that waits on the sockets itself (smol does).
    fn spawn_driver(&self, task: BoxFuture<()>) {
        self.spawn(task);
    }

    /// Opens a TCP connection to `addr` (`host:port`, resolved by the runtime).
    fn connect(&self, addr: String) -> BoxFuture<io::Result<Self::Stream>>;

    /// Reads what `stream` has into the spare capacity of `buf` (the driver leaves some),
    /// appending to `buf`; `Some` of the number of bytes read, 0 at the end of the stream.
    ///
    /// A runtime whose streams can read into memory not yet initialized (tokio's `ReadBuf`)
    /// reads here in place. `None`, the default, says it cannot: the driver then reads through
    /// [`AsyncRead`], whose buffer must be initialized, into a buffer of its own, and copies
    /// from there. At 1 KiB messages that copy was a twentieth of the push consumer's CPU.
    /// Over TLS the driver always reads through [`AsyncRead`] (the bytes are decrypted).
    fn poll_read_in_place(
        stream: Pin<&mut Self::Stream>,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Option<Poll<io::Result<usize>>> {
        let _ = (stream, cx, buf);
        None
    }
}
