//! What the push and lite pull builders share: the configuration they collect, the client id,
//! the broadcasting offset file, and turning all of it into a [`Consumer`] and a driver task.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
#[cfg(feature = "metrics")]
use std::time::Duration;

use consumer_core::config::ConsumeMode;
use consumer_core::{ConfigError, Consumer, ConsumerConfig, MessageModel, MessageQueue};
use futures_channel::{mpsc, oneshot};
use tracing::Instrument;

use crate::driver::Driver;
use crate::handler::Handler;
use crate::host::{local_ip, since_epoch};
use crate::input::{EventSink, Input};
use crate::offset_file::{self, OffsetFile};
use crate::runtime::Runtime;
use crate::{ConsumeFrom, DriverStopped, ShutdownReport};

mod setters;

pub(crate) use setters::setup_setters;

/// A builder's state before the consumer exists.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub(crate) config: ConsumerConfig,
    /// `(topic, expression, is SQL92)`.
    pub(crate) subscriptions: Vec<(String, String, bool)>,
    pub(crate) client_ip: Option<String>,
    /// The instance name in the client id (`pid#start_nanos` when `None`).
    pub(crate) instance_name: Option<String>,
    /// Broadcasting: the directory of the offset files (the default when `None`).
    pub(crate) offset_dir: Option<PathBuf>,
    /// TLS for every connection (`None`: plain TCP).
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<crate::Tls>,
    /// The application's rebalance hooks.
    pub(crate) hooks: crate::driver::hooks::RebalanceHooks,
    /// Message trace: the topic its records go to (`None`: no trace).
    pub(crate) trace_topic: Option<String>,
    /// Export the stats through `metrics` this often (`None`: not at all).
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<Duration>,
}

/// A checked [`Setup`], ready to create consumers.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    setup: Setup,
    pub(crate) client_id: String,
    offset_file: Option<OffsetFile>,
    /// Broadcasting: the offsets the last run stored.
    stored: Vec<(MessageQueue, i64)>,
    /// The TLS settings made ready.
    tls: Option<crate::transport::Connector>,
}

