//! [`Consumer`]: the consumer as a state machine, a coordinator over sub-states that own their
//! data and keep their own invariants:
//!
//! - `queues`: the queue table (each owned queue's life, the ready set and round robin, the
//!   cache totals, kept by the table's own mutators);
//! - `deliveries`: deliveries in flight, from a queue or from a broker's consume-directly;
//! - `requests`: the request layer (opaques, requests in flight with deadlines, the commits
//!   held back per broker);
//! - `cluster`: name servers, routes and the broker address book;
//! - `offsets`: broadcasting's local offset table (and the commit paths that feed it or the
//!   brokers).
//!
//! This file holds the inputs and outputs and decides when things run; the coordinator's
//! duties are grouped by file: `answer` (how each request ends), `assignment` (routes,
//! heartbeats, rebalance, queues added and revoked), `pulling` (start offsets, pulls and flow
//! control), `dispatching` (messages to the handler), `requesting` (requests out, connections
//! lost), `offsets` (commits), `lease` (orderly locks), `handover` (queues handed
//! over between live members under the broker lock), `retry` (failed messages),
//! `broker_request` (what brokers ask of us), `poll` (the poll-mode API) and `shutdown`.
//! The rules themselves are pure functions of their own modules (`rebalance`, `queue`, `pull`).

mod access;
mod answer;
mod app_answers;
mod assignment;
mod broker_request;
mod cache_room;
pub(crate) mod cluster;
mod commit_retry;
mod deliveries;
mod dispatching;
mod handover;
mod lease;
mod local_offsets;
mod message_trace;
mod offsets;
mod poll;
mod pull_template;
mod pulling;
mod queues;
mod rate_hold;
mod requesting;
mod requests;
mod retry;
mod send_back;
mod shutdown;
mod stranded;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use proto::body::SubscriptionData;
use proto::{Command, MessageQueue};

use crate::config::{ConfigError, ConsumeMode, ConsumerConfig, MessageModel};
pub(crate) use crate::id::{Epoch, QueueKey};
use crate::link::{Link, Rules};
use crate::namespace::Namespace;
use crate::output::{
    ConnId, ConsumeOutcome, Delivery, DeliveryId, Output, RequestId, ShutdownReport, Wire,
};
use crate::rate::RateLimiter;
use crate::signer::Signer;
use crate::stats::{ConsumerStats, Histogram, LatencyBuckets, QueueStats};
use crate::timer::{Timer, TimerQueue};
use app_answers::AppAnswers;
use cluster::ClusterView;
use deliveries::{Deliveries, Flight, Source};
use local_offsets::LocalOffsets;
use message_trace::ReturnType;
use queues::{Phase, QueueTable, Start};
use requests::{HeldCommits, Pending, PendingKind};
use stranded::StrandedOffsets;

/// `%RETRY%`: the prefix of a group's retry topic (`MixAll.RETRY_GROUP_TOPIC_PREFIX`).
pub const RETRY_TOPIC_PREFIX: &str = "%RETRY%";

