//! [`ConsumerConfig`]: every knob of the consumer, with Java's defaults and why.

use std::collections::BTreeMap;
use std::time::Duration;

pub use crate::error::ConfigError;
use crate::rate::RateLimit;
use crate::rebalance::Strategy;

/// Where a queue with no committed offset starts (`ConsumeFromWhere`, `remoting-protocol.md`
/// §7.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumeFrom {
    /// The queue's end: only messages stored from now on (Java's default). A retry topic
    /// starts at 0 instead, so earlier failures are not lost.
    #[default]
    Last,
    /// The queue's beginning.
    First,
    /// The first message stored at or after this time (ms since the epoch).
    Timestamp(i64),
}

/// How a group shares messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageModel {
    /// Each message goes to one member of the group (offsets kept by the broker).
    #[default]
    Clustering,
    /// Every member gets every message; each keeps its own offsets, which the consumer hands
    /// to the driver to store ([`crate::Output::StoreOffsets`]) and takes back at start
    /// ([`crate::Consumer::load_offsets`]).
    Broadcasting,
}

/// How messages reach the application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumeMode {
    /// Deliveries of any queue run side by side (`MessageListenerConcurrently`); failed
    /// messages go back to the broker for a delayed retry.
    #[default]
    Concurrent,
    /// One delivery per queue at a time, in offset order, only while this consumer holds the
    /// queue's broker lock (`MessageListenerOrderly`).
    Orderly,
    /// Nothing is delivered: the application takes messages with
    /// [`crate::Consumer::poll_messages`] (Java's lite pull consumer). A message counts as
    /// consumed once taken.
    Poll,
}

