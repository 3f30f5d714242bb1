//! The async producer, written once for every runtime: a handle that prepares each message
//! (checked, given its ids, encoded) and hands it to the producer's task (`task.rs`), which
//! drives the core's sans-IO [`consumer_core::producer::Producer`] (routes, queue, requests,
//! retries, deadline, connection liveness) and only moves bytes for it. The builder is in
//! `builder.rs`.

mod builder;
mod task;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use consumer_core::producer::{
    Prepared, Producer as ProducerCore, ProducerConfig, ProducerMessage, SendError, SendResult,
    UniqueIds,
};
use futures_channel::{mpsc, oneshot};

pub use builder::ProducerBuilder;
use task::ProducerInput;

use crate::host::since_epoch;
use crate::runtime::Runtime;
use crate::transport::Connector;

/// Producers created in this process, so each gets its own `UNIQ_KEY` prefix.
static PRODUCERS: AtomicU32 = AtomicU32::new(0);

/// A producer: sends messages to a topic's queues and waits for the broker to store them.
///
/// Cheap to clone (clones share connections and routes) and safe to call from many tasks at
/// once: each send is a request of its own, so concurrent sends are pipelined on the broker
/// connection. Build it with [`Producer::builder`]; call it where the runtime can spawn (inside
/// a tokio runtime for `rocketmq-tokio`), since connections run on tasks of their own.
pub struct Producer<R: Runtime> {
    inner: Arc<Inner<R>>,
}

impl<R: Runtime> Clone for Producer<R> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<R: Runtime> std::fmt::Debug for Producer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("group", &self.inner.config.group)
            .finish_non_exhaustive()
    }
}

struct Inner<R: Runtime> {
    runtime: R,
    config: ProducerConfig,
    /// The `UNIQ_KEY`s of the messages prepared, in the caller's task (encoding a message is
    /// the caller's work, not the producer task's).
    ids: Mutex<UniqueIds>,
    /// The producer task's inputs, once the first send started it (a producer may be built
    /// outside the runtime, which spawns nothing until then); `None` again once closed.
    task: Mutex<Option<mpsc::UnboundedSender<ProducerInput>>>,
    /// The credentials the task starts with (the configuration's, until rotated).
    credentials: Mutex<Option<consumer_core::Credentials>>,
    /// TLS for every connection, when the producer has it.
    tls: Option<Connector>,
    closed: AtomicBool,
    /// Message trace: where each send's `Pub` record goes.
    traces: Option<Mutex<crate::trace_dispatch::TraceQueue>>,
}

/// Locks `mutex`, taking over the state a panicking holder left: every critical section here
/// leaves it consistent between statements.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Runtime> Producer<R> {
    /// A builder for a producer of `group`, with Java's defaults.
    pub fn builder(group: impl Into<String>) -> ProducerBuilder<R> {
        ProducerBuilder::new(group)
    }

    /// Sends one message to `topic` and waits until the broker stored it: to the queue its
    /// sharding key hashes to ([`ProducerMessage::with_sharding_key`]), else to the next queue
    /// round robin. A failure that may be passing (a lost connection, a busy broker, a moved
    /// route) is retried up to `retries` times within the send timeout; a sharded message is
    /// retried on its own queue only.
    pub async fn send(
        &self,
        topic: &str,
        message: impl Into<ProducerMessage>,
    ) -> Result<SendResult, SendError> {
        self.send_all(topic, vec![message.into()], prepare_single)
            .await
    }

    /// Sends `messages` to `topic` as one batch, stored as consecutive messages of one queue
    /// (chosen as for [`Producer::send`]: they must share their sharding key, or all have
    /// none). Resolves with the first message's queue offset and every message's ids.
    pub async fn send_batch<M: Into<ProducerMessage>>(
        &self,
        topic: &str,
        messages: impl IntoIterator<Item = M>,
    ) -> Result<SendResult, SendError> {
        let messages = messages.into_iter().map(Into::into).collect();
        self.send_all(topic, messages, Prepared::batch).await
    }

    /// Prepares `messages` with `prepare` (one message, or a batch), sends them and traces the
    /// result.
    async fn send_all(
        &self,
        topic: &str,
        messages: Vec<ProducerMessage>,
        prepare: Prepare,
    ) -> Result<SendResult, SendError> {
        let traced: Option<Vec<Traced>> = self
            .inner
            .traces
            .as_ref()
            .map(|_| messages.iter().map(Traced::of).collect());
        let (started, born) = (self.inner.runtime.now(), unix_ms());
        let prepared = prepare(
            &self.inner.config,
            topic,
            messages,
            &mut lock(&self.inner.ids),
            born,
        )?;
        let sent = self.inner.deliver(prepared).await;
        if let (Some(traced), Ok((result, addr))) = (traced, &sent) {
            let cost = self.inner.runtime.now().saturating_duration_since(started);
            self.inner.trace(topic, &traced, result, addr, born, cost);
        }
        sent.map(|(result, _)| result)
    }

    /// Signs every send started from now on with `credentials` (`None`: unsigned), for this
    /// producer and its clones, so rotated ACL keys take effect without a restart.
    pub fn set_credentials(&self, credentials: Option<consumer_core::Credentials>) {
        let task = lock(&self.inner.task);
        lock(&self.inner.credentials).clone_from(&credentials);
        if let Some(task) = task.as_ref() {
            let _ = task.unbounded_send(ProducerInput::Credentials(credentials));
        }
    }

    /// Closes the connections of this producer and its clones. Sends in flight fail with
    /// [`SendError::Disconnected`] (their messages may have been stored), later ones with
    /// [`SendError::Closed`]. Dropping the last clone closes the connections too.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        if let Some(task) = lock(&self.inner.task).take() {
            let _ = task.unbounded_send(ProducerInput::Close);
        }
    }
}