impl Setup {
    pub(crate) fn new(group: String) -> Self {
        Self {
            config: ConsumerConfig::new(group, Vec::new()),
            subscriptions: Vec::new(),
            client_ip: None,
            instance_name: None,
            offset_dir: None,
            #[cfg(feature = "tls")]
            tls: None,
            hooks: Default::default(),
            trace_topic: None,
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    // The setters behind the builders' methods (see `setup_setters!`).

    pub(crate) fn name_server(&mut self, addr: impl Into<String>) {
        self.config.name_servers.push(addr.into());
    }

    pub(crate) fn subscribe(&mut self, topic: impl Into<String>, expression: impl Into<String>) {
        self.subscriptions
            .push((topic.into(), expression.into(), false));
    }

    pub(crate) fn subscribe_sql92(
        &mut self,
        topic: impl Into<String>,
        expression: impl Into<String>,
    ) {
        self.subscriptions
            .push((topic.into(), expression.into(), true));
    }

    pub(crate) fn consume_from(&mut self, from: ConsumeFrom) {
        self.config.consume_from = from;
    }

    pub(crate) fn auto_commit(&mut self, on: bool) {
        self.config.auto_commit = on;
    }

    pub(crate) fn broadcasting(&mut self) {
        self.config.message_model = MessageModel::Broadcasting;
    }

    pub(crate) fn offset_dir(&mut self, dir: impl Into<PathBuf>) {
        self.offset_dir = Some(dir.into());
    }

    pub(crate) fn max_reconsume_times(&mut self, times: i32) {
        self.config.max_reconsume_times = Some(times);
    }

    pub(crate) fn client_ip(&mut self, ip: impl Into<String>) {
        self.client_ip = Some(ip.into());
    }

    pub(crate) fn instance_name(&mut self, name: impl Into<String>) {
        self.instance_name = Some(name.into());
    }

    #[cfg(feature = "tls")]
    pub(crate) fn tls(&mut self, tls: crate::Tls) {
        self.tls = Some(tls);
    }

    pub(crate) fn namespace(&mut self, namespace: impl Into<String>) {
        self.config.namespace = Some(namespace.into());
    }

    pub(crate) fn credentials(&mut self, credentials: consumer_core::Credentials) {
        self.config.credentials = Some(credentials);
    }

    pub(crate) fn allocation(&mut self, strategy: consumer_core::rebalance::Strategy) {
        self.config.strategy = strategy;
    }

    #[cfg(feature = "metrics")]
    pub(crate) fn metrics(&mut self, every: Duration) {
        self.metrics = Some(every);
    }

    pub(crate) fn trace(&mut self) {
        self.trace_topic(proto::trace::DEFAULT_TRACE_TOPIC);
    }

    pub(crate) fn trace_topic(&mut self, topic: impl Into<String>) {
        self.config.trace = true;
        self.trace_topic = Some(topic.into());
    }

    pub(crate) fn rate_limit(&mut self, limit: consumer_core::rate::RateLimit) {
        self.config.rate_limit = Some(limit);
    }

    pub(crate) fn topic_rate_limit(
        &mut self,
        topic: impl Into<String>,
        limit: consumer_core::rate::RateLimit,
    ) {
        self.config.topic_rate_limits.insert(topic.into(), limit);
    }

    pub(crate) fn configure(&mut self, adjust: impl FnOnce(&mut ConsumerConfig)) {
        adjust(&mut self.config);
    }

    /// Reads the broadcasting offset file and picks the client id. What the core refuses is
    /// found by [`Checked::consumer`].
    pub(crate) fn check(self) -> Result<Checked, ConfigError> {
        let since_epoch = since_epoch();
        let ip = self.client_ip.clone().unwrap_or_else(|| {
            self.config
                .name_servers
                .first()
                .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |ns| local_ip(ns))
                .to_string()
        });
        let instance = match &self.instance_name {
            // ClientConfig.setInstanceName takes any string; an empty one would leave the id
            // ending in `@`, which no broker tool can tell apart from a missing name.
            Some(name) if name.is_empty() => {
                return Err(ConfigError("the instance name is empty".to_owned()));
            }
            Some(name) => name.clone(),
            None => {
                consumer_core::default_instance_name(std::process::id(), since_epoch.as_nanos())
            }
        };
        let offset_file = match self.config.message_model {
            MessageModel::Broadcasting => {
                let dir = self
                    .offset_dir
                    .clone()
                    .unwrap_or_else(offset_file::default_dir);
                // Java's key: the client id with the instance name a broadcasting Java
                // consumer keeps (see `offset_file`).
                let file_instance = self
                    .instance_name
                    .as_deref()
                    .unwrap_or(offset_file::DEFAULT_INSTANCE);
                let client = consumer_core::client_id(&ip, file_instance);
                Some(OffsetFile::open(&dir, &client, &self.config.group)?)
            }
            _ => None,
        };
        let stored = match &offset_file {
            Some(file) => file.load()?,
            None => Vec::new(),
        };
        #[cfg(feature = "tls")]
        let tls = self.tls.as_ref().map(crate::Tls::connector).transpose()?;
        #[cfg(not(feature = "tls"))]
        let tls = None;
        Ok(Checked {
            tls,
            client_id: consumer_core::client_id(&ip, &instance),
            setup: self,
            offset_file,
            stored,
        })
    }
}

impl Checked {
    /// A consumer in `mode`, subscribed, with the stored offsets loaded, at `now`.
    pub(crate) fn consumer(
        &self,
        mode: ConsumeMode,
        now: std::time::Instant,
    ) -> Result<Consumer, ConfigError> {
        let mut config = self.setup.config.clone();
        config.consume_mode = mode;
        let unix_ms = i64::try_from(since_epoch().as_millis()).unwrap_or(i64::MAX);
        let mut consumer = Consumer::new(config, self.client_id.clone(), now, unix_ms)?;
        consumer.load_offsets(self.stored.iter().cloned());
        for (topic, expression, sql92) in &self.setup.subscriptions {
            if *sql92 {
                consumer.subscribe_sql92(now, topic, expression)?;
            } else {
                consumer.subscribe(now, topic, expression)?;
            }
        }
        Ok(consumer)
    }

