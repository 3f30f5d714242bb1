//! [`PushConsumer`]: the application hands over a handler and the consumer calls it.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use consumer_core::config::ConsumeMode;
use consumer_core::{ConfigError, ConsumeOutcome, ConsumerStats, Event, MessageQueue, Messages};

use crate::control::ControlError;
use crate::input::{EventSink, Input, PullCommand};
use crate::runtime::Runtime;
use crate::setup::{Checked, Setup, Spawned, setup_setters};
#[cfg(doc)]
use crate::{ConsumeFrom, ConsumerConfig};
use crate::{DriverStopped, ShutdownReport};

/// A push consumer, configured and not yet running. Build it with [`PushConsumer::builder`],
/// then start it with [`PushConsumer::start_concurrently`] or [`PushConsumer::start_orderly`].
pub struct PushConsumer<R: Runtime> {
    checked: Checked,
    events: Option<EventSink>,
    _runtime: PhantomData<R>,
}

impl<R: Runtime> std::fmt::Debug for PushConsumer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushConsumer")
            .field("client_id", &self.checked.client_id)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> PushConsumer<R> {
    /// A builder for a consumer of `group`, with Java's defaults.
    pub fn builder(group: impl Into<String>) -> PushConsumerBuilder<R> {
        PushConsumerBuilder {
            setup: Setup::new(group.into()),
            _runtime: PhantomData,
        }
    }

    /// The client id brokers know this consumer by (`ip@pid#start_nanos`).
    pub fn client_id(&self) -> &str {
        &self.checked.client_id
    }

    /// Calls `observer` with every [`Event`] the consumer reports (assignments, failed requests,
    /// moved offsets...), on the driver task: it must return quickly.
    #[must_use]
    pub fn on_event(mut self, observer: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(observer));
        self
    }

    /// Starts consuming with handlers running side by side: spawns the driver task on the
    /// runtime and returns its handle. Each delivery (`consume_batch_size` messages of one
    /// queue, 1 by default) is passed to `handler` on a task of its own; up to
    /// `max_in_flight_deliveries` (20) run at once. While handlers are cheap (a few µs before
    /// they finish or first wait), a delivery's first poll runs on the driver's task instead,
    /// and a handler that is done by then costs no task at all; so do not block the thread in
    /// a handler (no `std::thread::sleep`, no blocking I/O without `spawn_blocking`): the first
    /// such call would hold up the consumer. A handler that panics counts as
    /// [`ConsumeOutcome::ReconsumeLater`]; in clustering, failed messages go back to the broker
    /// and return after its delay (10 s after the first failure, growing), until
    /// `max_reconsume_times` sends them to the group's dead-letter queue.
    ///
    /// Call it where the runtime can spawn (inside a tokio runtime for `rocketmq-tokio`).
    /// Dropping the handle starts a graceful shutdown without waiting for it; prefer
    /// [`RunningConsumer::shutdown`].
    pub fn start_concurrently<F, Fut>(self, handler: F) -> RunningConsumer
    where
        F: Fn(Messages) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeOutcome> + Send + 'static,
    {
        self.start(ConsumeMode::Concurrent, handler)
    }

    /// Starts consuming in order: each queue's messages reach `handler` one delivery at a time,
    /// in queue order, and (clustering) only while this consumer holds the queue's lock on its
    /// broker, so messages sent to one queue (for example chosen by a sharding key) are handled
    /// in the order they were stored, even while members join and leave. Different queues still
    /// run side by side, up to `max_in_flight_deliveries`.
    ///
    /// A handler that answers [`ConsumeOutcome::Suspend`] or
    /// [`ConsumeOutcome::ReconsumeLater`] gets the same batch again after the pause
    /// (`suspend_delay`, 1 s by default); after `max_reconsume_times` failures (unlimited by
    /// default) a message goes to the dead-letter queue and the queue moves on. A handler that
    /// panics counts as `ReconsumeLater`.
    pub fn start_orderly<F, Fut>(self, handler: F) -> RunningConsumer
    where
        F: Fn(Messages) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeOutcome> + Send + 'static,
    {
        self.start(ConsumeMode::Orderly, handler)
    }

    fn start<F, Fut>(self, mode: ConsumeMode, handler: F) -> RunningConsumer
    where
        F: Fn(Messages) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeOutcome> + Send + 'static,
    {
        let handler = crate::handler::boxed(handler);
        let runtime = R::default();
        let consumer = self
            .checked
            .consumer(mode, runtime.now())
            // `build` made a consumer from this very configuration, in each mode.
            .expect("build checked this configuration and these subscriptions");
        let client_id = self.checked.client_id.clone();
        let spawned = self
            .checked
            .spawn(&runtime, consumer, Some(handler), self.events);
        RunningConsumer { spawned, client_id }
    }
}

