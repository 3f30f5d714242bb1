//! Request/response connections for the producer: one connection per address, any number of
//! requests in flight on it, each answer matched to its request by opaque.
//!
//! The consumer's driver owns its connections from one task; a producer is called from many
//! tasks at once, so here each call registers its opaque in the connection's pending table
//! (behind a short lock, never held across an await) and awaits its own answer. A connection
//! task reads frames and completes the matching calls; when the connection fails, every call
//! waiting on it fails with the reason, and the next call opens a new one.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use consumer_core::liveness::{AfterTimeout, TimeoutStreak};
use futures_channel::{mpsc, oneshot};
use futures_util::FutureExt;
use futures_util::future::{self, AbortHandle, Abortable, Either};
use proto::{Command, HeaderEncoding, frame};

use crate::connection;
use crate::runtime::Runtime;
use crate::transport::{self, Connector};

/// Why a call got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallError {
    /// The deadline passed first.
    Timeout,
    /// The connection could not be opened or broke; the reason as the system gave it.
    Disconnected(String),
    /// The request does not fit in a frame; it was not sent.
    Encode(String),
}

/// Locks `mutex`, taking over the state a panicking holder left: every critical section here
/// leaves the tables consistent between statements.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The calls waiting on one connection.
#[derive(Default)]
struct Pending {
    waiting: BTreeMap<i32, oneshot::Sender<Command>>,
    /// Set once the connection ended: later calls fail at once instead of waiting.
    closed: Option<String>,
    /// Calls on it that timed out since it last answered one: the core's rule says when the
    /// connection is given up.
    timeouts: TimeoutStreak,
}

/// One connection: a task owns the socket; callers queue frames and wait on the table.
struct Conn {
    id: u64,
    writes: mpsc::UnboundedSender<Bytes>,
    pending: Mutex<Pending>,
    connected: AtomicBool,
    abort: AbortHandle,
}

impl Conn {
    /// Fails every waiting call with `reason` and refuses new ones.
    fn fail_all(&self, reason: String) {
        let mut pending = lock(&self.pending);
        // Dropping the senders wakes each caller, which then reads the reason from `closed`.
        pending.waiting.clear();
        pending.closed.get_or_insert(reason);
    }
}

type ConnTable = Arc<Mutex<BTreeMap<String, Arc<Conn>>>>;

/// The connections of one producer.
pub(crate) struct Clients<R: Runtime> {
    runtime: R,
    /// TLS for every connection, when the producer has it.
    tls: Option<Connector>,
    conns: ConnTable,
    next_opaque: AtomicI32,
    next_conn: AtomicU64,
    /// `ProducerConfig::close_after_timeouts`, for the core's [`TimeoutStreak`]: calls in a
    /// row that time out on one connection before it is closed.
    close_after_timeouts: u32,
}

impl<R: Runtime> Clients<R> {
    pub(crate) fn new(runtime: R, tls: Option<Connector>, close_after_timeouts: u32) -> Self {
        Self {
            runtime,
            tls,
            close_after_timeouts,
            conns: Arc::default(),
            // Java starts at 0 as well; any value works as long as it is unique per connection.
            next_opaque: AtomicI32::new(1),
            next_conn: AtomicU64::new(0),
        }
    }