/// The push consumer's state machine. See the crate docs for the run loop.
#[derive(Debug)]
pub struct Consumer {
    config: ConsumerConfig,
    client_id: String,
    retry_topic: String,
    start: Instant,
    start_unix_ms: i64,
    lifecycle: Lifecycle,
    subscriptions: BTreeMap<String, SubscriptionData>,
    /// Name servers, routes and the broker address book.
    cluster: ClusterView,
    /// The connections and the requests in flight.
    link: Link<PendingKind>,
    /// Confirmed commits held back behind the one in flight to their broker.
    commits: HeldCommits,
    timers: TimerQueue,
    /// Owned queues, the ready set and the cache totals.
    queues: QueueTable,
    /// Deliveries handed to the handler and not completed.
    deliveries: Deliveries,
    rebalance_after_heartbeat: bool,
    /// Queues whose pull a broker refused for not knowing the group yet (a new connection
    /// whose heartbeat it had not handled), by broker address: pulled again as soon as the
    /// heartbeat there is answered, not after `pull_backoff`.
    awaiting_heartbeat: Vec<(String, QueueKey, Epoch)>,
    /// Whether `Timer::AckCommit` is set (see `acknowledged`); the timers are cleared only
    /// at shutdown, after which nothing sets it again.
    ack_commit_armed: bool,
    /// Every output but deliveries, in order.
    outputs: VecDeque<Output>,
    /// Deliveries handed out and not polled yet, in order: kept apart from `outputs` so a
    /// driver takes them with [`Consumer::poll_delivery`] after the rest, in one move.
    to_deliver: VecDeque<Delivery>,
    /// Queue deliveries are handed out only when asked for, by [`Consumer::deliver_now`]
    /// (see [`Consumer::deliver_on_demand`]).
    on_demand: bool,
    /// Broadcasting's local offset table.
    local_offsets: LocalOffsets,
    /// Where queues revoked while their broker was unreachable stood.
    stranded: StrandedOffsets,
    /// Broker locks held as hand-over tokens, and what waiting for them cost.
    handovers: handover::Handovers,
    /// Poll mode: queues the application assigned itself, by topic (no rebalance for these).
    assigned: BTreeMap<String, BTreeSet<MessageQueue>>,
    /// Poll mode: queues neither pulled nor polled until resumed.
    paused: BTreeSet<MessageQueue>,
    /// Resends are keyed by time and this sequence number.
    next_request: u64,
    /// Application requests answered later (commits, seeks, offsets by time).
    app_answers: AppAnswers,
    /// Shutdown: unlocks (orderly) and unregistration sent, once the final commits were
    /// answered.
    released: bool,
    /// Commits held for another try after a lost connection.
    commit_retries: commit_retry::CommitRetries,
    /// Queues whose pull waits for room in the consumer-wide cache.
    cache_room: cache_room::CacheRoom,
    /// SQL92 subscriptions no broker has confirmed yet (`CHECK_CLIENT_CONFIG`).
    unchecked: BTreeSet<String>,
    /// Failed messages out of attempts whose send to the retry topic is to be tried again.
    resends: BTreeMap<(Instant, u64), send_back::SendBack>,
    /// Signs each request as it is handed out.
    signer: Signer,
    /// The tenant namespace: names are wrapped on the way in, unwrapped on the way out.
    namespace: Option<Namespace>,
    /// Requests refused for want of permission, each reported once.
    access: access::AccessDenials,
    /// The consumption rate limits (wire topic names).
    rate: RateLimiter,
    /// Message trace: deliveries traced so far, and what makes this consumer's request ids
    /// its own.
    traced: u64,
    trace_salt: u64,
    rng: u64,
    counters: Counters,
    report: ShutdownReport,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Running,
    /// Waiting for in-flight deliveries.
    Draining,
    /// Waiting for final commits and unregistration.
    Finishing,
    Closed,
}

#[derive(Debug, Default, Clone)]
struct Counters {
    stale_completions: u64,
    stale_responses: u64,
    unknown_responses: u64,
    pulls: u64,
    /// Every pull's round trip, long polls included (Java's running info reports its mean).
    pull_time: Duration,
    /// Round trips of pulls answered without a long-poll suspension (see `ConsumerStats`).
    pull_latency: Histogram,
    delivered: u64,
    delivered_messages: u64,
    consume_time: Duration,
    consume_latency: Histogram,
    flow_control_pauses: u64,
    rate_limited: u64,
    rate_limit_pull_pauses: u64,
    expired: u64,
    sent_back: u64,
}