/// A consumer's configuration. Build it with [`ConsumerConfig::new`] and adjust the public
/// fields; [`ConsumerConfig::validate`] runs when the consumer is created.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ConsumerConfig {
    /// The consumer group.
    pub group: String,
    /// Name server addresses (`host:port`); tried in turn when one fails.
    pub name_servers: Vec<String>,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// Concurrent, orderly, or poll (lite pull).
    pub consume_mode: ConsumeMode,
    /// Where queues without a committed offset start.
    pub consume_from: ConsumeFrom,
    /// How queues are shared among the group's members.
    pub strategy: Strategy,
    /// Messages per pull request (`pullBatchSize`, 32; brokers send at most 32 anyway).
    pub pull_batch_size: i32,
    /// How long the broker may hold a pull with nothing to return (15 s, as Java).
    pub long_poll_suspend: Duration,
    /// How long the client waits for a pull response (30 s: must exceed the suspend time).
    pub pull_timeout: Duration,
    /// Timeout of every other request (Java's `mqClientApiTimeout`, 3 s).
    pub request_timeout: Duration,
    /// Pause between successful pulls of a queue (`pullInterval`, 0).
    pub pull_interval: Duration,
    /// Retry delay after a failed pull (`pullTimeDelayMillsWhenException`: effectively 1 s).
    pub pull_backoff: Duration,
    /// Retry delay after the broker's `FLOW_CONTROL` answer (20 ms, as Java).
    pub broker_flow_control_backoff: Duration,
    /// Re-check delay while a queue is over a cache limit (50 ms, as Java).
    pub flow_control_backoff: Duration,
    /// Cached messages per queue before pulls pause (`pullThresholdForQueue`, 1000).
    pub max_cached_messages_per_queue: usize,
    /// Cached body bytes per queue before pulls pause (`pullThresholdSizeForQueue`, 100 MiB).
    pub max_cached_bytes_per_queue: u64,
    /// Per-topic message limit, divided among the topic's queues (`pullThresholdForTopic`, off).
    pub max_cached_messages_per_topic: Option<usize>,
    /// Per-topic byte limit, divided among the topic's queues (`pullThresholdSizeForTopic`, off).
    pub max_cached_bytes_per_topic: Option<u64>,
    /// Widest offset span cached in one queue before pulls pause (`consumeConcurrentlyMaxSpan`,
    /// 2000): one stuck message must not let the cache run ahead without bound.
    pub max_offset_span: i64,
    /// Cached messages across all queues before pulls pause. Java has no such limit, so its
    /// memory grows with the number of queues; here the cache stays bounded (default 10 000).
    /// A pull this limit holds back goes out as soon as the cache has room for it, not after
    /// `flow_control_backoff` as for a queue over a limit of its own.
    pub max_cached_messages_total: usize,
    /// Cached body bytes across all queues before pulls pause (default 512 MiB).
    pub max_cached_bytes_total: u64,
    /// Messages per delivery (`consumeMessageBatchMaxSize`, 1).
    pub consume_batch_size: usize,
    /// Deliveries in flight at once across the consumer (Java's 20 consume threads).
    pub max_in_flight_deliveries: usize,
    /// Delay before a failed message is delivered again locally: in broadcasting (where
    /// nothing is sent back), and never sooner than this when sending back failed.
    pub reconsume_delay: Duration,
    /// Deliveries of a failed message before it goes to the group's dead-letter queue
    /// (`maxReconsumeTimes`). `None` is Java's default: 16 concurrent, unlimited orderly.
    pub max_reconsume_times: Option<i32>,
    /// Orderly: how long a queue pauses after its handler asked to retry
    /// (`suspendCurrentQueueTimeMillis`, 1 s; clamped to 10 ms ..= 30 s as Java does).
    pub suspend_delay: Duration,
    /// Concurrent clustering: a delivery still running this long after it was handed out has
    /// its messages sent back for a retry and its completion ignored (`consumeTimeout`, 15 min).
    pub consume_timeout: Duration,
    /// Delay before a failed message is delivered again locally when neither
    /// `CONSUMER_SEND_MSG_BACK` nor the fallback send to the retry topic worked (Java: 5 s).
    pub send_back_retry_delay: Duration,
    /// Orderly: how often every owned queue's lock is renewed (`REBALANCE_LOCK_INTERVAL`, 20 s).
    pub lock_interval: Duration,
    /// Orderly: how long a granted lock counts as held, from when the lock request was sent
    /// (`REBALANCE_LOCK_MAX_LIVE_TIME`, 30 s; the broker keeps it 60 s).
    pub lock_lease: Duration,
    /// Orderly: delay before asking again for a lock the broker refused (Java: 3 s).
    pub lock_retry: Duration,
    /// Poll mode: consumed positions are committed every `persist_interval` without the
    /// application calling `commit` (`autoCommit`, on).
    pub auto_commit: bool,
    /// Rebalance period (20 s).
    pub rebalance_interval: Duration,
    /// Retry delay when a rebalance could not complete (Java's `minInterval`, 1 s); a topic the
    /// name server knows no route for (a new topic, or one whose only broker is restarting) is
    /// looked up again this often too.
    pub rebalance_retry: Duration,
    /// Heartbeat period (30 s).
    pub heartbeat_interval: Duration,
    /// Route refresh period (30 s).
    pub route_refresh_interval: Duration,
    /// Offset persist period (5 s): every started queue's offset, moved or not.
    pub persist_interval: Duration,
    /// Clustering: a queue whose offset acknowledgements moved is committed at most this
    /// long after (200 ms), so a member that crashes leaves about this much of its
    /// consumption to be consumed again by the queue's next owner, not up to a whole
    /// `persist_interval` (Java's only commit, every 5 s). One commit per queue is in flight
    /// at a time, so a slow broker gets fewer. `Duration::ZERO` commits every
    /// `persist_interval` only.
    pub ack_commit_interval: Duration,
    /// How long a revoked queue waits for its in-flight deliveries before its offset is
    /// committed without them.
    pub revoke_drain_timeout: Duration,
    /// Concurrent and poll-mode clustering consumers: quiet hand-overs (`consumer::handover`,
    /// ARCHITECTURE.md), and how long a queue just assigned waits for its previous owner to
    /// release it (the broker lock it holds as a hand-over token, released after its final
    /// commit is confirmed) before it starts without it, the previous owner presumed gone
    /// (crashed, or cut off). Counted from the broker's first answer to the queue's lock
    /// request, so a broker stalled for a while does not use it up. 6 s fits: a live owner's
    /// revoke waits `revoke_drain_timeout` (5 s) for its handlers, plus a commit's round
    /// trip, and is the default. `Duration::ZERO` turns hand-overs off (Java's behaviour: the
    /// new owner starts from the broker's offset at once, and consumes again what the old one
    /// finished meanwhile), for a broker whose lock table the group must not use.
    pub handover_timeout: Duration,
    /// How often a queue waiting for a hand-over asks the broker for its lock again (100 ms):
    /// a hand-over stands the queue still for the old owner's drain and commit plus at most
    /// this.
    pub handover_retry: Duration,
    /// The application hears of revokes before they complete ([`crate::Output::Revoking`])
    /// and answers with `Consumer::revoke_done`; a revoked queue's final commit (orderly: and
    /// unlock) waits for that answer as well as for its in-flight deliveries, up to
    /// `revoke_drain_timeout`. Off by default: revokes complete on their own.
    pub revoke_hook: bool,
    /// Message trace (Java's `enableMsgTrace`): each delivery's messages are traced as they
    /// start and finish, in Java's trace encoding ([`crate::Output::Trace`]), for the driver to
    /// send to the trace topic. Push mode only (Java's lite pull consumer traces nothing
    /// either). Off by default.
    pub trace: bool,
    /// How long shutdown waits for in-flight deliveries (default 10 s; Java's default of 0
    /// abandons them, a known source of duplicates).
    pub shutdown_drain_timeout: Duration,
    /// Reconnect delay after a connection to an address failed.
    pub reconnect_backoff: Duration,
    /// How long a connection may take to open before it counts as failed (Java's
    /// `connectTimeoutMillis`, 3 s): a peer that drops SYNs would otherwise hold the requests
    /// queued for it until the system gives up, minutes later.
    pub connect_timeout: Duration,
    /// Requests in a row that time out on one connection, with no answer between them, before
    /// it is closed and opened again (3): a peer that keeps the socket open but stopped
    /// answering (a hung process, a half-open connection) is not waited on for ever.
    pub close_after_timeouts: u32,
    /// How long a broker connection with a request out for as long may hear nothing before it
    /// is probed with a heartbeat (10 s); a probe unanswered within `request_timeout` closes the
    /// connection at once, and it is opened again. Pulls long-poll for `long_poll_suspend`
    /// and time out only after `pull_timeout`, so without a probe a connection that died
    /// without a FIN (a firewall that dropped its state) would hold its queues' pulls until
    /// they all timed out. Java has no such probe; its Netty idle handler closes a channel
    /// only after 120 s with no traffic either way.
    pub probe_after: Duration,
    /// Credentials for a cluster with ACL: every request to name servers and brokers is signed
    /// with them, as Java's `AclClientRPCHook` does (`None`, the default: nothing is signed).
    /// Change them on a running consumer with [`crate::Consumer::set_credentials`].
    pub credentials: Option<proto::acl::Credentials>,
    /// The signature's HMAC ([`proto::acl::SignatureAlgorithm::HmacSha1`], the only one Apache's
    /// brokers check).
    pub signature_algorithm: proto::acl::SignatureAlgorithm,
    /// The tenant namespace (Java's `ClientConfig.namespace`; `None`, the default: none): the
    /// group and every topic are wrapped as `namespace%name` on the wire (retry and dead-letter
    /// topics as `%RETRY%namespace%group`), and everything the consumer hands out (messages,
    /// queues, events, stats) carries the names without it. System topics are never wrapped.
    pub namespace: Option<String>,
    /// The most messages (and optionally body bytes) a second handed to the application over
    /// all queues (`None`, the default: unlimited). Applied by holding deliveries (poll mode:
    /// takes) back and not pulling ahead of them, never by dropping; see [`crate::rate`].
    pub rate_limit: Option<RateLimit>,
    /// The same, for single topics (named as subscribed), on top of `rate_limit`.
    pub topic_rate_limits: BTreeMap<String, RateLimit>,
    /// Seed of the consumer's only randomness (which name server and broker to ask first).
    pub seed: u64,
}