/// Configures a [`PushConsumer`].
pub struct PushConsumerBuilder<R: Runtime> {
    setup: Setup,
    _runtime: PhantomData<R>,
}

impl<R: Runtime> std::fmt::Debug for PushConsumerBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushConsumerBuilder")
            .field("config", &self.setup.config)
            .field("subscriptions", &self.setup.subscriptions)
            .field("client_ip", &self.setup.client_ip)
            .field("instance_name", &self.setup.instance_name)
            .field("offset_dir", &self.setup.offset_dir)
            .finish()
    }
}

impl<R: Runtime> PushConsumerBuilder<R> {
    setup_setters! {
        /// Adds a name server address (`host:port`); call again for more.
        name_server;

        /// Subscribes to `topic` with a tag expression (`*`, or `TagA || TagB`); call again for
        /// more topics.
        subscribe;

        /// Subscribes to `topic` with an SQL92 expression over message properties, evaluated by
        /// the broker (which must run with `enablePropertyFilter=true`; otherwise the subscription
        /// is dropped with `Event::SubscriptionRejected`).
        subscribe_sql92;

        /// Where queues without a committed offset start ([`ConsumeFrom::Last`] by default).
        consume_from;

        /// Every member of the group gets every message (Java's `BROADCASTING`), instead of each
        /// message going to one member. Each member keeps its offsets in a local file,
        /// `<offset_dir>/<ip>@<instance>/<group>/offsets.json` (Java's path and format; the
        /// instance is `DEFAULT` unless [`Self::instance_name`] sets one), read when the consumer
        /// is built and replaced atomically every `persist_interval` (5 s) and at shutdown; a
        /// member restarted with the same directory resumes where it stopped. The file is
        /// locked while the consumer runs: a second live consumer of it fails `build`. Failed messages are not
        /// sent back: they are delivered again locally until `max_reconsume_times`, then dropped.
        broadcasting;

        /// The directory of broadcasting offset files: `$HOME/.rocketmq_offsets` by default (the
        /// system's temporary directory when there is no `HOME`).
        offset_dir;

        /// How many times a failed message is delivered again before it goes to the group's
        /// dead-letter queue `%DLQ%<group>` (broadcasting: before it is dropped). Java's defaults
        /// when unset: 16 for concurrent handlers, unlimited for orderly ones.
        max_reconsume_times;

        /// The IP address in the client id. By default it is `127.0.0.1` when the first name server
        /// is on loopback or named by a host name (no DNS lookup is made for this), else the local
        /// address the system would use to reach that name server. It only names this client to the
        /// brokers; uniqueness comes from the `pid#start_nanos` that follows it.
        client_ip;

        /// The instance name in the client id (`ip@instance`), as Java's
        /// `ClientConfig.setInstanceName`. By default `pid#start_nanos`, unique per process. Two
        /// members of one group must never share a client id: set it only to something unique,
        /// such as a pod name. An empty name fails `build`.
        instance_name;

        /// Credentials for a cluster with ACL (Java's `AclClientRPCHook`): every request to the
        /// name servers and brokers is signed with them. Without, nothing is signed. Rotate
        /// them on the running consumer with `set_credentials`; a refused request is reported
        /// as `Event::AccessDenied` and retried on its usual schedule.
        credentials;

        /// The tenant namespace (Java's `setNamespace`): the group and topics are
        /// `namespace%name` on the wire, and messages, queues and events name them without it,
        /// so two namespaces with the same topic and group names never meet. Letters, digits,
        /// `_` and `-` only; anything else fails `build`.
        namespace;

        /// TLS for every connection to the name servers and brokers (Java's `useTLS`), with
        /// the servers' certificates checked as [`Tls`](crate::Tls) says; plain TCP without.
        /// A handshake that fails (an untrusted or wrongly named certificate, a plain server)
        /// is logged with its reason and retried with the reconnect backoff. Bad certificate
        /// files fail `build`.
        tls;

        /// How the group's members share a topic's queues (every member must use the same):
        /// [`Strategy::Averagely`](crate::Strategy::Averagely) by default, as Java; also by
        /// circle, by config, by machine room, machine room nearby (with a
        /// [`MachineRoomResolver`](crate::MachineRoomResolver) such as
        /// [`RoomPrefix`](crate::RoomPrefix)), and consistent hash, each as its Java
        /// `AllocateMessageQueueStrategy`.
        allocation;

        /// Export the consumer's stats through the `metrics` facade every `every` (the
        /// `metrics` feature; names and labels in [`crate::metrics`]), for the
        /// recorder the application installed. Costs nothing per message.
        metrics;

        /// Message trace (Java's `enableMsgTrace`): every message is traced as its handler
        /// starts and finishes, in Java's trace format, to `RMQ_SYS_TRACE_TOPIC` (brokers
        /// create it with `traceTopicEnable=true`), so Java's dashboard and `mqadmin
        /// queryMsgTraceById` show this consumer. Records go out in batches from a task and a
        /// producer of their own, never holding deliveries back: when the trace topic cannot
        /// keep up they are dropped and counted (`stats().trace_dropped`).
        trace;

        /// [`Self::trace`] to another topic.
        trace_topic;

        /// At most this many messages (and, with
        /// [`RateLimit::with_bytes`](crate::RateLimit::with_bytes), body bytes) a second reach
        /// the handler, over all queues. Messages beyond it wait in the cache, and a
        /// queue caching one second of the limit stops pulling; nothing is dropped. Bursts of
        /// up to 100 ms of the rate pass at once; `stats()` counts how often the limit held
        /// messages back. Unlimited by default; zero fails `build`.
        rate_limit;

        /// A rate limit for `topic` alone (as subscribed), on top of [`Self::rate_limit`]; call
        /// again for more topics.
        topic_rate_limit;

        /// Adjusts any other knob of the core's [`ConsumerConfig`] (batch size, handlers in flight,
        /// cache limits, intervals...). The consume mode is set by the `start_*` method.
        configure;
    }