impl Consumer {
    /// A consumer for `config`, known to brokers as `client_id` (`ip@instance`; see
    /// [`crate::default_instance_name`]). `unix_ms` is the wall-clock time matching `now`: it
    /// versions subscriptions, as Java's `subVersion` timestamps do.
    pub fn new(
        config: ConsumerConfig,
        client_id: impl Into<String>,
        now: Instant,
        unix_ms: i64,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut config = config;
        let namespace = config.namespace.clone().map(Namespace::new).transpose()?;
        if let Some(ns) = &namespace {
            // DefaultMQPushConsumer.start: setConsumerGroup(wrapNamespace(ns, group)); the retry
            // topic follows (`%RETRY%ns%group`, NamespaceUtil.wrapNamespaceAndRetry).
            config.group = ns.wrap(&config.group).into_owned();
        }
        let retry_topic = format!("{RETRY_TOPIC_PREFIX}{}", config.group);
        let seed = config.seed;
        let rate = RateLimiter::new(
            config.rate_limit.as_ref(),
            config.topic_rate_limits.iter().map(|(topic, limit)| {
                let wire = match &namespace {
                    Some(ns) => ns.wrap(topic).into_owned(),
                    None => topic.clone(),
                };
                (wire, limit)
            }),
        );
        let mut consumer = Self {
            client_id: client_id.into(),
            retry_topic: retry_topic.clone(),
            start: now,
            start_unix_ms: unix_ms,
            lifecycle: Lifecycle::Running,
            subscriptions: BTreeMap::new(),
            cluster: ClusterView::new(config.name_servers.clone(), seed as usize),
            link: Link::new(Rules {
                connect_timeout: config.connect_timeout,
                reconnect_backoff: config.reconnect_backoff,
                close_after_timeouts: config.close_after_timeouts,
            }),
            commits: HeldCommits::default(),
            timers: TimerQueue::default(),
            queues: QueueTable::default(),
            deliveries: Deliveries::default(),
            rebalance_after_heartbeat: true,
            awaiting_heartbeat: Vec::new(),
            outputs: VecDeque::new(),
            to_deliver: VecDeque::new(),
            on_demand: false,
            ack_commit_armed: false,
            local_offsets: LocalOffsets::default(),
            stranded: StrandedOffsets::default(),
            handovers: handover::Handovers::default(),
            assigned: BTreeMap::new(),
            paused: BTreeSet::new(),
            next_request: 0,
            app_answers: AppAnswers::default(),
            released: false,
            commit_retries: commit_retry::CommitRetries::default(),
            cache_room: cache_room::CacheRoom::default(),
            unchecked: BTreeSet::new(),
            resends: BTreeMap::new(),
            signer: Signer::new(config.credentials.clone(), config.signature_algorithm),
            namespace,
            access: access::AccessDenials::default(),
            rate,
            traced: 0,
            trace_salt: 0,
            rng: seed ^ 0x9E37_79B9_7F4A_7C15,
            counters: Counters::default(),
            report: ShutdownReport::default(),
            config,
        };
        // A CLUSTERING push consumer always consumes its retry topic (`copySubscription`);
        // broadcasting and poll mode send nothing back, so they have none.
        if consumer.sends_back() {
            consumer.subscriptions.insert(
                retry_topic.clone(),
                SubscriptionData::new(&retry_topic, "*", unix_ms),
            );
        }
        if consumer.needs_lock() || consumer.handover_enabled() {
            consumer
                .timers
                .set(now + consumer.config.lock_interval, Timer::LockRenew);
        }
        if consumer.sends_back() && consumer.config.consume_mode == ConsumeMode::Concurrent {
            consumer.timers.set(
                now + consumer.timeout_scan_period(),
                Timer::ConsumeTimeoutScan,
            );
        }
        consumer.timers.set(now, Timer::RouteRefresh);
        consumer
            .timers
            .set(now + consumer.config.rebalance_interval, Timer::Rebalance);
        consumer
            .timers
            .set(now + consumer.config.heartbeat_interval, Timer::Heartbeat);
        consumer
            .timers
            .set(now + consumer.config.probe_after / 2, Timer::Probe);
        consumer.timers.set(
            now + consumer.config.persist_interval,
            Timer::PersistOffsets,
        );
        // FNV-1a of the client id, with the start time: request ids differ across consumers
        // and across restarts of one.
        consumer.trace_salt = consumer
            .client_id
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
            ^ unix_ms.unsigned_abs();
        Ok(consumer)
    }

    // ----- inputs -----

    /// Subscribes to `topic` with a tag expression (`*`, or `TagA || TagB`). Takes effect at
    /// once: the route is looked up and the brokers are told at the next heartbeat.
    pub fn subscribe(
        &mut self,
        now: Instant,
        topic: &str,
        expression: &str,
    ) -> Result<(), ConfigError> {
        let version = self.unix_ms(now);
        let topic = self.inward(topic).into_owned();
        self.add_subscription(now, SubscriptionData::new(&topic, expression, version))
    }

