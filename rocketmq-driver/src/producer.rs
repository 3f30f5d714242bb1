//! The async producer, written once for every runtime: it carries out what
//! `consumer_core::producer` decides (route, queue, request, retry) over [`Clients`].

use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::setup::since_epoch;

use consumer_core::ConfigError;
use consumer_core::producer::{
    Attempts, DEFAULT_TOPIC, Prepared, ProducerConfig, ProducerMessage, Retry, Routes, SendError,
    SendResult, UniqueIds, default_route_from_response, route_from_response, route_request,
};

use crate::client::{CallError, Clients, lock};
use crate::runtime::Runtime;

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
    clients: Clients<R>,
    state: Mutex<State>,
    /// Serializes route fetches, so a burst of sends to a new topic asks the name server once.
    fetching: futures_util::lock::Mutex<()>,
    closed: AtomicBool,
}

struct State {
    routes: Routes,
    ids: UniqueIds,
}

impl<R: Runtime> Producer<R> {
    /// A builder for a producer of `group`, with Java's defaults.
    pub fn builder(group: impl Into<String>) -> ProducerBuilder<R> {
        ProducerBuilder {
            config: ProducerConfig::new(group, Vec::new()),
            client_ip: None,
            _runtime: PhantomData,
        }
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
        let prepared = {
            let mut state = lock(&self.inner.state);
            Prepared::single(
                &self.inner.config,
                topic,
                message.into(),
                &mut state.ids,
                unix_ms(),
            )?
        };
        self.inner.deliver(&prepared).await
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
        let prepared = {
            let mut state = lock(&self.inner.state);
            Prepared::batch(
                &self.inner.config,
                topic,
                messages,
                &mut state.ids,
                unix_ms(),
            )?
        };
        self.inner.deliver(&prepared).await
    }

    /// Closes the connections of this producer and its clones. Sends in flight fail with
    /// [`SendError::Disconnected`] (their messages may have been stored), later ones with
    /// [`SendError::Closed`]. Dropping the last clone closes the connections too.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.clients.close();
    }
}

impl<R: Runtime> Inner<R> {
    /// Attempts `prepared` until it is stored, fails for good, or the send timeout passes.
    async fn deliver(&self, prepared: &Prepared) -> Result<SendResult, SendError> {
        let deadline = self.runtime.now() + self.config.send_timeout;
        let topic = prepared.topic();
        let mut attempts = Attempts::new(&self.config);
        let mut failed_broker: Option<String> = None;
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err(SendError::Closed);
            }
            self.fetch_route_if_needed(topic, deadline).await?;
            let target = lock(&self.state)
                .routes
                .choose(prepared, failed_broker.as_deref())?;
            let outcome = match self
                .clients
                .call(&target.addr, prepared.request(&target), deadline)
                .await
            {
                Ok(response) => prepared.interpret(&target, &response),
                Err(error) => Err(call_error(&target.addr, error)),
            };
            let error = match outcome {
                Ok(result) => return Ok(result),
                Err(error) => error,
            };
            match attempts.after(&error) {
                Retry::No => return Err(error),
                Retry::Yes { refresh_route } => {
                    if refresh_route {
                        lock(&self.state).routes.invalidate(topic);
                    }
                    if self.runtime.now() >= deadline {
                        return Err(error);
                    }
                    failed_broker = Some(target.queue.broker_name().to_owned());
                }
            }
        }
    }

    /// Fetches `topic`'s route when the cache says so, asking the name servers in turn. When
    /// none answers, a route fetched before is used on (Java keeps its publish info too); a
    /// name server that says the topic does not exist is believed.
    async fn fetch_route_if_needed(
        &self,
        topic: &str,
        deadline: std::time::Instant,
    ) -> Result<(), SendError> {
        if !lock(&self.state)
            .routes
            .needs_fetch(topic, self.runtime.now())
        {
            return Ok(());
        }
        let _fetching = self.fetching.lock().await;
        // Another send may have fetched it while this one waited.
        if !lock(&self.state)
            .routes
            .needs_fetch(topic, self.runtime.now())
        {
            return Ok(());
        }
        let mut last_error = SendError::NoRoute {
            topic: topic.to_owned(),
        };
        for name_server in &self.config.name_servers {
            let fetched = match self
                .clients
                .call(name_server, route_request(topic), deadline)
                .await
            {
                Ok(response) => route_from_response(topic, &response),
                Err(error) => Err(call_error(name_server, error)),
            };
            match fetched {
                Ok(route) => {
                    lock(&self.state)
                        .routes
                        .insert(topic, route, self.runtime.now());
                    return Ok(());
                }
                // No broker has the topic yet: send where the broker will create it.
                Err(SendError::NoRoute { .. }) => {
                    return self.fetch_default_route(name_server, topic, deadline).await;
                }
                Err(error) => last_error = error,
            }
        }
        if lock(&self.state).routes.get(topic).is_some() {
            return Ok(());
        }
        Err(last_error)
    }

    /// Caches, for `topic`, the route a topic the brokers auto-create gets: `DEFAULT_TOPIC`'s
    /// (Java's producer does the same when the name server does not know a topic). Kept for the
    /// route's time to live, after which the topic's own route is asked for again.
    async fn fetch_default_route(
        &self,
        name_server: &str,
        topic: &str,
        deadline: std::time::Instant,
    ) -> Result<(), SendError> {
        let route = match self
            .clients
            .call(name_server, route_request(DEFAULT_TOPIC), deadline)
            .await
        {
            Ok(response) => default_route_from_response(topic, &response)?,
            Err(error) => return Err(call_error(name_server, error)),
        };
        lock(&self.state)
            .routes
            .insert(topic, route, self.runtime.now());
        Ok(())
    }
}

fn call_error(peer: &str, error: CallError) -> SendError {
    match error {
        CallError::Timeout => SendError::Timeout {
            peer: peer.to_owned(),
        },
        CallError::Disconnected(reason) => SendError::Disconnected {
            peer: peer.to_owned(),
            reason,
        },
        CallError::Encode(reason) => SendError::InvalidMessage(reason),
    }
}

/// Wall-clock milliseconds: the message's born timestamp.
fn unix_ms() -> i64 {
    i64::try_from(since_epoch().as_millis()).unwrap_or(i64::MAX)
}

/// Configures a [`Producer`].
pub struct ProducerBuilder<R: Runtime> {
    config: ProducerConfig,
    client_ip: Option<IpAddr>,
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
    /// Adds a name server address (`host:port`); call again for more.
    #[must_use]
    pub fn name_server(mut self, addr: impl Into<String>) -> Self {
        self.config.name_servers.push(addr.into());
        self
    }

    /// How long one send may take, retries included (3 s).
    #[must_use]
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.config.send_timeout = timeout;
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

    /// Checks the configuration and creates the producer (nothing is connected until the first
    /// send).
    pub fn build(self) -> Result<Producer<R>, ConfigError> {
        self.config.validate()?;
        let runtime = R::default();
        let ip = self.client_ip.unwrap_or_else(|| {
            self.config
                .name_servers
                .first()
                .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |ns| {
                    crate::setup::local_ip(ns)
                })
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
                clients: Clients::new(runtime.clone()),
                runtime,
                state: Mutex::new(State {
                    routes: Routes::new(self.config.route_ttl),
                    ids,
                }),
                config: self.config,
                fetching: futures_util::lock::Mutex::new(()),
                closed: AtomicBool::new(false),
            }),
        })
    }
}
