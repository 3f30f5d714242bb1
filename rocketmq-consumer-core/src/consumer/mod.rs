//! [`Consumer`]: the consumer as a state machine. It wires routes, heartbeats, rebalance,
//! pulls, the per-queue caches and offset commits together; each piece's rules live in its own
//! module (`rebalance`, `queue`, `pull`), and this file only decides when they run. The
//! submodules hold the consumer's other duties: queue leases for orderly consumption
//! (`lease`), sending failed messages back (`retry`), requests brokers send us
//! (`broker_request`) and the poll-mode API (`poll`).

mod broker_request;
mod cluster;
mod deliveries;
mod lease;
mod poll;
mod queues;
mod requests;
mod retry;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use proto::body::{
    CheckClientRequestBody, ConsumeFromWhere, ConsumeType, ConsumerData, ConsumerListBody,
    HeartbeatData, LockBatchResponseBody, SubscriptionData, TopicRouteData,
};
use proto::headers::{
    CheckClientConfigRequest, GetConsumerListByGroupRequest, GetMaxOffsetRequest,
    GetMaxOffsetResponse, GetRouteInfoRequest, HeartbeatRequest, PullMessageRequest,
    QueryConsumerOffsetRequest, QueryConsumerOffsetResponse, SearchOffsetRequest,
    SearchOffsetResponse, UnregisterClientRequest, UpdateConsumerOffsetRequest, pull_sys_flag,
};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use crate::config::{ConfigError, ConsumeFrom, ConsumeMode, ConsumerConfig, MessageModel};
use crate::conn::{Connections, Route};
use crate::output::{
    ConnId, ConsumeOutcome, Delivery, DeliveryId, Event, FailureReason, Output, ShutdownReport,
};
use crate::pull::{self, PullOutcome};
use crate::queue::flow::{self, Limits, Load};
use crate::rebalance;
use crate::stats::{ConsumerStats, QueueStats};
use crate::timer::{Timer, TimerQueue};
use cluster::ClusterView;
use deliveries::{Deliveries, Source};
pub(crate) use queues::{Epoch, QueueKey};
use queues::{Phase, QueueTable, Start};
use requests::{Answered, Pending, PendingKind, Requests};

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
    conns: Connections,
    /// Requests in flight, and commits held back.
    requests: Requests,
    timers: TimerQueue,
    /// Owned queues, the ready set and the cache totals.
    queues: QueueTable,
    /// Deliveries handed to the handler and not completed.
    deliveries: Deliveries,
    rebalance_after_heartbeat: bool,
    outputs: VecDeque<Output>,
    /// Broadcasting: the next offset to consume of every queue ever consumed, kept for queues
    /// that are absent for a while; what `StoreOffsets` hands out.
    local_offsets: BTreeMap<MessageQueue, i64>,
    /// Local offsets changed since the last `StoreOffsets`.
    local_dirty: bool,
    /// Poll mode: queues the application assigned itself, by topic (no rebalance for these).
    assigned: BTreeMap<String, BTreeSet<MessageQueue>>,
    /// Poll mode: queues neither pulled nor polled until resumed.
    paused: BTreeSet<MessageQueue>,
    next_request: u64,
    /// Orderly shutdown: unlocks sent after the final commits were answered.
    unlock_sent: bool,
    /// SQL92 subscriptions no broker has confirmed yet (`CHECK_CLIENT_CONFIG`).
    unchecked: BTreeSet<String>,
    /// Failed messages out of attempts whose send to the retry topic is to be tried again.
    resends: BTreeMap<(Instant, u64), retry::SendBack>,
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
    pull_time: Duration,
    delivered: u64,
    consume_time: Duration,
    flow_control_pauses: u64,
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
        let retry_topic = format!("{RETRY_TOPIC_PREFIX}{}", config.group);
        let seed = config.seed;
        let mut consumer = Self {
            client_id: client_id.into(),
            retry_topic: retry_topic.clone(),
            start: now,
            start_unix_ms: unix_ms,
            lifecycle: Lifecycle::Running,
            subscriptions: BTreeMap::new(),
            cluster: ClusterView::new(config.name_servers.clone(), seed as usize),
            conns: Connections::default(),
            requests: Requests::default(),
            timers: TimerQueue::default(),
            queues: QueueTable::default(),
            deliveries: Deliveries::default(),
            rebalance_after_heartbeat: true,
            outputs: VecDeque::new(),
            local_offsets: BTreeMap::new(),
            local_dirty: false,
            assigned: BTreeMap::new(),
            paused: BTreeSet::new(),
            next_request: 0,
            unlock_sent: false,
            unchecked: BTreeSet::new(),
            resends: BTreeMap::new(),
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
        if consumer.needs_lock() {
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
        consumer.timers.set(
            now + consumer.config.persist_interval,
            Timer::PersistOffsets,
        );
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
        self.add_subscription(now, SubscriptionData::new(topic, expression, version))
    }

    /// Subscribes to `topic` with an SQL92 expression over message properties (`a > 5 AND
    /// b = 'x'`), which the broker evaluates. Brokers filter SQL92 only with
    /// `enablePropertyFilter=true` (off by default); the first broker of the topic is asked
    /// (`CHECK_CLIENT_CONFIG`, as Java's consumer asks at start), and a refusal drops the
    /// subscription with [`Event::SubscriptionRejected`].
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
        self.unchecked.insert(topic.to_owned());
        self.add_subscription(now, SubscriptionData::sql92(topic, expression, version))
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
        for command in self.conns.connected(conn) {
            self.outputs.push_back(Output::Send { conn, command });
        }
        // Brokers know group members by connection: a new connection to a broker (after a lost
        // one, or a broker restart) is no member until it heartbeats, and until then pulls are
        // refused and the group looks empty to a rebalance. Heartbeat on it at once, unless a
        // heartbeat already waits in its queue.
        if let Some(addr) = self.conns.addr(conn).map(str::to_owned) {
            let broker = self.cluster.is_broker(&addr);
            let queued = self
                .requests
                .any(|p| p.conn == conn && matches!(p.kind, PendingKind::Heartbeat));
            if broker && !queued {
                self.heartbeat_to(now, [addr]);
            }
        }
        self.after_input(now);
    }

    /// The connection `conn` failed to open, or was lost.
    pub fn handle_disconnected(&mut self, now: Instant, conn: ConnId) {
        let retry_at = now + self.config.reconnect_backoff;
        let Some((addr, _unsent)) = self.conns.disconnected(conn, retry_at) else {
            return;
        };
        for pending in self.requests.lost_on(conn) {
            self.answer(now, pending, Err(FailureReason::Disconnected));
        }
        // A broker that restarted forgot its locks, and this is all we see of a restart.
        self.lose_leases_on(now, &addr);
        self.after_input(now);
    }

    /// A command arrived on `conn`: a response to one of ours, or a broker-initiated request.
    pub fn handle_command(&mut self, now: Instant, conn: ConnId, command: Command) {
        if self.lifecycle == Lifecycle::Closed {
            return;
        }
        if command.is_response() {
            match self.requests.answered(conn, command.opaque) {
                Answered::Ours(pending) => {
                    // Answered: its deadline timer would only be dead weight in the queue.
                    self.timers
                        .remove(pending.deadline, Timer::Request(conn.0, command.opaque));
                    self.answer(now, pending, Ok(command))
                }
                Answered::Unknown => self.counters.unknown_responses += 1,
            }
        } else {
            self.handle_request(now, conn, command);
        }
        self.after_input(now);
    }

    /// Time passed: fire every timer due at `now`. Calling it early is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
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
        self.counters.consume_time += now.saturating_duration_since(flight.started);
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
    /// [`Event::Closed`] reports what happened.
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

    /// The next piece of work for the driver.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        if let Some((conn, addr)) = self.conns.to_open.pop_front() {
            return Some(Output::Connect { conn, addr });
        }
        self.outputs.pop_front()
    }

    /// When `handle_timeout` should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next().map(|(at, _)| at)
    }

    // ----- getters -----

    /// The queues this consumer owns now.
    pub fn assignment(&self) -> impl Iterator<Item = &MessageQueue> + '_ {
        self.queues
            .in_name_order()
            .filter(|s| s.phase != Phase::Revoking)
            .map(|s| &s.mq)
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
        let queues = self
            .queues
            .iter()
            .map(|s| QueueStats {
                queue: s.mq.clone(),
                cached_messages: s.pq().len(),
                cached_bytes: s.pq().bytes(),
                in_flight: s.pq().in_flight(),
                committable_offset: s.commit_point(),
                next_pull_offset: s.next_offset,
                max_offset: s.max_offset,
                lag: (s.max_offset - s.commit_point()).max(0),
                lease_until: s.lease,
            })
            .collect();
        let c = &self.counters;
        ConsumerStats {
            queues,
            in_flight_deliveries: self.deliveries.len(),
            delivered: c.delivered,
            pulls: c.pulls,
            mean_pull_latency: c
                .pull_time
                .checked_div(c.pulls.max(1) as u32)
                .unwrap_or_default(),
            mean_consume_latency: c
                .consume_time
                .checked_div(c.delivered.max(1) as u32)
                .unwrap_or_default(),
            stale_completions: c.stale_completions,
            stale_responses: c.stale_responses,
            unknown_responses: c.unknown_responses,
            flow_control_pauses: c.flow_control_pauses,
            expired_deliveries: c.expired,
            sent_back: c.sent_back,
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
            Timer::Request(_, opaque) => {
                if let Some(pending) = self.requests.expired(opaque, now) {
                    self.answer(now, pending, Err(FailureReason::Timeout));
                }
            }
            Timer::LockRenew => {
                self.renew_leases(now);
                self.timers
                    .reset(now + self.config.lock_interval, Timer::LockRenew);
            }
            Timer::Lock(key, epoch) => {
                if self
                    .queues
                    .live_mut(key, epoch)
                    .is_some_and(|s| s.phase == Phase::Lock)
                {
                    self.lock_queues(now, vec![key]);
                }
            }
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
        }
    }

    // ----- requests -----

    fn timeout_of(&self, kind: &PendingKind) -> Duration {
        match kind {
            PendingKind::Pull { .. } => self.config.pull_timeout,
            _ => self.config.request_timeout,
        }
    }

    fn request(&mut self, now: Instant, addr: &str, mut command: Command, kind: PendingKind) {
        let opaque = self.requests.next_opaque();
        command.opaque = opaque;
        let deadline = now + self.timeout_of(&kind);
        let (route, command) = self.conns.route(now, addr, command);
        let conn = match route {
            Route::Send(conn) => {
                if let Some(command) = command {
                    self.outputs.push_back(Output::Send { conn, command });
                }
                conn
            }
            Route::Queued(conn) => conn,
            Route::Unavailable => {
                let pending = Pending {
                    conn: ConnId(0),
                    addr: addr.to_owned(),
                    kind,
                    sent: now,
                    deadline,
                };
                self.answer(now, pending, Err(FailureReason::Disconnected));
                return;
            }
        };
        self.requests.insert(
            opaque,
            Pending {
                conn,
                addr: addr.to_owned(),
                kind,
                sent: now,
                deadline,
            },
        );
        self.timers.set(deadline, Timer::Request(conn.0, opaque));
    }

    fn oneway(&mut self, now: Instant, addr: &str, command: Command) {
        let mut command = command.oneway();
        command.opaque = self.requests.next_opaque();
        if let (Route::Send(conn), Some(command)) = self.conns.route(now, addr, command) {
            self.outputs.push_back(Output::Send { conn, command });
        }
    }

    /// The one way a request ends: its answer, or why there is none (a timeout, a lost
    /// connection, no connection at all). Each kind decides in one place what an answer means
    /// and what a failure costs; a failure is also reported as [`Event::RequestFailed`].
    fn answer(&mut self, now: Instant, pending: Pending, answer: Result<Command, FailureReason>) {
        if pending.kind.is_commit() {
            self.send_next_commit(now, &pending.addr);
        }
        let Pending {
            addr, kind, sent, ..
        } = pending;
        let name = kind.name();
        match kind {
            PendingKind::Route(topic) => match answer.and_then(route_of) {
                Ok(route) => self.on_route(now, &topic, route),
                Err(reason) => {
                    self.failed(&addr, name, reason);
                    self.cluster.name_server_failed(&addr);
                    self.timers
                        .reset(now + self.config.rebalance_retry, Timer::RouteRefresh);
                }
            },
            PendingKind::Heartbeat => match answer.and_then(success) {
                Ok(_) => {
                    if self.rebalance_after_heartbeat {
                        self.rebalance_after_heartbeat = false;
                        self.rebalance(now);
                    }
                }
                Err(reason) => self.failed(&addr, name, reason),
            },
            PendingKind::ConsumerList(topic) => {
                let list = answer.and_then(success).and_then(|r| {
                    ConsumerListBody::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match list {
                    Ok(list) => self.apply_rebalance(now, &topic, &list.consumer_id_list),
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.timers
                            .reset(now + self.config.rebalance_retry, Timer::Rebalance);
                    }
                }
            }
            PendingKind::QueryOffset(key, epoch) => {
                let offset = answer.and_then(|r| match r.response_code() {
                    // No committed offset: a new group (`RebalancePushImpl.computePullFromWhere`).
                    ResponseCode::QUERY_NOT_FOUND => Ok(None),
                    _ => offset_of::<QueryConsumerOffsetResponse>(r, |h| h.offset).map(Some),
                });
                match offset {
                    Ok(Some(offset)) => self.start_queue(now, key, epoch, offset),
                    Ok(None) => self.resolve_without_commit(now, key, epoch),
                    Err(reason) => self.resolve_failed(now, &addr, name, key, epoch, reason),
                }
            }
            PendingKind::MaxOffset(key, epoch) => {
                match answer.and_then(|r| offset_of::<GetMaxOffsetResponse>(r, |h| h.offset)) {
                    Ok(offset) => self.start_queue(now, key, epoch, offset),
                    Err(reason) => self.resolve_failed(now, &addr, name, key, epoch, reason),
                }
            }
            PendingKind::SearchOffset(key, epoch) => {
                match answer.and_then(|r| offset_of::<SearchOffsetResponse>(r, |h| h.offset)) {
                    Ok(offset) => self.start_queue(now, key, epoch, offset),
                    Err(reason) => self.resolve_failed(now, &addr, name, key, epoch, reason),
                }
            }
            PendingKind::Pull { key, epoch, offset } => {
                self.counters.pulls += 1;
                match answer {
                    Ok(response) => {
                        self.counters.pull_time += now.saturating_duration_since(sent);
                        self.on_pull(now, &addr, key, epoch, offset, response)
                    }
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        if let Some(state) = self.queues.live_mut(key, epoch) {
                            if state.phase == Phase::Pulling {
                                state.phase = Phase::Idle;
                            }
                            self.timers
                                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
                        }
                    }
                }
            }
            PendingKind::FinalCommit(mq, offset) => {
                // A refusal is reported in the shutdown report, not as a failed request.
                match answer {
                    Ok(r) if r.response_code() == ResponseCode::SUCCESS => {
                        self.report.committed.push((mq, offset))
                    }
                    Ok(_) => self.report.uncommitted.push(mq),
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.report.uncommitted.push(mq);
                    }
                }
                self.maybe_close(now);
            }
            PendingKind::Unregister | PendingKind::Unlock => {
                // Whatever the answer: shutdown goes on.
                if let Err(reason) = answer {
                    self.failed(&addr, name, reason);
                }
                self.maybe_close(now);
            }
            PendingKind::Lock(queues) => {
                let granted = answer.and_then(success).and_then(|r| {
                    LockBatchResponseBody::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match granted {
                    Ok(body) => self.on_lock(now, sent, &queues, &body.lock_ok_mq_set),
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.on_lock_failed(now, &queues);
                    }
                }
            }
            PendingKind::SendBack(back) => match answer.and_then(success) {
                Ok(_) => self.on_sent_back(now, *back),
                Err(reason) => {
                    self.failed(&addr, name, reason);
                    self.on_send_back_failed(now, *back);
                }
            },
            PendingKind::SeekBound(key, epoch) => {
                // Both answers carry the one field `offset`. Every seek is answered:
                // `OffsetReset`, or a failure when the queue is being revoked meanwhile.
                let queue = self.queues.live(key, epoch).map(|s| s.mq.clone());
                let offset =
                    answer.and_then(|r| offset_of::<GetMaxOffsetResponse>(r, |h| h.offset));
                let reset = match (offset, queue) {
                    (_, None) => Err(FailureReason::Stale),
                    (Ok(offset), Some(mq)) if self.reset_queue(now, &mq, offset) => Ok(()),
                    (Ok(_), Some(_)) => Err(FailureReason::Stale),
                    (Err(reason), Some(_)) => Err(reason),
                };
                if let Err(reason) = reset {
                    self.failed(&addr, name, reason);
                }
            }
            PendingKind::Search(request, queue) => {
                let offset = answer.and_then(|r| {
                    let h = success(r)?
                        .header::<SearchOffsetResponse>()
                        .map_err(|e| FailureReason::Malformed(e.to_string()))?;
                    Ok(h.offset)
                });
                if let Err(reason) = &offset {
                    self.failed(&addr, name, reason.clone());
                }
                self.outputs
                    .push_back(Output::Event(Event::OffsetForTimestamp {
                        request,
                        queue,
                        offset,
                    }));
            }
            PendingKind::CheckClient(topic) => match answer {
                Ok(r) if r.response_code() == ResponseCode::SUCCESS => {}
                Ok(r) => {
                    let reason = FailureReason::Refused(r.response_code(), r.remark);
                    self.reject_subscription(now, &topic, reason);
                }
                Err(reason) => {
                    // Asked again with the next route refresh.
                    self.failed(&addr, name, reason);
                    self.unchecked.insert(topic);
                }
            },
            PendingKind::Commit(mq, offset) => match answer.and_then(success) {
                Ok(_) => self
                    .outputs
                    .push_back(Output::Event(Event::Committed(vec![(mq, offset)]))),
                Err(reason) => self.failed(&addr, name, reason),
            },
        }
    }

    /// Reports a failed request (the consumer retries on its own).
    fn failed(&mut self, addr: &str, request: &'static str, reason: FailureReason) {
        self.outputs.push_back(Output::Event(Event::RequestFailed {
            addr: addr.to_owned(),
            request,
            reason,
        }));
    }

    /// A start-offset request failed: ask again after the pull backoff.
    fn resolve_failed(
        &mut self,
        now: Instant,
        addr: &str,
        name: &'static str,
        key: QueueKey,
        epoch: Epoch,
        reason: FailureReason,
    ) {
        self.failed(addr, name, reason);
        if let Some(state) = self.queues.live_mut(key, epoch) {
            state.phase = Phase::Resolve;
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
        }
    }

    /// A broker cannot evaluate the topic's SQL92 expression: drop the subscription and its
    /// queues, and tell the brokers at the next heartbeat.
    fn reject_subscription(&mut self, now: Instant, topic: &str, reason: FailureReason) {
        if self.subscriptions.remove(topic).is_none() {
            return;
        }
        self.cluster.forget_route(topic);
        self.apply_assignment(now, topic, BTreeSet::new());
        self.outputs
            .push_back(Output::Event(Event::SubscriptionRejected {
                topic: topic.to_owned(),
                reason,
            }));
        self.timers.reset(now, Timer::Heartbeat);
    }

    // ----- routes and heartbeats -----

    fn refresh_routes(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let Some(namesrv) = self.cluster.name_server().map(str::to_owned) else {
            return;
        };
        let topics: Vec<String> = self.subscriptions.keys().cloned().collect();
        for topic in topics {
            let header = GetRouteInfoRequest {
                topic: topic.clone(),
                accept_standard_json_only: Some(true),
            };
            self.request(
                now,
                &namesrv,
                Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header),
                PendingKind::Route(topic),
            );
        }
    }

    /// The name server's route of `topic`; `None` when it knows no such topic.
    fn on_route(&mut self, now: Instant, topic: &str, route: Option<TopicRouteData>) {
        let Some(route) = route else {
            // The retry topic appears once a broker has our heartbeat; others may come later.
            if self.cluster.forget_route(topic) {
                self.rebalance(now);
            }
            self.timers
                .reset(now + self.config.rebalance_retry * 3, Timer::RouteRefresh);
            return;
        };
        if self.unchecked.remove(topic)
            && let Some(addr) = route
                .broker_datas
                .iter()
                .find_map(|b| b.master_or_any_addr().map(str::to_owned))
            && let Some(subscription) = self.subscriptions.get(topic)
        {
            let body = CheckClientRequestBody {
                client_id: self.client_id.clone(),
                group: self.config.group.clone(),
                subscription_data: subscription.clone(),
                namespace: None,
            }
            .encode();
            let request = Command::request(
                RequestCode::CHECK_CLIENT_CONFIG,
                &CheckClientConfigRequest {},
            )
            .with_body(body);
            self.request(
                now,
                &addr,
                request,
                PendingKind::CheckClient(topic.to_owned()),
            );
        }
        // A route that comes back (its brokers were gone, e.g. restarting) may bring brokers
        // that forgot this consumer: tell them again.
        let change = self.cluster.update_route(topic, route);
        if change.new_broker {
            self.rebalance_after_heartbeat = true;
            self.heartbeat(now);
        } else if change.queues_changed {
            self.rebalance(now);
        }
    }

    fn heartbeat(&mut self, now: Instant) {
        let addrs = self.cluster.broker_addrs();
        self.heartbeat_to(now, addrs);
    }

    fn heartbeat_to(&mut self, now: Instant, addrs: impl IntoIterator<Item = String>) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let data = HeartbeatData {
            client_id: self.client_id.clone(),
            consumer_data_set: vec![ConsumerData {
                group_name: self.config.group.clone(),
                consume_type: if self.config.consume_mode == ConsumeMode::Poll {
                    ConsumeType::Actively
                } else {
                    ConsumeType::Passively
                },
                message_model: match self.config.message_model {
                    MessageModel::Broadcasting => proto::body::MessageModel::Broadcasting,
                    _ => proto::body::MessageModel::Clustering,
                },
                consume_from_where: match self.config.consume_from {
                    ConsumeFrom::LastOffset => ConsumeFromWhere::LastOffset,
                    ConsumeFrom::FirstOffset => ConsumeFromWhere::FirstOffset,
                    ConsumeFrom::Timestamp(_) => ConsumeFromWhere::Timestamp,
                },
                subscription_data_set: self.subscriptions.values().cloned().collect(),
                ..ConsumerData::default()
            }],
            ..HeartbeatData::default()
        };
        let body = data.encode();
        for addr in addrs {
            let request = Command::request(RequestCode::HEART_BEAT, &HeartbeatRequest {})
                .with_body(body.clone());
            self.request(now, &addr, request, PendingKind::Heartbeat);
        }
    }

    // ----- rebalance -----

    fn rebalance(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let topics: Vec<String> = self.subscriptions.keys().cloned().collect();
        for topic in topics {
            if let Some(fixed) = self.assigned.get(&topic) {
                let fixed = fixed.clone();
                self.apply_assignment(now, &topic, fixed);
                continue;
            }
            let Some(route) = self.cluster.route(&topic) else {
                // No route: the topic is gone, or not there yet; own none of its queues.
                self.apply_assignment(now, &topic, BTreeSet::new());
                continue;
            };
            if self.config.message_model == MessageModel::Broadcasting {
                let all = route.subscribe_queues(&topic).into_iter().collect();
                self.apply_assignment(now, &topic, all);
                continue;
            }
            let masters: Vec<String> = route
                .broker_datas
                .iter()
                .filter_map(|b| b.master_or_any_addr().map(str::to_owned))
                .collect();
            if masters.is_empty() {
                continue;
            }
            // Java asks a random broker of the topic (`findBrokerAddrByTopic`).
            let pick = (self.next_random() % masters.len() as u64) as usize;
            let addr = masters[pick].clone();
            let header = GetConsumerListByGroupRequest {
                consumer_group: self.config.group.clone(),
            };
            self.request(
                now,
                &addr,
                Command::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, &header),
                PendingKind::ConsumerList(topic),
            );
        }
    }

    fn apply_rebalance(&mut self, now: Instant, topic: &str, consumer_ids: &[String]) {
        let Some(route) = self.cluster.route(topic) else {
            return;
        };
        let queues = route.subscribe_queues(topic);
        let mine = rebalance::allocate(
            &self.config.strategy,
            &self.client_id,
            &queues,
            consumer_ids,
        );
        if !consumer_ids.iter().any(|id| id == &self.client_id) {
            // The broker does not list us yet (heartbeat in flight): try again soon.
            self.timers
                .reset(now + self.config.rebalance_retry, Timer::Rebalance);
        }
        self.apply_assignment(now, topic, mine.into_iter().collect());
    }

    fn apply_assignment(&mut self, now: Instant, topic: &str, target: BTreeSet<MessageQueue>) {
        let current: BTreeSet<MessageQueue> = self
            .queues
            .iter()
            .filter(|s| s.mq.topic() == topic && s.phase != Phase::Revoking)
            .map(|s| s.mq.clone())
            .collect();
        let change = rebalance::diff(&current, &target);
        for mq in &change.removed {
            self.revoke(now, mq);
        }
        let mut to_lock = Vec::new();
        for mq in &change.added {
            to_lock.extend(self.add_queue(now, mq.clone()));
        }
        // Orderly: lock new queues at once, one request per broker, not at the next renewal.
        if !to_lock.is_empty() {
            self.lock_queues(now, to_lock);
        }
        if !change.added.is_empty() {
            self.outputs
                .push_back(Output::Event(Event::Assigned(change.added)));
        }
    }

    /// Starts consuming `mq`; returns its key when it must be locked first (orderly).
    fn add_queue(&mut self, now: Instant, mq: MessageQueue) -> Option<QueueKey> {
        if let Some(old) = self.queues.key_of(&mq) {
            // Revoked but still draining: finish the old life before the new one starts.
            if self
                .queues
                .get(old)
                .is_some_and(|s| s.phase == Phase::Revoking)
            {
                self.finish_revoke(now, old);
            } else {
                return None;
            }
        }
        let (key, epoch) = self.insert_queue(mq, None, None);
        if self.needs_lock() {
            return Some(key);
        }
        self.resolve_offset(now, key, epoch);
        None
    }

    fn revoke(&mut self, now: Instant, mq: &MessageQueue) {
        let Some(state) = self.queues.key_of(mq).and_then(|k| self.queues.get_mut(k)) else {
            return;
        };
        state.phase = Phase::Revoking;
        let (key, epoch) = (state.key, state.epoch);
        if self.deliveries.any_of(key, epoch) {
            self.timers.set(
                now + self.config.revoke_drain_timeout,
                Timer::RevokeDeadline(key, epoch),
            );
        } else {
            self.finish_revoke(now, key);
        }
    }

    fn maybe_finish_revoke(&mut self, now: Instant, key: QueueKey) {
        let Some(state) = self.queues.get(key) else {
            return;
        };
        let epoch = state.epoch;
        if !self.deliveries.any_of(key, epoch) {
            self.finish_revoke(now, key);
        }
    }

    /// Commits the queue's offset and forgets it; in-flight completions become stale.
    fn finish_revoke(&mut self, now: Instant, key: QueueKey) {
        let Some(state) = self.queues.remove(key) else {
            return;
        };
        // Only a queue that got its start offset has anything to commit; an orderly queue
        // whose lease lapsed may have a new owner by now, who must not see its offset move.
        let committable =
            state.persisted.is_some() && (!self.needs_lock() || state.lease_valid(now));
        if committable {
            self.store_offset(now, &state.mq, state.commit_point());
        }
        if self.needs_lock() && state.lease.is_some() {
            self.unlock_oneway(now, &state.mq);
        }
        self.outputs
            .push_back(Output::Event(Event::Revoked(vec![state.mq])));
    }

    // ----- start offsets -----

    fn resolve_offset(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        let group = self.config.group.clone();
        let Some(mq) = self.queues.get(key).map(|s| s.mq.clone()) else {
            return;
        };
        if self.config.message_model == MessageModel::Broadcasting {
            match self.local_offsets.get(&mq) {
                Some(&offset) => self.start_queue(now, key, epoch, offset),
                None => self.resolve_without_commit(now, key, epoch),
            }
            return;
        }
        let Some(addr) = self.master_addr(mq.broker_name()) else {
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            return;
        };
        if let Some(state) = self.queues.live_mut(key, epoch) {
            state.phase = Phase::Resolving;
        }
        let header = QueryConsumerOffsetRequest {
            consumer_group: group,
            topic: mq.topic().to_owned(),
            queue_id: mq.queue_id(),
            set_zero_if_not_found: Some(false),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::QUERY_CONSUMER_OFFSET, &header),
            PendingKind::QueryOffset(key, epoch),
        );
    }

    /// Java's table for a queue without a committed offset (`remoting-protocol.md` §7.8).
    fn resolve_without_commit(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        let Some(mq) = self.queues.get(key).map(|s| s.mq.clone()) else {
            return;
        };
        let is_retry = mq.topic().starts_with(RETRY_TOPIC_PREFIX);
        let Some(addr) = self.master_addr(mq.broker_name()) else {
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            if let Some(state) = self.queues.live_mut(key, epoch) {
                state.phase = Phase::Resolve;
            }
            return;
        };
        match (self.config.consume_from, is_retry) {
            (ConsumeFrom::FirstOffset, _) | (ConsumeFrom::LastOffset, true) => {
                self.start_queue(now, key, epoch, 0);
            }
            (ConsumeFrom::LastOffset, false) | (ConsumeFrom::Timestamp(_), true) => {
                let header = GetMaxOffsetRequest {
                    topic: mq.topic().to_owned(),
                    queue_id: mq.queue_id(),
                    committed: Some(true),
                };
                let request = Command::request(RequestCode::GET_MAX_OFFSET, &header);
                self.request(now, &addr, request, PendingKind::MaxOffset(key, epoch));
            }
            (ConsumeFrom::Timestamp(ms), false) => {
                let header = SearchOffsetRequest {
                    topic: mq.topic().to_owned(),
                    queue_id: mq.queue_id(),
                    timestamp: ms,
                    boundary_type: None,
                };
                let request = Command::request(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &header);
                self.request(now, &addr, request, PendingKind::SearchOffset(key, epoch));
            }
        }
    }

    fn start_queue(&mut self, now: Instant, key: QueueKey, epoch: Epoch, offset: i64) {
        let Some(state) = self.queues.live_mut(key, epoch) else {
            self.counters.stale_responses += 1;
            return;
        };
        if state.phase != Phase::Resolving && state.phase != Phase::Resolve {
            return;
        }
        state.phase = Phase::Idle;
        self.queues.restart_at(key, offset);
        self.try_pull(now, key, epoch);
    }

    // ----- pulling -----

    fn on_pull_timer(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        let Some(state) = self.queues.live_mut(key, epoch) else {
            return;
        };
        match state.phase {
            Phase::Resolve => self.resolve_offset(now, key, epoch),
            Phase::Idle => self.try_pull(now, key, epoch),
            Phase::Lock | Phase::Resolving | Phase::Pulling | Phase::Revoking => {}
        }
    }

    fn try_pull(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let limits = self.limits_for(key);
        let (total_messages, total_bytes) = self.queues.cached();
        let Some(state) = self.queues.get(key) else {
            return;
        };
        if state.epoch != epoch || state.phase != Phase::Idle {
            return;
        }
        // A paused queue waits for `resume`, which pulls it again.
        if !self.paused.is_empty() && self.paused.contains(&state.mq) {
            return;
        }
        let mq = state.mq.clone();
        let load = Load {
            queue_messages: state.pq().len(),
            queue_bytes: state.pq().bytes(),
            span: state.pq().span(),
            total_messages,
            total_bytes,
        };
        if flow::decide(load, limits).is_err() {
            self.counters.flow_control_pauses += 1;
            self.timers.set(
                now + self.config.flow_control_backoff,
                Timer::Pull(key, epoch),
            );
            return;
        }
        let offset = state.next_offset;
        let commit = state.commit_point();
        let broker_id = state.pull_broker_id;
        let sub_version = self
            .subscriptions
            .get(mq.topic())
            .map_or(0, |s| s.sub_version);
        let Some((addr, is_master)) = self.cluster.pull_addr(mq.broker_name(), broker_id) else {
            self.timers
                .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            return;
        };
        // Piggy-back the commit on the pull, on masters only (`PullAPIWrapper.pullKernelImpl`),
        // and only when it moved since last stored: Apache's brokers handle pulls and
        // `UPDATE_CONSUMER_OFFSET` on different thread pools and store a lower offset as given,
        // so a pull repeating an old offset could land after a later commit (the final one at
        // shutdown, say) and take the group back. Java sends it on every pull.
        let moved = state.persisted.is_none_or(|p| commit > p);
        let commit_flag = commit > 0
            && moved
            && is_master
            && self.config.message_model == MessageModel::Clustering;
        let header = PullMessageRequest {
            consumer_group: self.config.group.clone(),
            topic: mq.topic().to_owned(),
            queue_id: mq.queue_id(),
            queue_offset: offset,
            max_msg_nums: self.config.pull_batch_size,
            sys_flag: pull_sys_flag::build(commit_flag, true, false, false, false),
            commit_offset: if commit_flag { commit } else { 0 },
            suspend_timeout_millis: self.config.long_poll_suspend.as_millis() as i64,
            subscription: None,
            sub_version,
            expression_type: None,
            max_msg_bytes: None,
            broker_name: None,
        };
        if let Some(state) = self.queues.get_mut(key) {
            state.phase = Phase::Pulling;
            if commit_flag {
                state.persisted = Some(state.persisted.map_or(commit, |p| p.max(commit)));
                state.committed_once = true;
            }
        }
        self.request(
            now,
            &addr,
            Command::request(RequestCode::PULL_MESSAGE, &header),
            PendingKind::Pull { key, epoch, offset },
        );
    }

    fn on_pull(
        &mut self,
        now: Instant,
        addr: &str,
        key: QueueKey,
        epoch: Epoch,
        offset: i64,
        response: Command,
    ) {
        let Some(state) = self
            .queues
            .get_mut(key)
            .filter(|s| s.epoch == epoch && s.phase == Phase::Pulling)
        else {
            self.counters.stale_responses += 1;
            return;
        };
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let subscription = self.subscriptions.get(state.mq.topic());
        let outcome = pull::interpret(&response, offset, subscription, &self.retry_topic);
        let mq = state.mq.clone();
        state.phase = Phase::Idle;
        match outcome {
            PullOutcome::Found {
                messages,
                next_offset,
                max_offset,
                suggested_broker,
                corrupt,
            } => {
                state.next_offset = next_offset;
                state.max_offset = max_offset;
                state.pull_broker_id = suggested_broker;
                self.queues.change_cache(key, |pq| {
                    if messages.is_empty() {
                        pq.advance_empty(next_offset);
                    } else {
                        pq.put(messages);
                    }
                });
                if let Some((error, _)) = corrupt {
                    self.outputs
                        .push_back(Output::Event(Event::CorruptMessages { queue: mq, error }));
                    self.timers
                        .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
                } else {
                    self.pull_next(now, key, epoch);
                }
            }
            PullOutcome::NoMessages {
                next_offset,
                max_offset,
                suggested_broker,
            } => {
                state.next_offset = next_offset;
                state.max_offset = max_offset;
                state.pull_broker_id = suggested_broker;
                // Java's correctTagsOffset: with nothing cached, the offset may move on.
                self.queues
                    .change_cache(key, |pq| pq.advance_empty(next_offset));
                self.pull_next(now, key, epoch);
            }
            PullOutcome::OffsetMoved { next_offset } => {
                self.outputs.push_back(Output::Event(Event::OffsetMoved {
                    queue: mq.clone(),
                    from: offset,
                    to: next_offset,
                }));
                // Java drops the process queue, persists the corrected offset and lets the next
                // rebalance add the queue again; re-creating it here at the corrected offset is
                // the same without waiting for a rebalance or racing the oneway commit.
                let lease = self.queues.remove(key).and_then(|s| s.lease);
                self.store_offset(now, &mq, next_offset);
                let (key, epoch) = self.insert_queue(mq, Some(next_offset), lease);
                self.try_pull(now, key, epoch);
            }
            PullOutcome::BrokerBusy => {
                self.timers.set(
                    now + self.config.broker_flow_control_backoff,
                    Timer::Pull(key, epoch),
                );
            }
            PullOutcome::Failed { code, remark } => {
                if matches!(
                    code,
                    ResponseCode::SUBSCRIPTION_NOT_EXIST | ResponseCode::SUBSCRIPTION_NOT_LATEST
                ) {
                    self.heartbeat(now);
                }
                self.failed(addr, "PULL_MESSAGE", FailureReason::Refused(code, remark));
                self.timers
                    .set(now + self.config.pull_backoff, Timer::Pull(key, epoch));
            }
        }
    }

    fn pull_next(&mut self, now: Instant, key: QueueKey, epoch: Epoch) {
        if self.config.pull_interval.is_zero() {
            self.try_pull(now, key, epoch);
        } else {
            self.timers
                .set(now + self.config.pull_interval, Timer::Pull(key, epoch));
        }
    }

    fn limits_for(&self, key: QueueKey) -> Limits {
        let c = &self.config;
        let topic_limits =
            c.max_cached_messages_per_topic.is_some() || c.max_cached_bytes_per_topic.is_some();
        // Counting a topic's queues is a scan: only pay it when per-topic limits are set.
        let queues_of_topic = if topic_limits {
            let topic = self
                .queues
                .get(key)
                .map(|s| s.mq.topic())
                .unwrap_or_default();
            self.queues.iter().filter(|s| s.mq.topic() == topic).count()
        } else {
            0
        };
        let queue_messages = match c.max_cached_messages_per_topic {
            Some(limit) => (flow::per_queue_share(limit as u64, queues_of_topic) as usize)
                .min(c.max_cached_messages_per_queue),
            None => c.max_cached_messages_per_queue,
        };
        let queue_bytes = match c.max_cached_bytes_per_topic {
            Some(limit) => {
                flow::per_queue_share(limit, queues_of_topic).min(c.max_cached_bytes_per_queue)
            }
            None => c.max_cached_bytes_per_queue,
        };
        Limits {
            queue_messages,
            queue_bytes,
            span: c.max_offset_span,
            total_messages: c.max_cached_messages_total,
            total_bytes: c.max_cached_bytes_total,
        }
    }

    // ----- deliveries -----

    /// Hands ready messages to the user, round robin over queues with ready messages, until
    /// `max_in_flight_deliveries` are out.
    fn dispatch(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running || self.config.consume_mode == ConsumeMode::Poll {
            return;
        }
        let orderly = self.config.consume_mode == ConsumeMode::Orderly;
        let leased = self.needs_lock();
        while self.deliveries.len() < self.config.max_in_flight_deliveries {
            let Some(key) = self.queues.next_turn() else {
                break;
            };
            let Some(state) = self.queues.get(key) else {
                continue;
            };
            // Orderly: one batch of a queue at a time, and only under a valid lease; the queue
            // comes back to the turns when its batch completes or its suspension ends.
            if state.phase == Phase::Revoking
                || (orderly && (state.pq().is_busy() || (leased && !state.lease_valid(now))))
            {
                self.queues.not_ready(key);
                continue;
            }
            let (queue, epoch) = (state.mq.clone(), state.epoch);
            let batch = self.config.consume_batch_size;
            let messages = self
                .queues
                .change_cache(key, |pq| pq.take_ready(batch))
                .unwrap_or_default();
            if messages.is_empty() {
                continue;
            }
            let source = Source::Queue {
                key,
                epoch,
                offsets: messages.iter().map(|m| m.queue_offset()).collect(),
            };
            let id = self.deliveries.start(now, source);
            self.counters.delivered += 1;
            self.outputs.push_back(Output::Deliver(Delivery {
                id,
                queue,
                messages,
            }));
        }
    }

    /// Applies a handler's outcome to the queue it came from.
    fn settle(
        &mut self,
        now: Instant,
        key: QueueKey,
        epoch: Epoch,
        offsets: &[i64],
        outcome: ConsumeOutcome,
    ) {
        let leased = self.needs_lock();
        let Some(state) = self.queues.live(key, epoch) else {
            self.counters.stale_completions += 1;
            return;
        };
        if leased && !state.lease_valid(now) {
            // The lease lapsed while the batch ran: someone else may own the queue now.
            self.counters.stale_completions += 1;
            self.lose_lease(now, key, Duration::ZERO);
            return;
        }
        let consumed = outcome.consumed(offsets.len());
        let (done, failed) = offsets.split_at(consumed);
        self.queues.change_cache(key, |pq| pq.ack(done));
        if !failed.is_empty() {
            self.retry_failed(now, key, epoch, failed, outcome);
        }
        self.after_queue_change(now, key);
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

    // ----- offsets -----

    /// Every `persist_interval`: the offset of every started queue, moved or not, as Java's
    /// `RemoteBrokerOffsetStore.persistAll` sends its whole table. Sending an unchanged offset
    /// again repairs one the broker lost or overwrote: a first commit lost in Apache 4.9's
    /// offset-map race (see `request_commit`), or a later commit overwritten by an earlier
    /// pull's piggy-backed offset that another broker thread handled after it.
    fn persist_offsets(&mut self, now: Instant) {
        let mut due = Vec::new();
        for state in self.queues.iter_mut() {
            let offset = state.commit_point();
            let moved = state.persisted.is_none_or(|p| offset > p);
            let again = state.committed_once && state.persisted == Some(offset);
            if matches!(state.phase, Phase::Idle | Phase::Pulling) && (moved || again) {
                state.persisted = Some(offset);
                state.committed_once = true;
                due.push((state.mq.clone(), offset));
            }
        }
        for (mq, offset) in due {
            self.store_offset(now, &mq, offset);
        }
        self.flush_local_offsets();
    }

    /// Records `offset` as the group's next offset of `mq`: on the broker (clustering, oneway)
    /// or in the local table (broadcasting, handed out at the next `flush_local_offsets`).
    fn store_offset(&mut self, now: Instant, mq: &MessageQueue, offset: i64) {
        if self.config.message_model == MessageModel::Broadcasting {
            if self.local_offsets.insert(mq.clone(), offset) != Some(offset) {
                self.local_dirty = true;
            }
        } else {
            self.commit_oneway(now, mq, offset);
        }
    }

    /// Broadcasting: hands the local offset table to the driver when it changed.
    fn flush_local_offsets(&mut self) {
        if self.local_dirty {
            self.local_dirty = false;
            let table = self
                .local_offsets
                .iter()
                .map(|(mq, offset)| (mq.clone(), *offset))
                .collect();
            self.outputs.push_back(Output::StoreOffsets(table));
        }
    }

    /// Sends a confirmed commit to `addr`, or holds it behind the one in flight there (see
    /// [`Requests::hold_commit`]).
    fn request_commit(&mut self, now: Instant, addr: &str, command: Command, kind: PendingKind) {
        if let Some((command, kind)) = self.requests.hold_commit(addr, command, kind) {
            self.request(now, addr, command, kind);
        }
    }

    /// The commit in flight to `addr` was answered or failed: sends the next one held.
    fn send_next_commit(&mut self, now: Instant, addr: &str) {
        if let Some((command, kind)) = self.requests.next_commit(addr) {
            self.request(now, addr, command, kind);
        }
    }

    fn commit_oneway(&mut self, now: Instant, mq: &MessageQueue, offset: i64) {
        let Some(addr) = self.master_addr(mq.broker_name()) else {
            return;
        };
        let command = self.commit_command(mq, offset);
        self.oneway(now, &addr, command);
    }

    /// `UPDATE_CONSUMER_OFFSET` storing `offset` for the group on `mq`.
    fn commit_command(&self, mq: &MessageQueue, offset: i64) -> Command {
        let header = UpdateConsumerOffsetRequest {
            consumer_group: self.config.group.clone(),
            topic: mq.topic().to_owned(),
            queue_id: mq.queue_id(),
            commit_offset: offset,
        };
        Command::request(RequestCode::UPDATE_CONSUMER_OFFSET, &header)
    }

    // ----- shutdown -----

    fn finish_drain(&mut self, now: Instant) {
        self.lifecycle = Lifecycle::Finishing;
        self.report.abandoned = self.deliveries.abandon_all();
        self.timers.clear();
        let leased = self.needs_lock();
        let queues: Vec<(MessageQueue, i64, bool)> = self
            .queues
            .iter()
            .map(|s| {
                let owned = s.persisted.is_some() && (!leased || s.lease_valid(now));
                (s.mq.clone(), s.commit_point(), owned)
            })
            .collect();
        let broadcasting = self.config.message_model == MessageModel::Broadcasting;
        for (mq, offset, started) in queues {
            if !started {
                continue;
            }
            if broadcasting {
                self.store_offset(now, &mq, offset);
                self.report.committed.push((mq, offset));
                continue;
            }
            let Some(addr) = self.master_addr(mq.broker_name()) else {
                self.report.uncommitted.push(mq);
                continue;
            };
            let command = self.commit_command(&mq, offset);
            self.request_commit(now, &addr, command, PendingKind::FinalCommit(mq, offset));
        }
        let addrs = self.cluster.broker_addrs();
        self.flush_local_offsets();
        for addr in addrs {
            let header = UnregisterClientRequest {
                client_id: self.client_id.clone(),
                producer_group: None,
                consumer_group: Some(self.config.group.clone()),
            };
            self.request(
                now,
                &addr,
                Command::request(RequestCode::UNREGISTER_CLIENT, &header),
                PendingKind::Unregister,
            );
        }
        self.timers
            .set(now + self.config.request_timeout, Timer::ShutdownFinish);
        self.maybe_close(now);
    }

    fn maybe_close(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Finishing {
            return;
        }
        let committing = self
            .requests
            .any(|p| matches!(p.kind, PendingKind::FinalCommit(..)))
            || self.requests.holds_commits();
        // Orderly: unlock only once the final offsets are stored, so the next owner of a queue
        // cannot lock it and read an offset that is about to move.
        if !committing && !self.unlock_sent {
            self.unlock_sent = true;
            self.unlock_all(now);
        }
        let waiting = self.requests.any(|p| {
            matches!(
                p.kind,
                PendingKind::FinalCommit(..) | PendingKind::Unregister | PendingKind::Unlock
            )
        });
        if !waiting {
            self.close();
        }
    }

    fn close(&mut self) {
        if self.lifecycle == Lifecycle::Closed {
            return;
        }
        // Final commits never answered, or never sent, count as not committed.
        let unanswered = self
            .requests
            .clear()
            .into_iter()
            .filter_map(|kind| match kind {
                PendingKind::FinalCommit(mq, _) => Some(mq),
                _ => None,
            });
        self.report.uncommitted.extend(unanswered);
        self.timers.clear();
        self.lifecycle = Lifecycle::Closed;
        for conn in self.conns.ids() {
            self.outputs.push_back(Output::Close { conn });
        }
        self.conns.clear();
        self.conns.to_open.clear();
        let mut report = std::mem::take(&mut self.report);
        report.committed.sort();
        report.uncommitted.sort();
        self.outputs.push_back(Output::Event(Event::Closed(report)));
    }

    // ----- helpers -----

    fn after_input(&mut self, now: Instant) {
        if self.lifecycle == Lifecycle::Draining && self.drained() {
            self.finish_drain(now);
        }
        self.dispatch(now);
    }

    /// Whether a draining consumer has nothing left to wait for: no delivery in flight and no
    /// failed message still on its way back to the broker. A message being sent back holds its
    /// queue's commit point below it; committing before its answer would hand it to the next
    /// owner from the topic as well as from `%RETRY%` (Java's consume threads send back
    /// synchronously, and its shutdown waits for them, before the last offsets are persisted).
    fn drained(&self) -> bool {
        self.deliveries.is_empty()
            && !self
                .requests
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

/// A response that says it succeeded, or the refusal it carries.
fn success(response: Command) -> Result<Command, FailureReason> {
    match response.response_code() {
        ResponseCode::SUCCESS => Ok(response),
        code => Err(FailureReason::Refused(code, response.remark)),
    }
}

/// The offset a successful response's header `H` carries; a negative one is malformed.
fn offset_of<H: proto::CommandHeader>(
    response: Command,
    offset: impl FnOnce(&H) -> i64,
) -> Result<i64, FailureReason> {
    let header = success(response)?
        .header::<H>()
        .map_err(|e| FailureReason::Malformed(e.to_string()))?;
    match offset(&header) {
        offset if offset >= 0 => Ok(offset),
        offset => Err(FailureReason::Malformed(format!("offset {offset}"))),
    }
}

/// A topic's route from the name server's answer; `None` for a topic it does not know.
fn route_of(response: Command) -> Result<Option<TopicRouteData>, FailureReason> {
    if response.response_code() == ResponseCode::TOPIC_NOT_EXIST {
        return Ok(None);
    }
    TopicRouteData::decode(&success(response)?.body)
        .map(Some)
        .map_err(|e| FailureReason::Malformed(e.to_string()))
}
