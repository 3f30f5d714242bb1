//! The async driver shared by the runtime adapters (`rocketmq-tokio`, `rocketmq-smol`).
//!
//! [`consumer_core::Consumer`] decides everything: what to connect to, what to send, when to
//! retry, which offsets to commit. This crate only carries out its outputs, once, generic over a
//! small [`Runtime`] trait (clock, timer, spawn, TCP connect), the way quinn shares its endpoint
//! driver between runtimes:
//!
//! - one task owns the `Consumer` by value (no locks) and feeds it every input;
//! - each connection is a task that reads frames into the driver's input channel and writes the
//!   frames the driver queues for it; a connection that fails to open or breaks is reported with
//!   `handle_disconnected`, and `Output::Close` aborts it;
//! - one timer, re-armed to `poll_timeout()`, with the clock checked before waiting;
//! - each `Output::Deliver` runs the user's handler on its own task. The core bounds deliveries
//!   in flight (`max_in_flight_deliveries`, 20 by default), so that bounds the handlers too.
//!
//! The [`Producer`] is shared the same way: `consumer_core::producer` decides routes, queues,
//! requests and retries; this crate sends the requests and waits for the answers.
//!
//! Users reach this through an adapter crate: `rocketmq_tokio::PushConsumer::builder("g")`,
//! `rocketmq_tokio::Producer::builder("g")`.

mod client;
mod driver;
mod producer;
mod runtime;

use std::future::Future;
use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_channel::{mpsc, oneshot};

pub use consumer_core::producer::{
    ProducerConfig, ProducerMessage, SendError, SendResult, SendStatus,
};
pub use consumer_core::{
    ConfigError, ConsumeOutcome, ConsumerConfig, Event, MessageQueue, ShutdownReport,
};
pub use producer::{Producer, ProducerBuilder};
pub use proto::message::Message;
pub use runtime::{BoxFuture, Runtime};

use crate::driver::{Driver, EventSink, Handler, Input};

/// The names an application needs, for the adapters to re-export in one line.
pub mod prelude {
    pub use crate::{
        ConfigError, ConsumeFrom, ConsumeOutcome, ConsumerConfig, DriverStopped, Event, Message,
        MessageQueue, ProducerConfig, ProducerMessage, RunningConsumer, Runtime, SendError,
        SendResult, SendStatus, ShutdownReport,
    };
}

/// Where a group with no committed offset for a queue starts consuming it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumeFrom {
    /// The queue's beginning.
    First,
    /// The queue's end: only messages stored from now on (Java's default).
    #[default]
    Last,
    /// The first message stored at or after this time (milliseconds since the Unix epoch).
    Timestamp(i64),
}

impl From<ConsumeFrom> for consumer_core::ConsumeFrom {
    fn from(from: ConsumeFrom) -> Self {
        match from {
            ConsumeFrom::First => Self::FirstOffset,
            ConsumeFrom::Last => Self::LastOffset,
            ConsumeFrom::Timestamp(ms) => Self::Timestamp(ms),
        }
    }
}

/// A push consumer, configured and not yet running. Build it with [`PushConsumer::builder`],
/// then start it with [`PushConsumer::start_concurrently`].
pub struct PushConsumer<R: Runtime> {
    runtime: R,
    consumer: consumer_core::Consumer,
    events: Option<EventSink>,
}

impl<R: Runtime> std::fmt::Debug for PushConsumer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushConsumer")
            .field("client_id", &self.consumer.client_id())
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> PushConsumer<R> {
    /// A builder for a consumer of `group`, with Java's defaults.
    pub fn builder(group: impl Into<String>) -> PushConsumerBuilder<R> {
        PushConsumerBuilder {
            config: ConsumerConfig::new(group, Vec::new()),
            subscriptions: Vec::new(),
            client_ip: None,
            _runtime: PhantomData,
        }
    }

    /// The client id brokers know this consumer by (`ip@pid#start_nanos`).
    pub fn client_id(&self) -> &str {
        self.consumer.client_id()
    }

    /// Calls `observer` with every [`Event`] the consumer reports (assignments, failed requests,
    /// moved offsets...), on the driver task: it must return quickly.
    #[must_use]
    pub fn on_event(mut self, observer: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(observer));
        self
    }

    /// Starts consuming: spawns the driver task on the runtime and returns its handle. Each
    /// delivery (`consume_batch_size` messages of one queue, 1 by default) is passed to
    /// `handler` on a task of its own; up to `max_in_flight_deliveries` (20) run at once. A
    /// handler that panics counts as [`ConsumeOutcome::ReconsumeLater`].
    ///
    /// Call it where the runtime can spawn (inside a tokio runtime for `rocketmq-tokio`).
    /// Dropping the handle starts a graceful shutdown without waiting for it; prefer
    /// [`RunningConsumer::shutdown`].
    pub fn start_concurrently<F, Fut>(self, handler: F) -> RunningConsumer
    where
        F: Fn(Vec<Message>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeOutcome> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |messages| Box::pin(handler(messages)));
        let (inputs_tx, inputs) = mpsc::unbounded();
        let (done, report) = oneshot::channel();
        let client_id = self.consumer.client_id().to_owned();
        let driver = Driver {
            runtime: self.runtime.clone(),
            consumer: self.consumer,
            handler,
            events: self.events,
            inputs_tx: inputs_tx.clone(),
            inputs,
            done,
        };
        self.runtime.spawn(Box::pin(driver.run()));
        RunningConsumer {
            inputs: inputs_tx,
            report: Some(report),
            client_id,
        }
    }
}

