//! [`PopConsumer`]: the push consumer in pop mode (RocketMQ 5.x brokers), and the builder both
//! pop shapes share ([`PopConsumerBuilder`], also behind [`SimpleConsumer`](crate::SimpleConsumer)).
//!
//! Its own type rather than a `.pop()` switch on the push consumer's builder: a pop consumer
//! owns no queues (the broker assigns and may share them), so the push consumer's queue
//! controls (pause, seek, offsets, orderly leases) mean nothing for it, while it has settings
//! of its own (invisibility, renewal, the pop batch). One builder per behaviour keeps each API
//! to what works.

use std::future::Future;
use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use consumer_core::pop::{PopConfig, PopEvent, PopMode, PopShutdownReport, PopStats};
use consumer_core::{ConfigError, ConsumeOutcome, Credentials, Messages};

use crate::DriverStopped;
use crate::host::{local_ip, since_epoch};
use crate::pop_driver::{PopEventSink, PopHandler, PopInput, PopSpawned};
use crate::runtime::Runtime;

/// Builds a [`PopConsumer`] (or, with [`PopConsumerBuilder::build_simple`], a
/// [`SimpleConsumer`](crate::SimpleConsumer)).
pub struct PopConsumerBuilder<R: Runtime> {
    config: PopConfig,
    subscriptions: Vec<(String, String)>,
    client_ip: Option<String>,
    instance_name: Option<String>,
    credentials: Option<Credentials>,
    #[cfg(feature = "tls")]
    tls: Option<crate::Tls>,
    events: Option<PopEventSink>,
    runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> PopConsumerBuilder<R> {
    pub(crate) fn new(group: impl Into<String>) -> Self {
        Self {
            config: PopConfig::new(group, Vec::new()),
            subscriptions: Vec::new(),
            client_ip: None,
            instance_name: None,
            credentials: None,
            #[cfg(feature = "tls")]
            tls: None,
            events: None,
            runtime: PhantomData,
        }
    }

    /// Adds a name server (`host:port`).
    #[must_use]
    pub fn name_server(mut self, addr: impl Into<String>) -> Self {
        self.config.name_servers.push(addr.into());
        self
    }

    /// Subscribes to `topic` with a tag expression (`*`, `TagA || TagB`).
    #[must_use]
    pub fn subscribe(mut self, topic: impl Into<String>, expression: impl Into<String>) -> Self {
        self.subscriptions.push((topic.into(), expression.into()));
        self
    }

    /// How long a popped message stays invisible to the rest of the group (60 s). Push mode
    /// renews it while the handler runs; simple mode's `receive` takes its own.
    #[must_use]
    pub fn invisible_time(mut self, invisible: Duration) -> Self {
        self.config.invisible_time = invisible;
        self
    }

    /// Orderly pop (push mode only): each queue's messages reach the handler one delivery at
    /// a time, in offset order, and after a failed delivery none of that queue's later
    /// messages does before the failed one comes back (after its retry delay). The broker
    /// keeps the order across members (Java's `ConsumeMessagePopOrderlyService`;
    /// see `PopConfig::orderly`).
    #[must_use]
    pub fn orderly(mut self) -> Self {
        self.config.orderly = true;
        self
    }

    /// The most messages one pop asks for, 1 ..= 32 (32).
    #[must_use]
    pub fn batch_size(mut self, size: u32) -> Self {
        self.config.batch_size = size;
        self
    }

    /// Handlers running at once (20).
    #[must_use]
    pub fn max_in_flight_deliveries(mut self, n: usize) -> Self {
        self.config.max_in_flight_deliveries = n;
        self
    }

    /// Messages per handler call (1); a successful call is acked in one batch ack.
    #[must_use]
    pub fn consume_batch_size(mut self, n: usize) -> Self {
        self.config.consume_batch_size = n;
        self
    }

    /// Popped, unsettled messages held at most (96) and their body bytes (64 MiB): above
    /// either, no pop is sent.
    #[must_use]
    pub fn max_cached(mut self, messages: usize, bytes: usize) -> Self {
        self.config.max_cached_messages = messages;
        self.config.max_cached_bytes = bytes;
        self
    }

    /// Deliveries before a failing message goes to `%DLQ%<group>` (16).
    #[must_use]
    pub fn max_reconsume_times(mut self, times: i32) -> Self {
        self.config.max_reconsume_times = times;
        self
    }

    /// The invisibility after the n-th failure (Java's `popDelayLevel`, 10 s up to 2 h).
    #[must_use]
    pub fn retry_delays(mut self, delays: Vec<Duration>) -> Self {
        self.config.retry_delays = delays;
        self
    }

    /// Renew a running handler's invisibility this long before it ends (10 s).
    #[must_use]
    pub fn renew_ahead(mut self, ahead: Duration) -> Self {
        self.config.renew_ahead = ahead;
        self
    }

    /// Whether to set the group's request mode to POP on the brokers (on), and how many other
    /// members' queues each member also pops (0: all share every queue).
    #[must_use]
    pub fn request_mode(mut self, set: bool, pop_share_queue_num: i32) -> Self {
        self.config.set_request_mode = set;
        self.config.pop_share_queue_num = pop_share_queue_num;
        self
    }

    /// How long shutdown waits for running handlers (10 s).
    #[must_use]
    pub fn shutdown_drain_timeout(mut self, timeout: Duration) -> Self {
        self.config.shutdown_drain_timeout = timeout;
        self
    }

    /// The address brokers know this client by (default: the one that reaches the name server).
    #[must_use]
    pub fn client_ip(mut self, ip: impl Into<String>) -> Self {
        self.client_ip = Some(ip.into());
        self
    }

    /// The instance part of the client id (default `pid#start_nanos`).
    #[must_use]
    pub fn instance_name(mut self, name: impl Into<String>) -> Self {
        self.instance_name = Some(name.into());
        self
    }

    /// A namespace around the group and topics.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.config.namespace = Some(namespace.into());
        self
    }