impl<R: Runtime> Inner<R> {
    /// Hands `prepared` to the producer's task (starting it on first use) and waits for its
    /// end: the core decides every lookup, target, retry and when to give up. Returns the
    /// result with the address of the broker that answered last (the one that stored it, on
    /// success).
    async fn deliver(&self, prepared: Prepared) -> Result<(SendResult, String), SendError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut task = lock(&self.task);
            if self.closed.load(Ordering::Acquire) {
                return Err(SendError::Closed);
            }
            let task = match task.as_mut() {
                Some(task) => task,
                None => task.insert(self.start_task()?),
            };
            task.unbounded_send(ProducerInput::Send {
                prepared: Box::new(prepared),
                reply,
            })
            .map_err(|_| SendError::Closed)?;
        }
        match answer.await {
            Ok((Ok(result), peer)) => Ok((result, peer)),
            Ok((Err(error), _)) => Err(error),
            // The task ended without answering: it was closed meanwhile.
            Err(_) => Err(SendError::Closed),
        }
    }

    /// Starts the producer's task, with the credentials in use now.
    fn start_task(&self) -> Result<mpsc::UnboundedSender<ProducerInput>, SendError> {
        let mut config = self.config.clone();
        config.credentials = lock(&self.credentials).clone();
        let core = ProducerCore::new(config)
            .map_err(|e| SendError::InvalidMessage(format!("producer configuration: {e}")))?;
        Ok(task::spawn(&self.runtime, core, self.tls.clone()))
    }
}

/// How a send's messages are prepared: [`Prepared::batch`], or [`prepare_single`].
type Prepare = fn(
    &ProducerConfig,
    &str,
    Vec<ProducerMessage>,
    &mut UniqueIds,
    i64,
) -> Result<Prepared, SendError>;

/// [`Prepared::single`] of the one message `messages` holds.
fn prepare_single(
    config: &ProducerConfig,
    topic: &str,
    mut messages: Vec<ProducerMessage>,
    ids: &mut UniqueIds,
    unix_ms: i64,
) -> Result<Prepared, SendError> {
    let message = messages
        .pop()
        .ok_or_else(|| SendError::InvalidMessage("no message to send".to_owned()))?;
    Prepared::single(config, topic, message, ids, unix_ms)
}

/// What a message's `Pub` trace record needs from it, taken before it is sent.
struct Traced {
    tags: String,
    keys: String,
    body_length: i32,
    delayed: bool,
}

impl Traced {
    fn of(message: &ProducerMessage) -> Self {
        let outgoing = message.as_outgoing();
        let property = |name: &str| outgoing.property(name).unwrap_or_default().to_owned();
        Self {
            tags: property("TAGS"),
            keys: property("KEYS"),
            body_length: i32::try_from(outgoing.body.len()).unwrap_or(i32::MAX),
            delayed: outgoing.property("DELAY").is_some_and(|level| level != "0"),
        }
    }
}

impl<R: Runtime> Inner<R> {
    /// Queues the `Pub` records of a send that `addr` answered with `result` (Java's
    /// `SendMessageTraceHookImpl`: the group and topic without their namespace, the message
    /// ids, how long the send took, and whether it was stored).
    fn trace(
        &self,
        topic: &str,
        traced: &[Traced],
        result: &SendResult,
        addr: &str,
        born: i64,
        cost: Duration,
    ) {
        let Some(traces) = &self.traces else {
            return;
        };
        let group = match &self.config.namespace {
            Some(ns) => consumer_core::namespace::Namespace::new(ns.as_str())
                .map(|ns| ns.unwrap(&self.config.group).into_owned())
                .unwrap_or_else(|_| self.config.group.clone()),
            None => self.config.group.clone(),
        };
        let cost_ms = i32::try_from(cost.as_millis()).unwrap_or(i32::MAX);
        let mut batch = proto::trace::TraceBatch::default();
        for (i, t) in traced.iter().enumerate() {
            let record = proto::trace::TraceRecord::Pub(proto::trace::PubTrace {
                timestamp: born,
                region: "DefaultRegion".to_owned(),
                group: group.clone(),
                topic: topic.to_owned(),
                msg_id: result.msg_ids.get(i).cloned().unwrap_or_default(),
                tags: t.tags.clone(),
                keys: t.keys.clone(),
                store_host: addr.to_owned(),
                body_length: t.body_length,
                cost_ms,
                // Java's `MessageType`: `Normal_Msg` 0, `Delay_Msg` 3.
                message_type: if t.delayed { 3 } else { 0 },
                offset_msg_id: result.offset_msg_ids.get(i).cloned().unwrap_or_default(),
                success: result.status == consumer_core::producer::SendStatus::Ok,
            });
            batch.push(&record);
        }
        lock(traces).append(batch);
    }
}

/// Wall-clock milliseconds: the message's born timestamp.
fn unix_ms() -> i64 {
    i64::try_from(since_epoch().as_millis()).unwrap_or(i64::MAX)
}
