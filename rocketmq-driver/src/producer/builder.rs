//! [`ProducerBuilder`]: a producer's configuration, checked when it is built.

use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use consumer_core::ConfigError;
use consumer_core::producer::{ProducerConfig, UniqueIds};

use super::{Inner, PRODUCERS, Producer};
use crate::host::{local_ip, since_epoch};
use crate::runtime::Runtime;
use crate::trace_dispatch::{SendTrace, TraceQueue};

/// Configures a [`Producer`].
pub struct ProducerBuilder<R: Runtime> {
    config: ProducerConfig,
    client_ip: Option<IpAddr>,
    trace_topic: Option<String>,
    #[cfg(feature = "tls")]
    tls: Option<crate::Tls>,
    _runtime: PhantomData<R>,
}

impl<R: Runtime> std::fmt::Debug for ProducerBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerBuilder")
            .field("config", &self.config)
            .field("client_ip", &self.client_ip)
            .finish()
    }
}

impl<R: Runtime> ProducerBuilder<R> {
    /// A builder for a producer of `group`, with Java's defaults.
    pub(super) fn new(group: impl Into<String>) -> Self {
        Self {
            config: ProducerConfig::new(group, Vec::new()),
            client_ip: None,
            trace_topic: None,
            #[cfg(feature = "tls")]
            tls: None,
            _runtime: PhantomData,
        }
    }

    /// The queue to a trace-sending task for `topic`, with a producer of its own (in group
    /// `_INNER_TRACE_PRODUCER-<group>`, as Java's `AsyncTraceDispatcher`'s; no namespace: the
    /// trace topic is a system topic) that traces nothing itself. Consumers' traces go out the
    /// same way (`setup`), with this builder made from their settings.
    pub(crate) fn trace_queue(&self, topic: String) -> Result<TraceQueue, ConfigError> {
        let mut config = self.config.clone();
        config.group = format!(
            "{}{}",
            proto::trace::TRACE_PRODUCER_GROUP_PREFIX,
            config.group
        );
        config.namespace = None;
        let producer = Self {
            config,
            client_ip: self.client_ip,
            trace_topic: None,
            #[cfg(feature = "tls")]
            tls: self.tls.clone(),
            _runtime: PhantomData,
        }
        .build()?;
        let to = topic.clone();
        let send: SendTrace = Box::new(move |message| {
            let (producer, topic) = (producer.clone(), to.clone());
            Box::pin(async move {
                producer
                    .send(&topic, message)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
        });
        Ok(TraceQueue::start(&R::default(), send, topic))
    }

    /// Adds a name server address (`host:port`); call again for more.
    #[must_use]
    pub fn name_server(mut self, addr: impl Into<String>) -> Self {
        self.config.name_servers.push(addr.into());
        self
    }

    /// How long one send may take, retries and waits for a route included (3 s). A send rides
    /// out a broker restart that ends within it: while the name servers know no route for the
    /// topic it asks again every `route_retry_interval` (200 ms), and a broker that refuses
    /// connections is dialled again after the reconnect backoff (1 s) without using up a retry.
    /// A minute covers a 4.9 broker's restart on most machines; see the README's
    /// "Reliability" section for measured recovery times.
    #[must_use]
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.config.send_timeout = timeout;
        self
    }

    /// How long one request of a send waits for its answer before the next attempt (3 s, and
    /// never past the send timeout): with a long send timeout, a broker that stopped answering
    /// costs this, not the whole send.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// Extra attempts after a failed one (2).
    #[must_use]
    pub fn retries(mut self, retries: u32) -> Self {
        self.config.retries = retries;
        self
    }

    /// The IP address in the message ids (by default, as for the consumer's client id: see
    /// `PushConsumerBuilder::client_ip`).
    #[must_use]
    pub fn client_ip(mut self, ip: IpAddr) -> Self {
        self.client_ip = Some(ip);
        self
    }

    /// Adjusts any other knob of the core's [`ProducerConfig`].
    #[must_use]
    pub fn configure(mut self, adjust: impl FnOnce(&mut ProducerConfig)) -> Self {
        adjust(&mut self.config);
        self
    }

    /// Credentials for a cluster with ACL (Java's `AclClientRPCHook`): every route lookup and
    /// send is signed with them. A send the brokers refuse for them fails with a
    /// [`SendError::Refused`](consumer_core::producer::SendError::Refused) whose [`SendError::is_access_denied`](consumer_core::producer::SendError::is_access_denied) is true. Rotate them with
    /// [`Producer::set_credentials`].
    #[must_use]
    pub fn credentials(mut self, credentials: consumer_core::Credentials) -> Self {
        self.config.credentials = Some(credentials);
        self
    }

    /// TLS for every connection to the name servers and brokers (see
    /// `PushConsumerBuilder::tls`); plain TCP without.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: crate::Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The tenant namespace (Java's `setNamespace`): topics and the producer group are sent as
    /// `namespace%name`, and [`SendResult::queue`](consumer_core::producer::SendResult::queue) names the topic without it.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.config.namespace = Some(namespace.into());
        self
    }

    /// Message trace (Java's `enableMsgTrace`): every message sent is traced (a `Pub` record
    /// in Java's trace format) to `RMQ_SYS_TRACE_TOPIC`, so Java's dashboard and `mqadmin
    /// queryMsgTraceById` show it. Records go out in batches from a task and a producer of
    /// their own, never slowing the sends; when the trace topic cannot keep up they are
    /// dropped.
    #[must_use]
    pub fn trace(self) -> Self {
        self.trace_topic(proto::trace::DEFAULT_TRACE_TOPIC)
    }

    /// [`Self::trace`] to another topic.
    #[must_use]
    pub fn trace_topic(mut self, topic: impl Into<String>) -> Self {
        self.trace_topic = Some(topic.into());
        self
    }

    /// Checks the configuration and creates the producer (nothing is connected until the first
    /// send).
    pub fn build(mut self) -> Result<Producer<R>, ConfigError> {
        self.config.validate()?;
        let traces = self
            .trace_topic
            .take()
            .map(|topic| self.trace_queue(topic).map(Mutex::new))
            .transpose()?;
        #[cfg(feature = "tls")]
        let tls = self.tls.as_ref().map(crate::Tls::connector).transpose()?;
        #[cfg(not(feature = "tls"))]
        let tls = None;
        let ip = self.client_ip.unwrap_or_else(|| {
            self.config
                .name_servers
                .first()
                .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |ns| local_ip(ns))
        });
        let started = since_epoch();
        let instance =
            (started.subsec_nanos()).wrapping_add(PRODUCERS.fetch_add(1, Ordering::Relaxed));
        let octets = match ip {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => v6.octets().to_vec(),
        };
        let ids = UniqueIds::new(
            &octets,
            std::process::id(),
            instance,
            i64::try_from(started.as_millis()).unwrap_or(i64::MAX),
        );
        Ok(Producer {
            inner: Arc::new(Inner {
                runtime: R::default(),
                ids: Mutex::new(ids),
                task: Mutex::new(None),
                credentials: Mutex::new(self.config.credentials.clone()),
                tls,
                closed: AtomicBool::new(false),
                traces,
                config: self.config,
            }),
        })
    }
}