    /// Spawns the driver task of `consumer` on `runtime`.
    pub(crate) fn spawn<R: Runtime>(
        &self,
        runtime: &R,
        consumer: Consumer,
        handler: Option<Handler>,
        events: Option<EventSink>,
    ) -> Spawned {
        let (inputs_tx, inputs) = mpsc::unbounded();
        let (done, report) = oneshot::channel();
        let config = &self.setup.config;
        let span = tracing::info_span!(
            "rocketmq_consumer",
            group = %config.group,
            client_id = %self.client_id,
        );
        let driver = Driver {
            runtime: runtime.clone(),
            consumer,
            handler,
            events,
            offsets: self.offset_file.clone(),
            inputs_tx: inputs_tx.clone(),
            inputs,
            done,
            tls: self.tls.clone(),
            hooks: self.setup.hooks.clone(),
            traces: self.trace_queue::<R>(),
        };
        runtime.spawn_driver(Box::pin(driver.run().instrument(span)));
        #[cfg(feature = "metrics")]
        if let Some(every) = self.setup.metrics {
            runtime.spawn(Box::pin(crate::metrics::run(
                runtime.clone(),
                inputs_tx.clone(),
                self.setup.config.group.clone(),
                every,
            )));
        }
        Spawned {
            inputs: inputs_tx,
            report: Some(report),
        }
    }
}

impl Checked {
    /// Message trace: the queue to its sending task, with a producer of its own (Java's trace
    /// dispatcher has one too, in group `_INNER_TRACE_PRODUCER-<group>`). A producer that
    /// cannot be built is logged, and nothing is traced.
    fn trace_queue<R: Runtime>(&self) -> Option<crate::trace_dispatch::TraceQueue> {
        let topic = self.setup.trace_topic.clone()?;
        let config = &self.setup.config;
        let mut builder = crate::Producer::<R>::builder(config.group.clone());
        for addr in &config.name_servers {
            builder = builder.name_server(addr.clone());
        }
        if let Some(credentials) = &config.credentials {
            builder = builder.credentials(credentials.clone());
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.setup.tls {
            builder = builder.tls(tls.clone());
        }
        match builder.trace_queue(topic) {
            Ok(queue) => Some(queue),
            Err(e) => {
                tracing::error!(error = %e, "message trace is off: its producer cannot be built");
                None
            }
        }
    }
}

/// The application's end of a driver task.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub(crate) inputs: mpsc::UnboundedSender<Input>,
    report: Option<oneshot::Receiver<ShutdownReport>>,
}

impl Spawned {
    /// Sends a control command made around a reply channel and waits for the reply.
    pub(crate) async fn ask<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> crate::input::PullCommand,
    ) -> Result<T, crate::ControlError> {
        let (reply, answer) = oneshot::channel();
        self.inputs
            .unbounded_send(Input::Pull(command(reply)))
            .map_err(|_| crate::ControlError::Stopped)?;
        answer.await.map_err(|_| crate::ControlError::Stopped)
    }

    /// Tells the driver task `input` (a stopped driver has nothing to act on).
    pub(crate) fn tell(&self, input: Input) {
        let _ = self.inputs.unbounded_send(input);
    }

    /// Asks for a graceful shutdown and waits for its report.
    pub(crate) async fn shutdown(&mut self) -> Result<ShutdownReport, DriverStopped> {
        let _ = self.inputs.unbounded_send(Input::Shutdown);
        match self.report.take() {
            Some(report) => report.await.map_err(|_| DriverStopped),
            None => Err(DriverStopped),
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.report.is_some() {
            let _ = self.inputs.unbounded_send(Input::Shutdown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Setup;

    fn setup() -> Setup {
        let mut setup = Setup::new("group".to_owned());
        setup.name_server("127.0.0.1:9876");
        setup.subscribe("topic", "*");
        setup.client_ip("10.0.0.7");
        setup
    }

    /// A set instance name replaces `pid#start_nanos` in the client id, as Java's
    /// `ClientConfig.setInstanceName` does.
    #[test]
    fn instance_name_names_the_client() {
        let mut named = setup();
        named.instance_name("pod-3");
        let checked = named.check().expect("a named setup checks");
        assert_eq!(checked.client_id, "10.0.0.7@pod-3");

        let default = setup().check().expect("a default setup checks");
        let instance = default
            .client_id
            .strip_prefix("10.0.0.7@")
            .expect("the id starts with the ip");
        assert!(
            instance.starts_with(&format!("{}#", std::process::id())),
            "the default instance is pid#nanos: {instance}"
        );
    }

    /// An empty instance name is refused before anything connects.
    #[test]
    fn empty_instance_name_is_refused() {
        let mut named = setup();
        named.instance_name("");
        let refused = named
            .check()
            .expect_err("an empty instance name is refused");
        assert!(refused.0.contains("instance name"), "{refused:?}");
    }
}