/// Configures a [`PushConsumer`].
pub struct PushConsumerBuilder<R: Runtime> {
    config: ConsumerConfig,
    subscriptions: Vec<(String, String)>,
    client_ip: Option<String>,
    _runtime: PhantomData<R>,
}

impl<R: Runtime> std::fmt::Debug for PushConsumerBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushConsumerBuilder")
            .field("config", &self.config)
            .field("subscriptions", &self.subscriptions)
            .field("client_ip", &self.client_ip)
            .finish()
    }
}

impl<R: Runtime> PushConsumerBuilder<R> {
    /// Adds a name server address (`host:port`); call again for more.
    #[must_use]
    pub fn name_server(mut self, addr: impl Into<String>) -> Self {
        self.config.name_servers.push(addr.into());
        self
    }

    /// Subscribes to `topic` with a tag expression (`*`, or `TagA || TagB`); call again for more
    /// topics.
    #[must_use]
    pub fn subscribe(mut self, topic: impl Into<String>, expression: impl Into<String>) -> Self {
        self.subscriptions.push((topic.into(), expression.into()));
        self
    }

    /// Where queues without a committed offset start ([`ConsumeFrom::Last`] by default).
    #[must_use]
    pub fn consume_from(mut self, from: ConsumeFrom) -> Self {
        self.config.consume_from = from.into();
        self
    }

    /// The IP address in the client id. By default it is `127.0.0.1` when the first name server
    /// is on loopback or named by a host name (no DNS lookup is made for this), else the local
    /// address the system would use to reach that name server. It only names this client to the
    /// brokers; uniqueness comes from the `pid#start_nanos` that follows it.
    #[must_use]
    pub fn client_ip(mut self, ip: impl Into<String>) -> Self {
        self.client_ip = Some(ip.into());
        self
    }

    /// Adjusts any other knob of the core's [`ConsumerConfig`] (batch size, handlers in flight,
    /// cache limits, intervals...).
    #[must_use]
    pub fn configure(mut self, adjust: impl FnOnce(&mut ConsumerConfig)) -> Self {
        adjust(&mut self.config);
        self
    }

    /// Checks the configuration and subscriptions and creates the consumer (nothing is
    /// connected until it starts).
    pub fn build(self) -> Result<PushConsumer<R>, ConfigError> {
        if self.subscriptions.is_empty() {
            return Err(ConfigError("subscribe to at least one topic".to_owned()));
        }
        let runtime = R::default();
        let now = runtime.now();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let ip = self.client_ip.unwrap_or_else(|| {
            self.config
                .name_servers
                .first()
                .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |ns| local_ip(ns))
                .to_string()
        });
        let instance =
            consumer_core::default_instance_name(std::process::id(), since_epoch.as_nanos());
        let client_id = consumer_core::client_id(&ip, &instance);
        let unix_ms = i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX);
        let mut consumer = consumer_core::Consumer::new(self.config, client_id, now, unix_ms)?;
        for (topic, expression) in &self.subscriptions {
            consumer.subscribe(now, topic, expression)?;
        }
        Ok(PushConsumer {
            runtime,
            consumer,
            events: None,
        })
    }
}

/// The local address the system would use to reach `name_server`, found by "connecting" a UDP
/// socket (which sends nothing). Loopback, host names and failures give `127.0.0.1`.
fn local_ip(name_server: &str) -> IpAddr {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let Ok(peer) = name_server.parse::<SocketAddr>() else {
        return loopback;
    };
    if peer.ip().is_loopback() {
        return loopback;
    }
    let any = match peer {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    UdpSocket::bind((any, 0))
        .and_then(|socket| {
            socket.connect(peer)?;
            socket.local_addr()
        })
        .map_or(loopback, |local| local.ip())
}

/// A running consumer. Shut it down with [`RunningConsumer::shutdown`]; dropping it starts the
/// same graceful shutdown without waiting for it.
#[derive(Debug)]
pub struct RunningConsumer {
    inputs: mpsc::UnboundedSender<Input>,
    report: Option<oneshot::Receiver<ShutdownReport>>,
    client_id: String,
}

impl RunningConsumer {
    /// The client id brokers know this consumer by.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Shuts down gracefully: no new pulls or deliveries; in-flight handlers get up to
    /// `shutdown_drain_timeout` (10 s) to finish; offsets are committed and the client
    /// unregisters. Resolves when the consumer has closed, with what it did.
    ///
    /// Fails only when the driver task ended without closing the consumer (it panicked, or the
    /// runtime shut down under it).
    pub async fn shutdown(mut self) -> Result<ShutdownReport, DriverStopped> {
        let _ = self.inputs.unbounded_send(Input::Shutdown);
        match self.report.take() {
            Some(report) => report.await.map_err(|_| DriverStopped),
            None => Err(DriverStopped),
        }
    }
}

impl Drop for RunningConsumer {
    fn drop(&mut self) {
        if self.report.is_some() {
            let _ = self.inputs.unbounded_send(Input::Shutdown);
        }
    }
}

/// The driver task ended without a shutdown report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverStopped;

impl std::fmt::Display for DriverStopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the consumer's driver task stopped before the consumer closed")
    }
}

impl std::error::Error for DriverStopped {}