impl ConsumerConfig {
    /// Java's defaults for `group`, asking `name_servers`.
    pub fn new(group: impl Into<String>, name_servers: Vec<String>) -> Self {
        Self {
            group: group.into(),
            name_servers,
            message_model: MessageModel::Clustering,
            consume_mode: ConsumeMode::Concurrent,
            consume_from: ConsumeFrom::Last,
            strategy: Strategy::Averagely,
            pull_batch_size: 32,
            long_poll_suspend: Duration::from_secs(15),
            pull_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(3),
            pull_interval: Duration::ZERO,
            pull_backoff: Duration::from_secs(1),
            broker_flow_control_backoff: Duration::from_millis(20),
            flow_control_backoff: Duration::from_millis(50),
            max_cached_messages_per_queue: 1000,
            max_cached_bytes_per_queue: 100 * 1024 * 1024,
            max_cached_messages_per_topic: None,
            max_cached_bytes_per_topic: None,
            max_offset_span: 2000,
            max_cached_messages_total: 10_000,
            max_cached_bytes_total: 512 * 1024 * 1024,
            consume_batch_size: 1,
            max_in_flight_deliveries: 20,
            reconsume_delay: Duration::from_secs(1),
            max_reconsume_times: None,
            suspend_delay: Duration::from_secs(1),
            consume_timeout: Duration::from_secs(15 * 60),
            send_back_retry_delay: Duration::from_secs(5),
            lock_interval: Duration::from_secs(20),
            lock_lease: Duration::from_secs(30),
            lock_retry: Duration::from_secs(3),
            auto_commit: true,
            rebalance_interval: Duration::from_secs(20),
            rebalance_retry: Duration::from_secs(1),
            heartbeat_interval: Duration::from_secs(30),
            route_refresh_interval: Duration::from_secs(30),
            persist_interval: Duration::from_secs(5),
            ack_commit_interval: Duration::from_millis(200),
            revoke_drain_timeout: Duration::from_secs(5),
            handover_timeout: Duration::from_secs(6),
            handover_retry: Duration::from_millis(100),
            revoke_hook: false,
            trace: false,
            shutdown_drain_timeout: Duration::from_secs(10),
            reconnect_backoff: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(3),
            close_after_timeouts: 3,
            probe_after: Duration::from_secs(10),
            credentials: None,
            signature_algorithm: proto::acl::SignatureAlgorithm::HmacSha1,
            namespace: None,
            rate_limit: None,
            topic_rate_limits: BTreeMap::new(),
            seed: 0,
        }
    }