    /// Calls `hook` with the queues a rebalance takes from this consumer, before they go: each
    /// queue's final commit (orderly: and unlock) waits until the hook's future is done and
    /// the queue's running handlers finished, for at most `revoke_drain_timeout` (5 s), so the
    /// application can flush what it keeps per queue first. Handlers of those queues may still
    /// be running when it is called; no more deliveries of them start. Not called at
    /// shutdown (the application's code after `shutdown` runs after the final commits), nor
    /// for a queue taken back by its broker (an orderly lease lost). Runs on a task of its
    /// own; a panic counts as done.
    #[must_use]
    pub fn on_revoke<F>(
        mut self,
        hook: impl Fn(Vec<MessageQueue>) -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.setup.config.revoke_hook = true;
        self.setup.hooks.on_revoke = Some(Arc::new(move |queues| Box::pin(hook(queues))));
        self
    }

    /// Calls `hook` with the queues newly owned by this consumer and the offsets they start
    /// at, once those are known (the group's committed offset, or `consume_from`'s), together
    /// for the queues that started at the same time. Pulling has started then: it tells, it
    /// does not hold anything back. Runs on a task of its own.
    #[must_use]
    pub fn on_assigned<F>(
        mut self,
        hook: impl Fn(Vec<(MessageQueue, i64)>) -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.setup.hooks.on_assigned = Some(Arc::new(move |queues| Box::pin(hook(queues))));
        self
    }

    /// Checks the configuration and subscriptions, reads the broadcasting offset file, and
    /// creates the consumer (nothing is connected until it starts).
    pub fn build(self) -> Result<PushConsumer<R>, ConfigError> {
        if self.setup.subscriptions.is_empty() {
            return Err(ConfigError("subscribe to at least one topic".to_owned()));
        }
        let checked = self.setup.check()?;
        // Consumers made now refuse exactly what the ones made at start would.
        let now = R::default().now();
        checked.consumer(ConsumeMode::Concurrent, now)?;
        checked.consumer(ConsumeMode::Orderly, now)?;
        Ok(PushConsumer {
            checked,
            events: None,
            _runtime: PhantomData,
        })
    }
}

/// A running consumer. Shut it down with [`RunningConsumer::shutdown`]; dropping it starts the
/// same graceful shutdown without waiting for it.
#[derive(Debug)]
pub struct RunningConsumer {
    spawned: Spawned,
    client_id: String,
}

impl RunningConsumer {
    /// The client id brokers know this consumer by.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Stops delivering `queues` (and pulling them) until [`RunningConsumer::resume`]: within
    /// one pull round trip nothing more of them reaches the handler, while the other queues
    /// flow; deliveries already running finish. The pause is by queue, so it outlasts
    /// rebalances that keep a queue, and covers a queue assigned later.
    pub fn pause(&self, queues: impl IntoIterator<Item = MessageQueue>) {
        self.spawned
            .tell(Input::Pause(queues.into_iter().collect()));
    }

    /// Moves owned queue `queue` to `offset`: what is cached and in flight for it is dropped
    /// (completions of deliveries already running no longer count), pulling restarts there,
    /// and the offset is committed as consumed up to there. Fails with
    /// [`ControlError::Rejected`] for a queue this consumer does not own or has not started.
    pub async fn seek(&self, queue: &MessageQueue, offset: i64) -> Result<(), ControlError> {
        self.spawned
            .ask(|reply| PullCommand::Seek {
                queue: queue.clone(),
                offset,
                reply,
            })
            .await?
    }