    /// Stops consuming `topic`: its queues are revoked as a rebalance revokes them (in-flight
    /// deliveries drain, offsets are committed, the revoke hook runs), the brokers hear of it
    /// at the next heartbeat, and poll mode's assigned queues of it are dropped. Returns false
    /// for a topic not subscribed (the retry topic cannot be unsubscribed).
    pub fn unsubscribe(&mut self, now: Instant, topic: &str) -> bool {
        let topic = self.inward(topic).into_owned();
        if topic == self.retry_topic || self.subscriptions.remove(&topic).is_none() {
            return false;
        }
        self.unchecked.remove(&topic);
        self.assigned.remove(&topic);
        self.stranded.forget_topic(&topic);
        self.cluster.forget_route(&topic);
        self.apply_assignment(now, &topic, BTreeSet::new());
        self.timers.reset(now, Timer::Heartbeat);
        self.after_input(now);
        true
    }

    /// `resource` (a topic or group as the application names it) as the brokers know it.
    pub(super) fn inward<'a>(&self, resource: &'a str) -> Cow<'a, str> {
        match &self.namespace {
            Some(ns) => ns.wrap(resource),
            None => Cow::Borrowed(resource),
        }
    }

    /// Subscribes to `topic` with an SQL92 expression over message properties (`a > 5 AND
    /// b = 'x'`), which the broker evaluates. Brokers filter SQL92 only with
    /// `enablePropertyFilter=true` (off by default); the first broker of the topic is asked
    /// (`CHECK_CLIENT_CONFIG`, as Java's consumer asks at start), and a refusal drops the
    /// subscription with [`Event::SubscriptionRejected`](crate::Event::SubscriptionRejected).
    pub fn subscribe_sql92(
        &mut self,
        now: Instant,
        topic: &str,
        expression: &str,
    ) -> Result<(), ConfigError> {
        if expression.trim().is_empty() {
            return Err(ConfigError(format!(
                "an empty SQL92 expression for {topic:?}"
            )));
        }
        let version = self.unix_ms(now);
        let topic = self.inward(topic).into_owned();
        self.unchecked.insert(topic.clone());
        self.add_subscription(now, SubscriptionData::sql92(&topic, expression, version))
    }

    fn add_subscription(
        &mut self,
        now: Instant,
        subscription: SubscriptionData,
    ) -> Result<(), ConfigError> {
        let topic = subscription.topic.clone();
        if topic.is_empty() || topic.len() > 127 || topic.starts_with(RETRY_TOPIC_PREFIX) {
            return Err(ConfigError(format!("cannot subscribe to topic {topic:?}")));
        }
        self.subscriptions.insert(topic, subscription);
        // Brokers must learn the subscription before the first pull of it (a pull for an
        // unknown subscription is refused), and the route must be known to rebalance.
        self.rebalance_after_heartbeat = true;
        self.timers.reset(now, Timer::RouteRefresh);
        self.timers.reset(now, Timer::Heartbeat);
        Ok(())
    }

    /// The connection `conn` opened.
    pub fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        let (addr, queued) = self.link.connected(now, conn);
        // Brokers know group members by connection: a new connection to a broker (after a lost
        // one, or a broker restart) is no member until it heartbeats, and until then pulls are
        // refused and the group looks empty to a rebalance. Heartbeat on it at once, ahead of
        // what was queued for it, unless a heartbeat already waits in that queue.
        if let Some(addr) = addr {
            let broker = self.cluster.is_broker(&addr);
            let has_heartbeat = self
                .link
                .any(|p| p.conn == conn && matches!(p.kind, PendingKind::Heartbeat));
            if broker && !has_heartbeat {
                self.heartbeat_to(now, [addr]);
            }
        }
        self.link.write(conn, queued);
        self.after_input(now);
    }

    /// The connection `conn` failed to open, or was lost.
    pub fn handle_disconnected(&mut self, now: Instant, conn: ConnId) {
        self.connection_lost(now, conn);
        self.after_input(now);
    }

    /// A command arrived on `conn`: a response to one of ours, or a broker-initiated request.
    pub fn handle_command(&mut self, now: Instant, conn: ConnId, command: Command) {
        if self.lifecycle == Lifecycle::Closed {
            return;
        }
        if command.is_response() {
            match self.link.answered(now, conn, command.opaque) {
                Some(pending) => self.answer(now, pending, Ok(command)),
                None => self.counters.unknown_responses += 1,
            }
        } else {
            self.handle_request(now, conn, command);
        }
        self.after_input(now);
    }

    /// Time passed: fire every timer due at `now`. Calling it early is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(due) = self.link.next_due(now) {
            self.request_due(now, due);
        }
        while let Some(timer) = self.timers.pop_due(now) {
            self.fire(now, timer);
        }
        self.after_input(now);
    }

    /// The handler finished `delivery`. A completion for a queue that was revoked meanwhile (or,
    /// orderly, whose lease lapsed) is dropped and counted: its messages will be delivered to
    /// the queue's next owner.
    pub fn complete(&mut self, now: Instant, delivery: DeliveryId, outcome: ConsumeOutcome) {
        let Some(flight) = self.deliveries.finish(delivery) else {
            self.counters.stale_completions += 1;
            return;
        };
        self.finish_flight(now, flight, outcome);
    }

    /// A delivery ended at `now` with `outcome`: its stats, its trace, and its messages'
    /// fate.
    fn finish_flight(&mut self, now: Instant, flight: Flight, outcome: ConsumeOutcome) {
        // Quick handlers timed together share one clock read, so many end when they started.
        let took = if now == flight.started {
            Duration::ZERO
        } else {
            now.saturating_duration_since(flight.started)
        };
        self.counters.consume_time += took;
        self.counters.consume_latency.record(took);
        if let Some(trace) = flight.trace {
            let consumed_all = match &flight.source {
                Source::Queue { offsets, .. } => outcome.consumed(offsets.len()) == offsets.len(),
                Source::Direct { .. } => outcome.consumed(1) == 1,
            };
            let result = if consumed_all {
                ReturnType::Success
            } else {
                ReturnType::Failed
            };
            let records = trace.close(self.unix_ms(now), result);
            self.outputs.push_back(Output::Trace(records));
        }
        if self.lifecycle == Lifecycle::Draining {
            self.report.drained += 1;
        }
        match flight.source {
            Source::Direct { conn, opaque } => {
                self.answer_direct(now, conn, opaque, flight.started, outcome)
            }
            Source::Queue {
                key,
                epoch,
                offsets,
            } => self.settle(now, key, epoch, &offsets, outcome),
        }
        self.after_input(now);
    }

    /// Starts a graceful shutdown: no new pulls or deliveries; in-flight deliveries, and failed
    /// messages being sent back, get up to `shutdown_drain_timeout`; then offsets are committed, the client unregisters, and
    /// [`Event::Closed`](crate::Event::Closed) reports what happened.
    pub fn shutdown(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        self.lifecycle = Lifecycle::Draining;
        self.timers.clear();
        // after_input finishes at once when nothing is outstanding; otherwise this bounds the
        // wait (request deadlines were cleared with the other timers).
        self.timers.set(
            now + self.config.shutdown_drain_timeout,
            Timer::ShutdownDrain,
        );
        self.after_input(now);
    }

    // ----- outputs -----

    /// The next piece of work for the driver. Deliveries come after every other output ready
    /// at the time, so the pulls and commits that handing them out asked for are carried out
    /// before handlers run.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        self.poll_output_except_deliveries()
            .or_else(|| self.poll_delivery().map(Output::Deliver))
    }

    /// The next output that is not a delivery. A driver that runs handlers between its other
    /// work takes these first, then up to [`Consumer::ready_deliveries`] deliveries with
    /// [`Consumer::poll_delivery`]: the same order as [`Consumer::poll_output`]'s.
    #[must_use]
    pub fn poll_output_except_deliveries(&mut self) -> Option<Output> {
        let mut output = match self.link.poll_wire() {
            Some(wire) => Output::Wire(wire),
            None => self.outputs.pop_front()?,
        };
        // Signed on the way out, so a command queued before a credentials change carries the
        // new ones.
        if let Output::Wire(Wire::Send { command, .. }) = &mut output {
            self.signer.sign(command);
        }
        Some(match &self.namespace {
            Some(ns) => ns.unwrap_output(output),
            None => output,
        })
    }

    /// The next delivery handed out: run its handler, then [`Consumer::complete`] it.
    #[must_use]
    pub fn poll_delivery(&mut self) -> Option<Delivery> {
        let delivery = self.to_deliver.pop_front()?;
        Some(match &self.namespace {
            Some(ns) => ns.unwrap_delivery(delivery),
            None => delivery,
        })
    }

    /// How many deliveries wait for [`Consumer::poll_delivery`].
    #[must_use]
    pub fn ready_deliveries(&self) -> usize {
        self.to_deliver.len()
    }

    /// Signs every request handed out from now on with `credentials` (`None`: unsigned), so
    /// rotated keys take effect without a restart; requests already sent keep their
    /// signature.
    pub fn set_credentials(&mut self, credentials: Option<proto::acl::Credentials>) {
        self.signer.set_credentials(credentials);
    }

    /// When `handle_timeout` should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let own = self.timers.next().map(|(at, _)| at);
        [own, self.link.poll_timeout()].into_iter().flatten().min()
    }

    // ----- getters -----

    /// The queues this consumer owns now, named as the application names them (without the
    /// namespace).
    pub fn assignment(&self) -> impl Iterator<Item = MessageQueue> + '_ {
        self.queues
            .in_name_order()
            .filter(|s| s.phase != Phase::Revoking)
            .map(|s| self.outward_queue(&s.mq))
    }

    /// `mq` as the application names it.
    fn outward_queue(&self, mq: &MessageQueue) -> MessageQueue {
        match &self.namespace {
            Some(ns) => ns.unwrap_queue(mq),
            None => mq.clone(),
        }
    }

    /// `mq`, as the application names it, as the brokers know it.
    pub(super) fn inward_queue<'a>(&self, mq: &'a MessageQueue) -> Cow<'a, MessageQueue> {
        match &self.namespace {
            Some(ns) => Cow::Owned(ns.wrap_queue(mq)),
            None => Cow::Borrowed(mq),
        }
    }

    /// Whether a completion of `delivery` would still be applied now: it is in flight, its
    /// queue was not revoked or restarted since, and (orderly) the queue's lease holds. A
    /// driver may use it to tell a handler its work no longer counts.
    pub fn is_current(&self, delivery: DeliveryId, now: Instant) -> bool {
        match self.deliveries.get(delivery).map(|f| &f.source) {
            None => false,
            Some(Source::Direct { .. }) => true,
            Some(&Source::Queue { key, epoch, .. }) => self
                .queues
                .live(key, epoch)
                .is_some_and(|s| !self.needs_lock() || s.lease_valid(now)),
        }
    }

    /// The application is done with revoke hook `request` ([`Output::Revoking`]): its queues
    /// commit and go once their in-flight deliveries are done. An unknown or late answer (the
    /// revoke deadline passed) is ignored.
    pub fn revoke_done(&mut self, now: Instant, request: RequestId) {
        self.on_revoke_done(now, request);
        self.after_input(now);
    }

    /// Whether shutdown has finished.
    pub fn is_closed(&self) -> bool {
        self.lifecycle == Lifecycle::Closed
    }

    /// The configuration the consumer runs with.
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// A snapshot of the consumer's state and counters.
    pub fn stats(&self) -> ConsumerStats {
        let queues: Vec<QueueStats> = self
            .queues
            .iter()
            .map(|s| QueueStats {
                queue: self.outward_queue(&s.mq),
                epoch: s.epoch.0,
                cached_messages: s.pq().len(),
                cached_bytes: s.pq().bytes(),
                in_flight: s.pq().in_flight(),
                committed_offset: s.persisted,
                committable_offset: s.commit_point(),
                next_pull_offset: s.next_offset,
                max_offset: s.max_offset,
                lag: (s.max_offset - s.commit_point()).max(0),
                paused: self.paused.contains(&s.mq),
                last_pull: s.last_pull,
                lease_until: s.lease,
                revoking: s.phase == Phase::Revoking,
                stuck: s.stuck.as_ref().map(|(_, error)| error.clone()),
                awaiting_handover_since: self.handovers.waiting_since(s.key),
                handovers: self.handovers.tally(&s.mq).handovers,
                handover_timeouts: self.handovers.tally(&s.mq).timeouts,
                last_handover_wait: self.handovers.tally(&s.mq).last_wait,
            })
            .collect();
        let c = &self.counters;
        let (handovers, handover_timeouts, handover_wait) = self.handovers.totals();
        ConsumerStats {
            cached_messages: queues.iter().map(|q| q.cached_messages).sum(),
            cached_bytes: queues.iter().map(|q| q.cached_bytes).sum(),
            lag: queues.iter().map(|q| q.lag).sum(),
            queues,
            in_flight_deliveries: self.deliveries.len(),
            delivered: c.delivered,
            delivered_messages: c.delivered_messages,
            pulls: c.pulls,
            pull_latency: c.pull_latency.summary(),
            consume_latency: c.consume_latency.summary(),
            connections: self.link.stats(),
            stale_completions: c.stale_completions,
            stale_responses: c.stale_responses,
            unknown_responses: c.unknown_responses,
            flow_control_pauses: c.flow_control_pauses,
            rate_limited: c.rate_limited,
            rate_limit_pull_pauses: c.rate_limit_pull_pauses,
            expired_deliveries: c.expired,
            sent_back: c.sent_back,
            trace_dropped: 0,
            handovers,
            handover_timeouts,
            handover_wait,
        }
    }

    /// The latency distributions of [`Consumer::stats`], bucket by bucket.
    pub fn latency_buckets(&self) -> LatencyBuckets {
        LatencyBuckets {
            pull: self.counters.pull_latency.buckets(),
            consume: self.counters.consume_latency.buckets(),
        }
    }

    // ----- timers -----

    fn fire(&mut self, now: Instant, timer: Timer) {
        match timer {
            Timer::RouteRefresh => {
                self.refresh_routes(now);
                self.timers.reset(
                    now + self.config.route_refresh_interval,
                    Timer::RouteRefresh,
                );
            }
            Timer::Heartbeat => {
                self.heartbeat(now);
                self.timers
                    .reset(now + self.config.heartbeat_interval, Timer::Heartbeat);
            }
            Timer::Rebalance => {
                self.rebalance(now);
                self.timers
                    .reset(now + self.config.rebalance_interval, Timer::Rebalance);
            }
            Timer::AckCommit => {
                self.ack_commit_armed = false;
                self.commit_moved(now, false);
            }
            Timer::PersistOffsets => {
                self.persist_offsets(now);
                self.timers
                    .reset(now + self.config.persist_interval, Timer::PersistOffsets);
            }
            Timer::Pull(key, epoch) => self.on_pull_timer(now, key, epoch),
            Timer::RevokeDeadline(key, epoch) => {
                if self.queues.get(key).is_some_and(|s| s.epoch == epoch) {
                    self.finish_revoke(now, key);
                }
            }
            Timer::Probe => {
                self.probe_quiet_connections(now);
                self.timers
                    .reset(now + self.config.probe_after / 2, Timer::Probe);
            }
            Timer::LockRenew => {
                self.renew_leases(now);
                self.timers
                    .reset(now + self.config.lock_interval, Timer::LockRenew);
            }
            Timer::Lock(key, epoch) => {
                if self.wants_lock(key, epoch) {
                    self.lock_queues(now, vec![key]);
                }
            }
            Timer::HandoverDeadline(key, epoch) => self.handover_deadline(now, key, epoch),
            Timer::LeaseExpiry(key, epoch) => {
                let lapsed = self
                    .queues
                    .live_mut(key, epoch)
                    .is_some_and(|s| s.phase != Phase::Lock && !s.lease_valid(now));
                if lapsed {
                    self.lose_lease(now, key, Duration::ZERO);
                }
            }
            Timer::Resend => self.resend_due(now),
            Timer::ConsumeTimeoutScan => {
                self.expire_deliveries(now);
                self.timers
                    .reset(now + self.timeout_scan_period(), Timer::ConsumeTimeoutScan);
            }
            Timer::Redeliver => {
                if let Some(at) = self.queues.release_due(now) {
                    self.timers.set(at, Timer::Redeliver);
                }
            }
            Timer::ShutdownDrain => {
                if self.lifecycle == Lifecycle::Draining {
                    self.finish_drain(now);
                }
            }
            Timer::ShutdownFinish => self.close(),
            Timer::CommitRetry => self.send_commit_retries(now),
            // `after_input` dispatches what the limit lets go now; poll mode's driver takes.
            Timer::RateLimit => {}
        }
    }

    /// Finishes a revoke that waited for queue `key`'s cache to change.
    fn after_queue_change(&mut self, now: Instant, key: QueueKey) {
        let Some(state) = self.queues.get(key) else {
            return;
        };
        if state.phase == Phase::Revoking {
            self.maybe_finish_revoke(now, key);
        }
    }

    // ----- helpers -----

    fn after_input(&mut self, now: Instant) {
        if self.lifecycle == Lifecycle::Draining && self.drained() {
            self.finish_drain(now);
        }
        self.maybe_close(now);
        self.dispatch(now);
        self.pull_into_room(now);
    }

    /// Whether a draining consumer has nothing left to wait for: no delivery in flight and no
    /// failed message still on its way back to the broker. A message being sent back holds its
    /// queue's commit point below it; committing before its answer would hand it to the next
    /// owner from the topic as well as from `%RETRY%` (Java's consume threads send back
    /// synchronously, and its shutdown waits for them, before the last offsets are persisted).
    fn drained(&self) -> bool {
        self.deliveries.is_empty()
            && !self
                .link
                .any(|p| matches!(p.kind, PendingKind::SendBack(_)))
    }

    /// Starts a new life for `mq` under a fresh key and epoch: at `start` (an offset the
    /// broker already holds for the group), or waiting for its start offset to be resolved.
    ///
    /// Orderly, without a `lease` carried over, the queue waits for its lock first (and then
    /// asks the broker for its offset, as another owner may have moved it meanwhile).
    fn insert_queue(
        &mut self,
        mq: MessageQueue,
        start: Option<i64>,
        lease: Option<Instant>,
    ) -> (QueueKey, Epoch) {
        let must_lock = self.needs_lock() && lease.is_none();
        let offset = if must_lock { None } else { start };
        let phase = match (must_lock, offset) {
            (true, _) => Phase::Lock,
            (false, Some(_)) => Phase::Idle,
            (false, None) => Phase::Resolve,
        };
        let manual_commit =
            self.config.consume_mode == ConsumeMode::Poll && !self.config.auto_commit;
        self.queues.insert(
            mq,
            Start {
                phase,
                offset,
                lease,
                manual_commit,
            },
        )
    }

    fn master_addr(&self, broker: &str) -> Option<String> {
        self.cluster.master_addr(broker)
    }

    /// Orderly clustering consumption holds broker locks; broadcasting needs none.
    fn needs_lock(&self) -> bool {
        self.config.consume_mode == ConsumeMode::Orderly
            && self.config.message_model == MessageModel::Clustering
    }

    /// Clustering push consumers send failed messages back; broadcasting and poll mode do not.
    fn sends_back(&self) -> bool {
        self.config.consume_mode != ConsumeMode::Poll
            && self.config.message_model == MessageModel::Clustering
    }

    /// Java scans once per `consumeTimeout`; scanning 15 times as often keeps an expired
    /// delivery's overrun under a fifteenth of the timeout.
    fn timeout_scan_period(&self) -> Duration {
        (self.config.consume_timeout / 15).max(Duration::from_millis(100))
    }

    fn unix_ms(&self, now: Instant) -> i64 {
        self.start_unix_ms + now.saturating_duration_since(self.start).as_millis() as i64
    }

    fn next_random(&mut self) -> u64 {
        // splitmix64: enough to spread requests, and reproducible from the seed.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