    /// Checks the values that would make the consumer misbehave.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fail = |what: &str| Err(ConfigError(what.to_owned()));
        if self.group.is_empty() || self.group.len() > 255 {
            return fail("the group name must be 1 to 255 characters");
        }
        if let Some(namespace) = &self.namespace {
            crate::namespace::Namespace::new(namespace.as_str())?;
        }
        if let Some(limit) = &self.rate_limit {
            limit.validate("rate_limit")?;
        }
        for (topic, limit) in &self.topic_rate_limits {
            limit.validate(&format!("the rate limit of topic {topic}"))?;
        }
        if self.connect_timeout.is_zero() || self.close_after_timeouts == 0 {
            return fail("connect_timeout and close_after_timeouts must be positive");
        }
        if self.probe_after.is_zero() {
            return fail("probe_after must be positive");
        }
        if self.name_servers.is_empty() {
            return fail("at least one name server address is needed");
        }
        if !(1..=1024).contains(&self.pull_batch_size) {
            return fail("pull_batch_size must be 1 to 1024");
        }
        if self.pull_timeout <= self.long_poll_suspend {
            return fail(
                "pull_timeout must exceed long_poll_suspend, or every idle pull times out",
            );
        }
        if self.consume_batch_size == 0 || self.max_in_flight_deliveries == 0 {
            return fail("consume_batch_size and max_in_flight_deliveries must be at least 1");
        }
        if self.max_cached_messages_per_queue == 0 || self.max_cached_messages_total == 0 {
            return fail("cache limits must be at least 1 message");
        }
        if !self.handover_timeout.is_zero() && self.handover_retry.is_zero() {
            return fail("handover_retry must be positive while hand-overs are on");
        }
        if self.lock_lease.is_zero() || self.lock_interval >= self.lock_lease {
            return fail("lock_interval must be shorter than lock_lease, or leases lapse");
        }
        if self.max_reconsume_times.is_some_and(|n| n < 0) {
            return fail("max_reconsume_times cannot be negative");
        }
        Ok(())
    }

    /// Deliveries before the dead-letter queue, with Java's defaults filled in.
    pub fn effective_max_reconsume_times(&self) -> i32 {
        match (self.max_reconsume_times, self.consume_mode) {
            (Some(n), _) => n,
            (None, ConsumeMode::Orderly) => i32::MAX,
            (None, _) => 16,
        }
    }

    /// The orderly suspend time, clamped as Java clamps it.
    pub fn clamped_suspend(&self, asked: Duration) -> Duration {
        asked.clamp(Duration::from_millis(10), Duration::from_secs(30))
    }
}
