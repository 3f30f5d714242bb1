//! The async producer, written once for every runtime: it carries out each send's
//! `consumer_core::producer::SendPlan` (routes, queue, request, retries, deadline) over
//! [`Clients`].

use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::setup::since_epoch;

use consumer_core::ConfigError;
use consumer_core::producer::{
    Prepared, ProducerConfig, ProducerMessage, Routes, SendError, SendPlan, SendResult, Step,
    UniqueIds,
};
use consumer_core::signer::Signer;

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
    /// Message trace: where each send's `Pub` record goes.
    traces: Option<Mutex<crate::trace_dispatch::TraceQueue>>,
}

struct State {
    routes: Routes,
    ids: UniqueIds,
    /// Signs each send's requests (the configuration's credentials until rotated).
    signer: Signer,
}

impl<R: Runtime> Producer<R> {
    /// A builder for a producer of `group`, with Java's defaults.
    pub fn builder(group: impl Into<String>) -> ProducerBuilder<R> {
        ProducerBuilder {
            config: ProducerConfig::new(group, Vec::new()),
            client_ip: None,
            trace_topic: None,
            #[cfg(feature = "tls")]
            tls: None,
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
        let message = message.into();
        let traced = self.inner.traces.as_ref().map(|_| Traced::of(&message));
        let (started, born) = (self.inner.runtime.now(), unix_ms());
        let prepared = {
            let mut state = lock(&self.inner.state);
            Prepared::single(&self.inner.config, topic, message, &mut state.ids, born)?
        };
        let sent = self.inner.deliver(prepared).await;
        if let (Some(traced), Ok((result, addr))) = (traced, &sent) {
            let cost = self.inner.runtime.now().saturating_duration_since(started);
            self.inner.trace(topic, &[traced], result, addr, born, cost);
        }
        sent.map(|(result, _)| result)
    }

    /// Sends `messages` to `topic` as one batch, stored as consecutive messages of one queue
    /// (chosen as for [`Producer::send`]: they must share their sharding key, or all have
    /// none). Resolves with the first message's queue offset and every message's ids.
    pub async fn send_batch<M: Into<ProducerMessage>>(
        &self,
        topic: &str,
        messages: impl IntoIterator<Item = M>,
    ) -> Result<SendResult, SendError> {
        let messages: Vec<ProducerMessage> = messages.into_iter().map(Into::into).collect();
        let traced: Option<Vec<Traced>> = self
            .inner
            .traces
            .as_ref()
            .map(|_| messages.iter().map(Traced::of).collect());
        let (started, born) = (self.inner.runtime.now(), unix_ms());
        let prepared = {
            let mut state = lock(&self.inner.state);
            Prepared::batch(&self.inner.config, topic, messages, &mut state.ids, born)?
        };
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
        lock(&self.inner.state).signer.set_credentials(credentials);
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
    /// Carries out `prepared`'s [`SendPlan`]: the core decides every lookup, target, retry and
    /// when to give up; this moves the requests and answers.
    /// Sends `prepared` to its end; returns the result with the address of the broker that
    /// answered last (the one that stored it, on success).
    async fn deliver(&self, prepared: Prepared) -> Result<(SendResult, String), SendError> {
        let signer = lock(&self.state).signer.clone();
        let mut plan =
            SendPlan::new(&self.config, prepared, self.runtime.now()).signed_with(signer);
        // Held across a route lookup, so a burst of sends to a new topic asks once.
        let mut fetching = None;
        let mut last_addr = String::new();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err(SendError::Closed);
            }
            let step = plan.next_step(&mut lock(&self.state).routes, self.runtime.now());
            let (addr, command) = match step {
                Step::Done(result) => return result.map(|r| (r, last_addr)),
                Step::LookUp { .. } if fetching.is_none() => {
                    // Another send may fetch the route meanwhile: ask the plan again then.
                    fetching = Some(self.fetching.lock().await);
                    continue;
                }
                Step::LookUp { addr, command } => (addr, command),
                Step::Send { addr, command } => {
                    fetching = None;
                    (addr, command)
                }
            };
            last_addr.clone_from(&addr);
            let answer = self
                .clients
                .call(&addr, command, plan.deadline())
                .await
                .map_err(|error| call_error(&addr, error));
            plan.handle_answer(&mut lock(&self.state).routes, self.runtime.now(), answer);
        }
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
    /// The queue to a trace-sending task for `topic`, with a producer of its own (in group
    /// `_INNER_TRACE_PRODUCER-<group>`, as Java's; no namespace: the trace topic is a system
    /// topic) that traces nothing itself.
    fn trace_queue(
        &self,
        topic: String,
    ) -> Result<Mutex<crate::trace_dispatch::TraceQueue>, ConfigError> {
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
        Ok(Mutex::new(crate::trace_dispatch::TraceQueue::start(
            &R::default(),
            producer,
            topic,
        )))
    }

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

    /// Credentials for a cluster with ACL (Java's `AclClientRPCHook`): every route lookup and
    /// send is signed with them. A send the brokers refuse for them fails with a
    /// [`SendError::Refused`] whose [`SendError::is_access_denied`] is true. Rotate them with
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
    /// `namespace%name`, and [`SendResult::queue`] names the topic without it.
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
            .map(|topic| self.trace_queue(topic))
            .transpose()?;
        #[cfg(feature = "tls")]
        let tls = self.tls.as_ref().map(crate::Tls::connector).transpose()?;
        #[cfg(not(feature = "tls"))]
        let tls = None;
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
                clients: Clients::new(runtime.clone(), tls, self.config.close_after_timeouts),
                runtime,
                state: Mutex::new(State {
                    routes: Routes::new(self.config.route_ttl),
                    ids,
                    signer: Signer::new(
                        self.config.credentials.clone(),
                        self.config.signature_algorithm,
                    ),
                }),
                config: self.config,
                fetching: futures_util::lock::Mutex::new(()),
                closed: AtomicBool::new(false),
                traces,
            }),
        })
    }
}
