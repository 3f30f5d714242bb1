//! What wakes a driver task, written once for every one of them (push and lite pull consumers,
//! pop consumers, the producer): the sans-IO client's one deadline, as a timer re-armed only
//! when the deadline moves, with the clock read before waiting (as quinn's endpoint driver
//! does, so a deadline already due is handled without a trip through the runtime's timer
//! wheel); the task's inputs; and what happens on its connections, which it then feeds to the
//! client ([`feed`]).

use std::future::Future;
use std::task::Poll;
use std::time::Instant;

use consumer_core::pop::PopConsumer;
use consumer_core::producer::Producer as ProducerCore;
use consumer_core::{ConnId, Consumer};
use futures_channel::mpsc::UnboundedReceiver;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use proto::Command;

use super::conns::{ConnEvent, Conns};
use crate::runtime::{BoxFuture, Runtime};

/// What woke the task.
pub(crate) enum Woken<I> {
    /// The client's deadline has come: call its `handle_timeout` with this time.
    Due(Instant),
    /// An input, or `None` when every sender of the inputs is gone.
    Input(Option<I>),
    /// Something happened on one of the client's connections.
    Conn(ConnId, ConnEvent),
}

/// A driver task's timer.
pub(crate) struct Wake<R: Runtime> {
    runtime: R,
    /// The sleep armed, and the deadline it is for.
    timer: Option<(Instant, BoxFuture<()>)>,
}

impl<R: Runtime> Wake<R> {
    pub(crate) fn new(runtime: R) -> Self {
        Self {
            runtime,
            timer: None,
        }
    }

    /// Waits for the client's `deadline` (its `poll_timeout`), an input or a connection's
    /// event, whichever comes first.
    pub(crate) async fn next<I>(
        &mut self,
        deadline: Option<Instant>,
        inputs: &mut UnboundedReceiver<I>,
        conns: &mut Conns<R>,
    ) -> Woken<I> {
        let now = self.runtime.now();
        if deadline.is_some_and(|at| at <= now) {
            return Woken::Due(now);
        }
        match deadline {
            Some(at) => {
                if self.timer.as_ref().is_none_or(|(armed, _)| *armed != at) {
                    self.timer = Some((at, self.runtime.sleep_until(at)));
                }
            }
            None => self.timer = None,
        }
        let outside = future::select(inputs.next(), conns.next_event());
        let woken = match &mut self.timer {
            Some((_, sleep)) => match future::select(outside, sleep.as_mut()).await {
                Either::Left((woken, _)) => woken,
                Either::Right(((), _)) => {
                    self.timer = None;
                    return Woken::Due(self.runtime.now());
                }
            },
            None => outside.await,
        };
        match woken {
            Either::Left((input, _)) => Woken::Input(input),
            Either::Right((Some((conn, event)), _)) => Woken::Conn(conn, event),
            // The connections' events never end (see `Conns`); were they to, the deadline is
            // as good a reason as any to look again.
            Either::Right((None, _)) => Woken::Due(self.runtime.now()),
        }
    }
}

/// What `future` gives on one poll, in the task's own context (so the wakers it registers are
/// the task's, unlike `now_or_never`'s no-op one): `None` when it is not ready.
pub(crate) async fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    future::poll_fn(|cx| match future.as_mut().poll(cx) {
        Poll::Ready(output) => Poll::Ready(Some(output)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

/// A sans-IO client: what a driver task tells it of its connections.
pub(crate) trait ConnClient {
    fn connected(&mut self, now: Instant, conn: ConnId);
    fn command(&mut self, now: Instant, conn: ConnId, command: Command);
    fn lost(&mut self, now: Instant, conn: ConnId, reason: &str);
}

/// Hands `client` what happened on its connection `conn`.
pub(crate) fn feed(client: &mut impl ConnClient, now: Instant, conn: ConnId, event: ConnEvent) {
    match event {
        ConnEvent::Connected => client.connected(now, conn),
        ConnEvent::Frame(command) => client.command(now, conn, command),
        ConnEvent::Lost { reason, .. } => client.lost(now, conn, &reason),
    }
}

/// The consumers (push and lite pull, pop) take their connections' fate alike: the reason is
/// logged (`Conns`), and their requests fail as `Disconnected`.
macro_rules! consumer_conn_client {
    ($($client:ty),*) => {$(
        impl ConnClient for $client {
            fn connected(&mut self, now: Instant, conn: ConnId) {
                self.handle_connected(now, conn);
            }
            fn command(&mut self, now: Instant, conn: ConnId, command: Command) {
                self.handle_command(now, conn, command);
            }
            fn lost(&mut self, now: Instant, conn: ConnId, _reason: &str) {
                self.handle_disconnected(now, conn);
            }
        }
    )*};
}

consumer_conn_client!(Consumer, PopConsumer);

impl ConnClient for ProducerCore {
    fn connected(&mut self, now: Instant, conn: ConnId) {
        self.handle_connected(now, conn);
    }
    fn command(&mut self, now: Instant, conn: ConnId, command: Command) {
        self.handle_command(now, conn, command);
    }
    fn lost(&mut self, now: Instant, conn: ConnId, reason: &str) {
        // A send that fails for it reports the reason (a TLS handshake's, say).
        self.handle_disconnected(now, conn, reason);
    }
}