    /// [`RunningConsumer::seek`] to the queue's first stored message, once the broker said
    /// where that is.
    pub async fn seek_to_begin(&self, queue: &MessageQueue) -> Result<(), ControlError> {
        self.seek_to_edge(queue, false).await
    }

    /// [`RunningConsumer::seek`] past the queue's last stored message.
    pub async fn seek_to_end(&self, queue: &MessageQueue) -> Result<(), ControlError> {
        self.seek_to_edge(queue, true).await
    }

    /// [`RunningConsumer::seek`] to the first message of `queue` stored at or after `unix_ms`
    /// (milliseconds since the Unix epoch), as the broker finds it (its end when nothing is
    /// that recent).
    pub async fn seek_to_timestamp(
        &self,
        queue: &MessageQueue,
        unix_ms: i64,
    ) -> Result<(), ControlError> {
        let offset = self
            .spawned
            .ask(|reply| PullCommand::OffsetForTimestamp {
                queue: queue.clone(),
                unix_ms,
                reply,
            })
            .await??;
        self.seek(queue, offset).await
    }

    async fn seek_to_edge(&self, queue: &MessageQueue, to_end: bool) -> Result<(), ControlError> {
        self.spawned
            .ask(|reply| PullCommand::SeekToEdge {
                queue: queue.clone(),
                to_end,
                reply,
            })
            .await?
    }

    /// Delivers (and pulls) `queues` again; what was cached meanwhile comes first.
    pub fn resume(&self, queues: impl IntoIterator<Item = MessageQueue>) {
        self.spawned
            .tell(Input::Resume(queues.into_iter().collect()));
    }

    /// Subscribes to `topic` while running (again: the new tag expression replaces the old
    /// one, and pulls use it from the next one on). The brokers hear of it at once, and the
    /// topic's queues are shared out at the rebalance that follows. Fails with
    /// [`ControlError::Rejected`] for a name brokers refuse (empty, too long, `%RETRY%`).
    pub async fn subscribe(
        &self,
        topic: impl Into<String>,
        expression: impl Into<String>,
    ) -> Result<(), ControlError> {
        self.subscribe_with(topic.into(), expression.into(), false)
            .await
    }

    /// [`RunningConsumer::subscribe`] with an SQL92 expression (see
    /// [`PushConsumerBuilder::subscribe_sql92`]).
    pub async fn subscribe_sql92(
        &self,
        topic: impl Into<String>,
        expression: impl Into<String>,
    ) -> Result<(), ControlError> {
        self.subscribe_with(topic.into(), expression.into(), true)
            .await
    }

    async fn subscribe_with(
        &self,
        topic: String,
        expression: String,
        sql92: bool,
    ) -> Result<(), ControlError> {
        self.spawned
            .ask(|reply| PullCommand::Subscribe {
                topic,
                expression,
                sql92,
                reply,
            })
            .await?
    }

    /// Stops consuming `topic`: its queues go as a rebalance takes them (running handlers
    /// finish, offsets are committed, `on_revoke` runs), and the brokers hear of it at the
    /// next heartbeat. Resolves to whether the topic was subscribed.
    pub async fn unsubscribe(&self, topic: impl Into<String>) -> Result<bool, ControlError> {
        let topic = topic.into();
        self.spawned
            .ask(|reply| PullCommand::Unsubscribe { topic, reply })
            .await
    }

    /// A snapshot of the consumer's state: per queue its offsets (committed, committable, next
    /// pull, the broker's max), lag, cache, in-flight messages, pause, lease and last pull;
    /// totals; pull and consume latencies (p50, p99, max); connections. Answered by the driver
    /// task between two of its steps, so it costs the consumer no more than a copy.
    pub async fn stats(&self) -> Result<ConsumerStats, ControlError> {
        self.spawned.ask(PullCommand::Stats).await
    }

    /// Signs every request from now on with `credentials` (`None`: unsigned), so rotated ACL
    /// keys take effect without a restart. Requests already sent keep their signature.
    pub fn set_credentials(&self, credentials: Option<consumer_core::Credentials>) {
        self.spawned.tell(Input::Credentials(credentials));
    }

    /// Shuts down gracefully: no new pulls or deliveries; in-flight handlers get up to
    /// `shutdown_drain_timeout` (10 s) to finish; offsets are committed (broadcasting: stored
    /// in the offset file; a commit that lost its connection goes once more after the reconnect
    /// backoff), orderly queue locks released, and the client unregisters. Resolves when the
    /// consumer has closed, with what it did.
    ///
    /// Fails only when the driver task ended without closing the consumer (it panicked, or the
    /// runtime shut down under it).
    pub async fn shutdown(mut self) -> Result<ShutdownReport, DriverStopped> {
        self.spawned.shutdown().await
    }
}