    /// Sends `request` to `addr` and waits for its answer until `deadline`.
    pub(crate) async fn call(
        &self,
        addr: &str,
        mut request: Command,
        deadline: Instant,
    ) -> Result<Command, CallError> {
        request.opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        let mut buf = BytesMut::new();
        frame::encode(&request, HeaderEncoding::Json, &mut buf)
            .map_err(|e| CallError::Encode(e.to_string()))?;
        let conn = self.conn(addr);
        let (answer, answered) = oneshot::channel();
        {
            let mut pending = lock(&conn.pending);
            if let Some(reason) = &pending.closed {
                return Err(CallError::Disconnected(reason.clone()));
            }
            pending.waiting.insert(request.opaque, answer);
        }
        // A closed writer means the connection is ending; its task fails the call.
        let _ = conn.writes.unbounded_send(buf.freeze());
        let timeout = self.runtime.sleep_until(deadline);
        match future::select(answered, timeout).await {
            Either::Left((Ok(response), _)) => Ok(response),
            Either::Left((Err(_), _)) => Err(CallError::Disconnected(
                lock(&conn.pending)
                    .closed
                    .clone()
                    .unwrap_or_else(|| "connection closed".to_owned()),
            )),
            Either::Right(((), _)) => {
                let after = {
                    let mut pending = lock(&conn.pending);
                    pending.waiting.remove(&request.opaque);
                    if conn.connected.load(Ordering::Acquire) {
                        pending.timeouts.handle_timeout(self.close_after_timeouts)
                    } else {
                        pending.timeouts.handle_timeout_while_opening()
                    }
                };
                // Given up (still opening after a whole send timeout, or open but silent):
                // the next call gets a new connection instead of waiting behind this one.
                if let AfterTimeout::Close(why) = after {
                    self.drop_conn(addr, &conn, &why.to_string());
                }
                Err(CallError::Timeout)
            }
        }
    }

    /// Closes every connection; calls in flight fail.
    pub(crate) fn close(&self) {
        let conns = std::mem::take(&mut *lock(&self.conns));
        for conn in conns.values() {
            conn.abort.abort();
            conn.fail_all("the producer was closed".to_owned());
        }
    }

    fn drop_conn(&self, addr: &str, conn: &Arc<Conn>, reason: &str) {
        remove_if_same(&self.conns, addr, conn.id);
        conn.abort.abort();
        conn.fail_all(reason.to_owned());
    }

    /// The open connection to `addr`, or a new one whose task starts opening it.
    fn conn(&self, addr: &str) -> Arc<Conn> {
        let mut conns = lock(&self.conns);
        if let Some(conn) = conns.get(addr) {
            return Arc::clone(conn);
        }
        let (writes, queued) = mpsc::unbounded();
        let (abort, registration) = AbortHandle::new_pair();
        let conn = Arc::new(Conn {
            id: self.next_conn.fetch_add(1, Ordering::Relaxed),
            writes,
            pending: Mutex::default(),
            connected: AtomicBool::new(false),
            abort,
        });
        conns.insert(addr.to_owned(), Arc::clone(&conn));
        drop(conns);

        let task = run_conn(
            self.runtime.clone(),
            self.tls.clone(),
            addr.to_owned(),
            Arc::clone(&conn),
            queued,
            Arc::clone(&self.conns),
        );
        self.runtime
            .spawn(Box::pin(Abortable::new(task, registration).map(drop)));
        conn
    }
}

impl<R: Runtime> Drop for Clients<R> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Removes `addr`'s connection from the table when it is still connection `id` (a newer one
/// may have replaced it).
fn remove_if_same(conns: &ConnTable, addr: &str, id: u64) {
    let mut conns = lock(conns);
    if conns.get(addr).is_some_and(|c| c.id == id) {
        conns.remove(addr);
    }
}

/// Opens `addr`, writes queued frames and completes calls with the frames read, until either
/// side fails; then fails the calls left and leaves the table.
async fn run_conn<R: Runtime>(
    runtime: R,
    tls: Option<Connector>,
    addr: String,
    conn: Arc<Conn>,
    queued: mpsc::UnboundedReceiver<Bytes>,
    conns: ConnTable,
) {
    let reason = match transport::connect(&runtime, addr.clone(), tls.as_ref()).await {
        Err(e) => format!("connect: {e}"),
        Ok(stream) => {
            conn.connected.store(true, Ordering::Release);
            // Requests from the broker (a plain producer is sent none it must answer) and
            // answers nobody waits for any more (timed out) are dropped.
            let ended = connection::run(stream, queued, |command| {
                if command.is_response() {
                    let waiter = {
                        let mut pending = lock(&conn.pending);
                        pending.timeouts.handle_answer();
                        pending.waiting.remove(&command.opaque)
                    };
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(command);
                    }
                }
                ControlFlow::Continue(())
            });
            ended.await.to_string()
        }
    };
    remove_if_same(&conns, &addr, conn.id);
    conn.fail_all(reason);
}