    /// TLS to the name servers and brokers (Java's `useTLS`; see
    /// `PushConsumerBuilder::tls`); plain TCP without.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: crate::Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// ACL credentials to sign every request with.
    #[must_use]
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Observes the consumer's events (assignments, failed settles, dead letters).
    #[must_use]
    pub fn on_event(mut self, sink: impl Fn(&PopEvent) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// Checks the settings: a push consumer in pop mode, started with
    /// [`PopConsumer::start`].
    pub fn build(self) -> Result<PopConsumer<R>, ConfigError> {
        self.check(PopMode::Push)?;
        Ok(PopConsumer { builder: self })
    }

    /// Starts a [`SimpleConsumer`](crate::SimpleConsumer): nothing is popped unasked.
    pub fn build_simple(self) -> Result<crate::SimpleConsumer<R>, ConfigError> {
        self.check(PopMode::Simple)?;
        let invisible = self.config.invisible_time;
        let max = self.config.batch_size;
        let spawned = self.spawn(PopMode::Simple, None)?;
        Ok(crate::SimpleConsumer::new(spawned, max, invisible))
    }

    fn check(&self, mode: PopMode) -> Result<(), ConfigError> {
        let mut config = self.config.clone();
        config.mode = mode;
        config.validate()?;
        if mode == PopMode::Simple && config.orderly {
            return Err(ConfigError(
                "orderly pop is for the push consumer (`build`); a simple consumer settles \
                 each message itself"
                    .into(),
            ));
        }
        if self.subscriptions.is_empty() {
            return Err(ConfigError("no subscription".into()));
        }
        Ok(())
    }

    fn spawn(&self, mode: PopMode, handler: Option<PopHandler>) -> Result<PopSpawned, ConfigError> {
        let runtime = R::default();
        let now = runtime.now();
        let mut config = self.config.clone();
        config.mode = mode;
        let ip = self.client_ip.clone().unwrap_or_else(|| {
            config
                .name_servers
                .first()
                .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |ns| local_ip(ns))
                .to_string()
        });
        let instance = self.instance_name.clone().unwrap_or_else(|| {
            consumer_core::default_instance_name(std::process::id(), since_epoch().as_nanos())
        });
        let unix_ms = i64::try_from(since_epoch().as_millis()).unwrap_or(i64::MAX);
        let client_id = consumer_core::client_id(&ip, &instance);
        let mut pop = consumer_core::pop::PopConsumer::new(config, client_id, now, unix_ms)?;
        pop.set_credentials(self.credentials.clone());
        for (topic, expression) in &self.subscriptions {
            pop.subscribe(now, topic, expression)?;
        }
        #[cfg(feature = "tls")]
        let tls = self.tls.as_ref().map(crate::Tls::connector).transpose()?;
        #[cfg(not(feature = "tls"))]
        let tls = None;
        Ok(PopSpawned::spawn(
            &runtime,
            pop,
            tls,
            handler,
            self.events.clone(),
        ))
    }
}

/// A push consumer in pop mode, built and not started.
pub struct PopConsumer<R: Runtime> {
    builder: PopConsumerBuilder<R>,
}

impl<R: Runtime> PopConsumer<R> {
    /// A builder for consumer group `group`.
    pub fn builder(group: impl Into<String>) -> PopConsumerBuilder<R> {
        PopConsumerBuilder::new(group)
    }

    /// Starts popping, running `handler` for each delivery: `Success` acks its messages,
    /// `ReconsumeLater` brings them back after the retry backoff, a panic counts as
    /// `ReconsumeLater`.
    pub fn start<F, Fut>(self, handler: F) -> Result<RunningPopConsumer<R>, ConfigError>
    where
        F: Fn(Messages) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeOutcome> + Send + 'static,
    {
        let handler: PopHandler = Arc::new(move |messages| Box::pin(handler(messages)));
        let spawned = self.builder.spawn(PopMode::Push, Some(handler))?;
        Ok(RunningPopConsumer {
            spawned,
            runtime: PhantomData,
        })
    }
}

/// A running pop consumer; dropping it shuts it down without waiting.
pub struct RunningPopConsumer<R: Runtime> {
    spawned: PopSpawned,
    runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> RunningPopConsumer<R> {
    /// The consumer's counters now.
    pub async fn stats(&self) -> Result<PopStats, DriverStopped> {
        self.spawned.ask(PopInput::Stats).await.ok_or(DriverStopped)
    }

    /// Stops at once, as a killed process would look to the brokers: no ack, no release, no
    /// unregistration is sent and the connections close. Every message this member held comes
    /// back to the group after its invisibility (at-least-once), with its reconsume count
    /// raised. Running handlers finish on their own; their results are dropped.
    pub fn abort(mut self) {
        self.spawned.abort();
    }

    /// Stops popping, waits (bounded) for running handlers and their acks, makes what was
    /// popped and not handled visible again, unregisters.
    pub async fn shutdown(mut self) -> Result<PopShutdownReport, DriverStopped> {
        self.spawned.shutdown().await
    }
}
