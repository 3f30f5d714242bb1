//! [`PopConsumer`]: pop consumption (RocketMQ 5.x over remoting) as a sans-IO state machine,
//! driven like [`Consumer`](crate::Consumer): `handle_*` inputs with the time, `poll_output`
//! and `poll_timeout` outputs.
//!
//! The broker, not the client, decides who reads what: after `SET_MESSAGE_REQUEST_MODE` to POP
//! and a heartbeat, `QUERY_ASSIGNMENT` names the queues this member pops (queue id `-1`: all of
//! a broker's, shared with the other members; `QueryAssignmentProcessor.allocate4Pop`). A pop
//! makes the messages invisible to the group for `invisible_time`; each carries a receipt
//! handle, and the consumer
//!
//! - acks what its handler consumed (`ACK_MESSAGE`, or `BATCH_ACK_MESSAGE` for several messages
//!   of one broker);
//! - renews the invisibility of deliveries still running `renew_ahead` before it ends
//!   (`CHANGE_MESSAGE_INVISIBLETIME`), so a slow handler keeps its message;
//! - makes what failed invisible for the retry backoff (Java's `popDelayLevel`), and sends what
//!   failed `max_reconsume_times` times to `%DLQ%<group>` (`CONSUMER_SEND_MSG_BACK` with delay
//!   level -1, as the 5.x proxy does) before acking it;
//! - stops popping while it holds `max_cached_messages` or `max_cached_bytes`.
//!
//! A message this consumer never settles (its process died, the ack was lost) comes back to the
//! group once its invisibility ends, raised reconsume count and all: the broker revives it into
//! the pop retry topic (`PopReviveService`). So delivery is at-least-once, whatever happens here.
//!
//! Answers are read as Java's `MQClientAPIImpl.processPopResponse` and
//! `DefaultMQPushConsumerImpl.popMessage` read them: `SUCCESS` brings messages;
//! `POLLING_TIMEOUT` and `PULL_NOT_FOUND` mean nothing came in the long poll, pop again at once;
//! `POLLING_FULL` and every other refusal wait `exception_backoff`.
//!
//! Internally: `held` keeps each popped message until it is settled; this file holds the
//! inputs, outputs, timers and the request layer.

mod config;
mod held;
mod orderly;
mod output;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use proto::body::{
    BatchAck, BatchAckMessageRequestBody, ConsumerData, HeartbeatData, MessageRequestMode,
    QueryAssignmentRequestBody, QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
    SubscriptionData, TopicRouteData,
};
use proto::headers::receipt::{PoppedAt, receipt_handles};
use proto::headers::{
    AckMessageRequest, ChangeInvisibleTimeRequest, ChangeInvisibleTimeResponse,
    ConsumerSendMsgBackRequest, GetRouteInfoRequest, HeartbeatRequest, PopMessageRequest,
    PopMessageResponse, ReceiptHandle, UnregisterClientRequest,
};
use proto::message::{DecodeOptions, decode_messages, property};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use crate::config::ConfigError;
use crate::conn::{Connections, Route};
use crate::consumer::cluster::ClusterView;
use crate::namespace::Namespace;
use crate::output::{ConnId, ConsumeOutcome, FailureReason, RequestId};
use crate::requests::InFlight;
use crate::signer::Signer;
use crate::timer::TimerQueue;

pub use config::{PopConfig, PopMode};
use held::{Held, HeldId, HeldMessage, Settle, Stage};
use orderly::{OrderKey, OrderedQueues, order_count};
pub use output::{
    PopDelivery, PopDeliveryId, PopEvent, PopMessage, PopOutput, PopShutdownReport, PopStats,
    Receipt,
};

/// `AllocateMessageQueueAveragely.getName()`: the strategy the broker allocates with.
const STRATEGY: &str = "AVG";

/// A retried settle (after a timeout or a lost connection) waits this long.
const SETTLE_RETRY: Duration = Duration::from_secs(1);

/// Settle attempts before giving up on a message (its invisibility ends anyway).
const MAX_SETTLE_ATTEMPTS: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PopTimer {
    RouteRefresh,
    Heartbeat,
    Rebalance,
    /// The poller with this sequence number may pop again.
    Poll(u64),
    /// Renew the held message's invisibility.
    Renew(HeldId),
    /// Try a failed settle again.
    Resettle(HeldId),
    Request(u64, i32),
    Connect(ConnId),
    ShutdownDrain,
    ShutdownFinish,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Running,
    Draining,
    Finishing,
    Closed,
}

/// One assigned queue's pop loop (push mode).
#[derive(Debug)]
struct Poller {
    seq: u64,
    topic: String,
    /// A pop is out; the next waits for its answer.
    in_flight: bool,
    /// Waiting for a timer (backoff) before popping again.
    waiting: bool,
}

#[derive(Debug)]
enum Kind {
    Route(String),
    Heartbeat,
    SetMode,
    Assignment(String),
    Pop {
        queue: MessageQueue,
        topic: String,
        poller: Option<u64>,
        receive: Option<RequestId>,
    },
    Ack(Vec<HeldId>),
    Retry(HeldId),
    Renew(HeldId),
    DeadLetter(HeldId),
    Release(HeldId),
    AppAck(RequestId),
    AppChange(RequestId, String, ReceiptHandle),
    Unregister,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Self::Route(_) => "GET_ROUTEINFO_BY_TOPIC",
            Self::Heartbeat => "HEART_BEAT",
            Self::SetMode => "SET_MESSAGE_REQUEST_MODE",
            Self::Assignment(_) => "QUERY_ASSIGNMENT",
            Self::Pop { .. } => "POP_MESSAGE",
            Self::Ack(ids) if ids.len() > 1 => "BATCH_ACK_MESSAGE",
            Self::Ack(_) | Self::AppAck(_) => "ACK_MESSAGE",
            Self::Retry(_) | Self::Renew(_) | Self::Release(_) | Self::AppChange(..) => {
                "CHANGE_MESSAGE_INVISIBLETIME"
            }
            Self::DeadLetter(_) => "CONSUMER_SEND_MSG_BACK",
            Self::Unregister => "UNREGISTER_CLIENT",
        }
    }
}

type Pending = crate::requests::Pending<Kind>;

/// A simple-mode receive not sent yet (no queue assigned so far).
#[derive(Debug)]
struct WaitingReceive {
    request: RequestId,
    max: u32,
    invisible: Duration,
}

/// The pop consumer's state machine (see the module docs).
#[derive(Debug)]
pub struct PopConsumer {
    config: PopConfig,
    client_id: String,
    start: Instant,
    start_unix_ms: i64,
    lifecycle: Lifecycle,
    /// Wire topic → subscription.
    subscriptions: BTreeMap<String, SubscriptionData>,
    cluster: ClusterView,
    conns: Connections,
    timers: TimerQueue<PopTimer>,
    requests: InFlight<Kind>,
    /// Wire topic → the queues the brokers assigned.
    assignment: BTreeMap<String, BTreeSet<MessageQueue>>,
    /// Push mode: a poller per assigned queue.
    pollers: BTreeMap<MessageQueue, Poller>,
    next_poller: u64,
    /// Which broker answers the next assignment query; moves on when one fails.
    assignment_turn: usize,
    /// Brokers (by address) told to pop the topic, `(addr, topic)`.
    mode_set: BTreeSet<(String, String)>,
    held: Held,
    /// Acks to send after this input, grouped per broker then.
    acks: Vec<HeldId>,
    next_delivery: u64,
    deliveries: BTreeSet<PopDeliveryId>,
    /// Orderly: the queues whose messages are at the handler.
    ordered: OrderedQueues,
    /// Simple mode: receives waiting for an assignment, and the round robin over queues.
    receives: VecDeque<WaitingReceive>,
    receive_turn: usize,
    next_request: u64,
    outputs: VecDeque<PopOutput>,
    signer: Signer,
    namespace: Option<Namespace>,
    stats: PopStats,
    report: PopShutdownReport,
}

impl PopConsumer {
    /// A consumer for `config`, known to brokers as `client_id`; `unix_ms` is the wall clock
    /// at `now` (pops carry it as `bornTime`, and brokers refuse pops born too long ago).
    pub fn new(
        config: PopConfig,
        client_id: impl Into<String>,
        now: Instant,
        unix_ms: i64,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut config = config;
        let namespace = config.namespace.clone().map(Namespace::new).transpose()?;
        if let Some(ns) = &namespace {
            config.group = ns.wrap(&config.group).into_owned();
        }
        Ok(Self {
            cluster: ClusterView::new(config.name_servers.clone(), 0),
            config,
            client_id: client_id.into(),
            start: now,
            start_unix_ms: unix_ms,
            lifecycle: Lifecycle::Running,
            subscriptions: BTreeMap::new(),
            conns: Connections::default(),
            timers: TimerQueue::default(),
            requests: InFlight::default(),
            assignment: BTreeMap::new(),
            pollers: BTreeMap::new(),
            next_poller: 0,
            assignment_turn: 0,
            mode_set: BTreeSet::new(),
            held: Held::default(),
            acks: Vec::new(),
            next_delivery: 0,
            deliveries: BTreeSet::new(),
            ordered: OrderedQueues::default(),
            receives: VecDeque::new(),
            receive_turn: 0,
            next_request: 0,
            outputs: VecDeque::new(),
            signer: Signer::new(None, proto::acl::SignatureAlgorithm::default()),
            namespace,
            stats: PopStats::default(),
            report: PopShutdownReport::default(),
        })
    }

    /// Subscribes to `topic` with a tag expression (`*`, `TagA || TagB`).
    pub fn subscribe(
        &mut self,
        now: Instant,
        topic: &str,
        expression: &str,
    ) -> Result<(), ConfigError> {
        if topic.is_empty() {
            return Err(ConfigError("empty topic".into()));
        }
        let wire = self.wire(topic);
        let sub_version = self.unix_ms(now);
        self.subscriptions.insert(
            wire.clone(),
            SubscriptionData::new(&wire, expression, sub_version),
        );
        self.timers.reset(now, PopTimer::RouteRefresh);
        Ok(())
    }

    /// Signs every request from now on with `credentials` (ACL).
    pub fn set_credentials(&mut self, credentials: Option<proto::acl::Credentials>) {
        self.signer.set_credentials(credentials);
    }

    // ----- inputs -----

    /// The connection `conn` opened.
    pub fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        for command in self.conns.connected(now, conn) {
            self.outputs.push_back(PopOutput::Send { conn, command });
        }
        // Brokers know members by connection: heartbeat on a new one at once, so pops and
        // assignment queries on it find this member.
        if let Some(addr) = self.conns.addr(conn).map(str::to_owned)
            && self.cluster.is_broker(&addr)
            && !self
                .requests
                .any(|p| p.conn == conn && matches!(p.kind, Kind::Heartbeat))
        {
            self.heartbeat_to(now, [addr]);
        }
        self.after_input(now);
    }

    /// The connection `conn` failed to open, or was lost.
    pub fn handle_disconnected(&mut self, now: Instant, conn: ConnId) {
        self.connection_lost(now, conn);
        self.after_input(now);
    }

    /// A command arrived on `conn`.
    pub fn handle_command(&mut self, now: Instant, conn: ConnId, command: Command) {
        if self.lifecycle == Lifecycle::Closed {
            return;
        }
        if command.is_response() {
            if let Some(pending) = self.requests.answered(conn, command.opaque) {
                self.conns.answered(now, conn);
                self.timers
                    .remove(pending.deadline, PopTimer::Request(conn.0, command.opaque));
                self.answer(now, pending, Ok(command));
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

    /// Push mode: the handler finished `delivery`. `Success` acks; `ReconsumeLater` makes the
    /// messages invisible for the retry backoff (or dead-letters those at
    /// `max_reconsume_times`); `Retry { consumed, delay_level }` acks the first `consumed` and
    /// retries the rest (a negative level dead-letters them now); `Suspend(d)` makes them
    /// invisible for `d` without counting a failure on this side.
    pub fn complete(&mut self, now: Instant, delivery: PopDeliveryId, outcome: ConsumeOutcome) {
        if !self.deliveries.remove(&delivery) {
            return;
        }
        if self.lifecycle == Lifecycle::Draining {
            self.report.drained += 1;
        }
        let ids = self.held.of_delivery(delivery);
        let consumed = outcome.consumed(ids.len());
        let queue = self.ordered.finish(delivery);
        let mut retry_after = None;
        for (index, id) in ids.into_iter().enumerate() {
            let Some(held) = self.held.get(id) else {
                continue;
            };
            let settle = if index < consumed {
                Settle::Ack
            } else {
                match outcome {
                    ConsumeOutcome::Suspend(pause) => Settle::Retry(pause),
                    ConsumeOutcome::Retry { delay_level, .. } if delay_level < 0 => {
                        Settle::DeadLetter
                    }
                    _ if held.reconsume_times >= self.config.max_reconsume_times => {
                        Settle::DeadLetter
                    }
                    ConsumeOutcome::Retry { delay_level, .. } => {
                        Settle::Retry(self.config.retry_delay(held.reconsume_times, delay_level))
                    }
                    _ => Settle::Retry(self.config.retry_delay(held.reconsume_times, 0)),
                }
            };
            if let Settle::Retry(delay) = settle {
                retry_after.get_or_insert(delay);
            }
            self.settle(now, id, settle);
        }
        if let (Some(queue), Some(delay)) = (queue, retry_after) {
            self.hold_back_queue(now, &queue, delay);
        }
        self.after_input(now);
    }

    /// Simple mode: pops up to `max` (1..=32) messages invisible for `invisible`; the answer is
    /// one [`PopEvent::Received`] with the returned id, after at most the long poll.
    pub fn receive(&mut self, now: Instant, max: u32, invisible: Duration) -> RequestId {
        let request = self.next_request_id();
        self.receives.push_back(WaitingReceive {
            request,
            max: max.clamp(1, 32),
            invisible: invisible.max(Duration::from_secs(1)),
        });
        self.after_input(now);
        request
    }

    /// Simple mode: acks the message `receipt` names; answered by [`PopEvent::Acked`].
    pub fn ack(&mut self, now: Instant, receipt: &Receipt) -> RequestId {
        let request = self.next_request_id();
        let topic = self.wire(&receipt.topic);
        self.send_ack(now, &topic, &receipt.handle, Kind::AppAck(request));
        self.after_input(now);
        request
    }

    /// Simple mode: makes the message invisible for `invisible` from now (renewal, or a
    /// negative ack with a delay); answered by [`PopEvent::InvisibilityChanged`] with the new
    /// receipt.
    pub fn change_invisible_duration(
        &mut self,
        now: Instant,
        receipt: &Receipt,
        invisible: Duration,
    ) -> RequestId {
        let request = self.next_request_id();
        let topic = self.wire(&receipt.topic);
        let kind = Kind::AppChange(request, topic.clone(), receipt.handle.clone());
        self.send_change(now, &topic, &receipt.handle, invisible, kind);
        self.after_input(now);
        request
    }

    /// Starts a graceful shutdown: no more pops; popped messages not yet delivered are made
    /// visible again; running handlers get `shutdown_drain_timeout` to finish and have their
    /// messages acked; then the client unregisters and [`PopEvent::Closed`] reports.
    pub fn shutdown(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        self.lifecycle = Lifecycle::Draining;
        self.pollers.clear();
        for waiting in std::mem::take(&mut self.receives) {
            self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                request: waiting.request,
                messages: Ok(Vec::new()),
            }));
        }
        for id in self.held.drain_ready() {
            self.release(now, id);
        }
        self.timers.set(
            now + self.config.shutdown_drain_timeout,
            PopTimer::ShutdownDrain,
        );
        self.after_input(now);
    }

    // ----- outputs -----

    /// The next piece of work for the driver.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<PopOutput> {
        if let Some((conn, addr)) = self.conns.to_open.pop_front() {
            return Some(PopOutput::Connect { conn, addr });
        }
        let mut output = self.outputs.pop_front()?;
        match &mut output {
            PopOutput::Send { command, .. } => self.signer.sign(command),
            PopOutput::Deliver(delivery) => {
                for m in &mut delivery.messages {
                    self.outward(m);
                }
            }
            PopOutput::Event(PopEvent::Received {
                messages: Ok(messages),
                ..
            }) => {
                for m in messages {
                    self.outward(m);
                }
            }
            PopOutput::Event(PopEvent::InvisibilityChanged {
                receipt: Ok(receipt),
                ..
            })
            | PopOutput::Event(PopEvent::SettleFailed { receipt, .. })
            | PopOutput::Event(PopEvent::DeadLettered { receipt }) => {
                if let Some(ns) = &self.namespace {
                    receipt.topic = ns.unwrap(&receipt.topic).into_owned();
                }
            }
            _ => {}
        }
        Some(output)
    }

    /// When `handle_timeout` should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next().map(|(at, _)| at)
    }

    // ----- getters -----

    /// The counters, and what is held now.
    pub fn stats(&self) -> PopStats {
        PopStats {
            held_messages: self.held.len(),
            held_bytes: self.held.bytes(),
            ..self.stats.clone()
        }
    }

    /// The queues popped now, by topic (application names).
    pub fn assignment(&self) -> Vec<MessageQueue> {
        self.assignment
            .values()
            .flatten()
            .map(|mq| match &self.namespace {
                Some(ns) => ns.unwrap_queue(mq),
                None => mq.clone(),
            })
            .collect()
    }

    /// Whether shutdown finished.
    pub fn is_closed(&self) -> bool {
        self.lifecycle == Lifecycle::Closed
    }

    /// The configuration (the group wrapped in the namespace, if any).
    pub fn config(&self) -> &PopConfig {
        &self.config
    }

    /// The client id brokers know this consumer by.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    // ----- timers -----

    fn fire(&mut self, now: Instant, timer: PopTimer) {
        match timer {
            PopTimer::RouteRefresh => {
                self.refresh_routes(now);
                self.timers.reset(
                    now + self.config.route_refresh_interval,
                    PopTimer::RouteRefresh,
                );
            }
            PopTimer::Heartbeat => {
                let addrs = self.cluster.broker_addrs();
                self.heartbeat_to(now, addrs);
                self.timers
                    .reset(now + self.config.heartbeat_interval, PopTimer::Heartbeat);
            }
            PopTimer::Rebalance => {
                self.query_assignments(now);
                self.timers
                    .reset(now + self.config.rebalance_interval, PopTimer::Rebalance);
            }
            PopTimer::Poll(seq) => {
                if let Some(poller) = self.pollers.values_mut().find(|p| p.seq == seq) {
                    poller.waiting = false;
                }
            }
            PopTimer::Renew(id) => self.renew(now, id),
            PopTimer::Resettle(id) => {
                if let Some(held) = self.held.get(id)
                    && held.visible_until > now
                {
                    let settle = held.settle_after_renewal.unwrap_or(Settle::Ack);
                    if let Some(h) = self.held.get_mut(id) {
                        h.settle_after_renewal = None;
                    }
                    self.settle(now, id, settle);
                } else if let Some(held) = self.held.remove(id) {
                    self.settle_failed(&held, "ACK_MESSAGE", FailureReason::Timeout);
                }
            }
            PopTimer::Request(conn, opaque) => {
                let conn = ConnId(conn);
                if let Some(pending) = self.requests.expired(opaque, now) {
                    let timeouts = self.conns.timed_out(conn);
                    self.answer(now, pending, Err(FailureReason::Timeout));
                    // A peer that keeps the socket open but stopped answering is not waited
                    // on for ever: the connection is replaced, its requests fail at once.
                    if timeouts >= self.config.close_after_timeouts {
                        self.outputs.push_back(PopOutput::Close { conn });
                        self.connection_lost(now, conn);
                    }
                }
            }
            PopTimer::Connect(conn) => {
                if self.conns.is_opening(conn) {
                    self.outputs.push_back(PopOutput::Close { conn });
                    self.connection_lost(now, conn);
                }
            }
            PopTimer::ShutdownDrain => {
                if self.lifecycle == Lifecycle::Draining {
                    self.finish_drain(now);
                }
            }
            PopTimer::ShutdownFinish => self.close(),
        }
    }

    // ----- routes, heartbeats, assignment -----

    fn refresh_routes(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let Some(namesrv) = self.cluster.name_server().map(str::to_owned) else {
            return;
        };
        for topic in self.subscriptions.keys().cloned().collect::<Vec<_>>() {
            let header = GetRouteInfoRequest {
                topic: topic.clone(),
                accept_standard_json_only: Some(true),
            };
            let command = Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header);
            self.request(now, &namesrv, command, Kind::Route(topic));
        }
    }

    fn on_route(&mut self, now: Instant, topic: &str, route: TopicRouteData) {
        let change = self.cluster.update_route(topic, route);
        if change.new_broker {
            let addrs = self.cluster.broker_addrs();
            self.heartbeat_to(now, addrs);
            self.timers
                .reset(now + self.config.heartbeat_interval, PopTimer::Heartbeat);
        }
        if self.config.set_request_mode {
            self.set_request_mode(now, topic);
        }
        // Query once a broker knows this member: the heartbeat answer brings the round forward
        // (a broker without our heartbeat answers with no assignment).
        if !change.new_broker {
            self.timers.reset_earlier(now, PopTimer::Rebalance);
        }
    }

    fn masters_of(&self, topic: &str) -> Vec<String> {
        let Some(route) = self.cluster.route(topic) else {
            return Vec::new();
        };
        let names: BTreeSet<&str> = route
            .broker_datas
            .iter()
            .map(|b| b.broker_name.as_str())
            .collect();
        names
            .into_iter()
            .filter_map(|name| self.cluster.master_addr(name))
            .collect()
    }

    fn set_request_mode(&mut self, now: Instant, topic: &str) {
        for addr in self.masters_of(topic) {
            if !self.mode_set.insert((addr.clone(), topic.to_owned())) {
                continue;
            }
            let body = SetMessageRequestModeRequestBody {
                topic: topic.to_owned(),
                consumer_group: self.config.group.clone(),
                mode: MessageRequestMode::Pop,
                pop_share_queue_num: self.config.pop_share_queue_num,
            };
            let command = Command::request_with_fields(
                RequestCode::SET_MESSAGE_REQUEST_MODE,
                proto::ExtFields::new(),
            )
            .with_body(body.encode());
            self.request(now, &addr, command, Kind::SetMode);
        }
    }

    fn heartbeat_to(&mut self, now: Instant, addrs: impl IntoIterator<Item = String>) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let data = HeartbeatData {
            client_id: self.client_id.clone(),
            consumer_data_set: vec![ConsumerData {
                group_name: self.config.group.clone(),
                // Java's push consumer in pop mode registers as a push consumer.
                consume_type: proto::body::ConsumeType::Passively,
                message_model: proto::body::MessageModel::Clustering,
                subscription_data_set: self.subscriptions.values().cloned().collect(),
                ..ConsumerData::default()
            }],
            ..HeartbeatData::default()
        };
        let body = data.encode();
        for addr in addrs {
            let command = Command::request(RequestCode::HEART_BEAT, &HeartbeatRequest {})
                .with_body(body.clone());
            self.request(now, &addr, command, Kind::Heartbeat);
        }
    }

    /// One `QUERY_ASSIGNMENT` per topic: the broker answers for every broker of the topic
    /// (`QueryAssignmentProcessor.doLoadBalance` reads the whole route), so one is enough; a
    /// failure moves to the next broker at the next round.
    fn query_assignments(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        for topic in self.subscriptions.keys().cloned().collect::<Vec<_>>() {
            let masters = self.masters_of(&topic);
            if masters.is_empty() {
                continue;
            }
            let addr = masters[self.assignment_turn % masters.len()].clone();
            let body = QueryAssignmentRequestBody {
                topic: topic.clone(),
                consumer_group: self.config.group.clone(),
                client_id: self.client_id.clone(),
                strategy_name: STRATEGY.into(),
                message_model: proto::body::MessageModel::Clustering,
            };
            let command = Command::request_with_fields(
                RequestCode::QUERY_ASSIGNMENT,
                proto::ExtFields::new(),
            )
            .with_body(body.encode());
            self.request(now, &addr, command, Kind::Assignment(topic));
        }
    }

    fn apply_assignment(&mut self, topic: &str, queues: BTreeSet<MessageQueue>) {
        let old = self.assignment.get(topic).cloned().unwrap_or_default();
        if old == queues {
            return;
        }
        if self.config.mode == PopMode::Push {
            self.pollers
                .retain(|mq, _| mq.topic() != topic || queues.contains(mq));
            for mq in &queues {
                if !self.pollers.contains_key(mq) {
                    self.next_poller += 1;
                    self.pollers.insert(
                        mq.clone(),
                        Poller {
                            seq: self.next_poller,
                            topic: topic.to_owned(),
                            in_flight: false,
                            waiting: false,
                        },
                    );
                }
            }
        }
        let outward: Vec<MessageQueue> = queues
            .iter()
            .map(|mq| match &self.namespace {
                Some(ns) => ns.unwrap_queue(mq),
                None => mq.clone(),
            })
            .collect();
        self.outputs.push_back(PopOutput::Event(PopEvent::Assigned {
            topic: self.outward_name(topic),
            queues: outward,
        }));
        self.assignment.insert(topic.to_owned(), queues);
    }

    // ----- popping -----

    /// Sends the pops that may go now: push mode, one per idle poller while the budget allows;
    /// simple mode, the waiting receives, round robin over the assigned queues.
    fn pop_ready(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let ready: Vec<(MessageQueue, u64, String)> = self
            .pollers
            .iter()
            .filter(|(_, p)| !p.in_flight && !p.waiting)
            .map(|(mq, p)| (mq.clone(), p.seq, p.topic.clone()))
            .collect();
        for (mq, seq, topic) in ready {
            let batch = self.config.batch_size as usize;
            if self.held.len() + batch > self.config.max_cached_messages
                || self.held.bytes() >= self.config.max_cached_bytes
            {
                break;
            }
            if let Some(poller) = self.pollers.get_mut(&mq) {
                poller.in_flight = true;
            }
            let invisible = self.config.invisible_time;
            self.send_pop(
                now,
                &mq,
                &topic,
                self.config.batch_size,
                invisible,
                Some(seq),
                None,
            );
        }
        while !self.receives.is_empty() {
            let queues: Vec<(MessageQueue, String)> = self
                .assignment
                .iter()
                .flat_map(|(t, qs)| qs.iter().map(move |q| (q.clone(), t.clone())))
                .collect();
            if queues.is_empty() {
                break;
            }
            let Some(waiting) = self.receives.pop_front() else {
                break;
            };
            self.receive_turn = self.receive_turn.wrapping_add(1);
            let (mq, topic) = queues[self.receive_turn % queues.len()].clone();
            self.send_pop(
                now,
                &mq,
                &topic,
                waiting.max,
                waiting.invisible,
                None,
                Some(waiting.request),
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn send_pop(
        &mut self,
        now: Instant,
        mq: &MessageQueue,
        topic: &str,
        max: u32,
        invisible: Duration,
        poller: Option<u64>,
        receive: Option<RequestId>,
    ) {
        let Some(addr) = self.cluster.master_addr(mq.broker_name()) else {
            self.pop_failed(now, poller, receive, FailureReason::Disconnected);
            return;
        };
        let subscription = self.subscriptions.get(topic);
        let header = PopMessageRequest {
            consumer_group: self.config.group.clone(),
            topic: topic.to_owned(),
            queue_id: mq.queue_id(),
            max_msg_nums: max as i32,
            invisible_time: invisible.as_millis() as i64,
            poll_time: self.config.poll_time.as_millis() as i64,
            born_time: self.unix_ms(now),
            init_mode: 0,
            exp_type: subscription.map(|s| s.expression_type.name().to_owned()),
            exp: subscription.map(|s| s.sub_string.clone()),
            order: Some(self.config.orderly),
            attempt_id: None,
            broker_name: Some(mq.broker_name().to_owned()),
        };
        self.stats.pops += 1;
        let command = Command::request(RequestCode::POP_MESSAGE, &header);
        let kind = Kind::Pop {
            queue: mq.clone(),
            topic: topic.to_owned(),
            poller,
            receive,
        };
        self.request(now, &addr, command, kind);
    }

    fn pop_failed(
        &mut self,
        now: Instant,
        poller: Option<u64>,
        receive: Option<RequestId>,
        reason: FailureReason,
    ) {
        if let Some(request) = receive {
            self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                request,
                messages: Err(reason),
            }));
        }
        if let Some(seq) = poller {
            self.poll_later(now, seq, self.config.exception_backoff);
        }
    }

    fn poll_later(&mut self, now: Instant, seq: u64, after: Duration) {
        if let Some(poller) = self.pollers.values_mut().find(|p| p.seq == seq) {
            poller.in_flight = false;
            if !after.is_zero() {
                poller.waiting = true;
                self.timers.set(now + after, PopTimer::Poll(seq));
            }
        }
    }

    /// A `POP_MESSAGE` answer.
    #[allow(clippy::too_many_arguments)]
    fn on_pop(
        &mut self,
        now: Instant,
        sent: Instant,
        queue: MessageQueue,
        topic: String,
        poller: Option<u64>,
        receive: Option<RequestId>,
        response: Command,
    ) {
        self.stats.pop_time += now.saturating_duration_since(sent);
        let code = response.response_code();
        match code {
            ResponseCode::SUCCESS => {}
            // Nothing within the long poll: pop again at once (`DefaultMQPushConsumerImpl`
            // treats NO_NEW_MSG and POLLING_NOT_FOUND alike).
            ResponseCode::POLLING_TIMEOUT | ResponseCode::PULL_NOT_FOUND => {
                if let Some(request) = receive {
                    self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                        request,
                        messages: Ok(Vec::new()),
                    }));
                }
                if let Some(seq) = poller {
                    self.poll_later(now, seq, Duration::ZERO);
                }
                return;
            }
            _ => {
                let reason = FailureReason::Refused(code, response.remark.clone());
                self.report_failure(&queue, "POP_MESSAGE", &reason);
                self.pop_failed(now, poller, receive, reason);
                return;
            }
        }
        let header = match response.header::<PopMessageResponse>() {
            Ok(header) => header,
            Err(e) => {
                // Nothing to ack them with: the messages come back after their invisibility.
                let reason = FailureReason::Malformed(e.to_string());
                self.report_failure(&queue, "POP_MESSAGE", &reason);
                self.pop_failed(now, poller, receive, reason);
                return;
            }
        };
        let batch = decode_messages(&response.body, &DecodeOptions::default());
        if let Some(error) = &batch.error {
            // What decoded is still handed out; the rest comes back after its invisibility.
            self.report_failure(
                &queue,
                "POP_MESSAGE",
                &FailureReason::Malformed(error.to_string()),
            );
        }
        let mut messages = batch.messages;
        // A 5.x broker re-encodes a redelivery from the pop retry topic under the subscribed
        // topic and puts its handle in `POP_CK` (`PopMessageProcessor.popMsgFromQueue`, unless
        // `popResponseReturnActualRetryTopic`): that handle wins, and the offset info only
        // names the others (`MQClientAPIImpl.processPopResponse` reads it for messages without
        // `POP_CK`).
        let own: Vec<Option<ReceiptHandle>> = messages
            .iter()
            .map(|m| {
                m.property(property::POP_CK)
                    .and_then(|text| ReceiptHandle::parse(text).ok())
            })
            .collect();
        let at: Vec<PoppedAt<'_>> = messages
            .iter()
            .zip(&own)
            .filter(|(_, own)| own.is_none())
            .map(|(m, _)| PoppedAt {
                topic: m.topic(),
                queue_id: m.queue_id(),
                queue_offset: m.queue_offset(),
            })
            .collect();
        let computed = receipt_handles(
            queue.broker_name(),
            header.pop_time,
            header.invisible_time,
            header.revive_qid,
            header.start_offset_info.as_deref(),
            header.msg_offset_info.as_deref(),
            &at,
        );
        drop(at);
        let computed = match computed {
            Ok(handles) => handles,
            Err(e) => {
                // Nothing to ack them with: the messages come back after their invisibility.
                let reason = FailureReason::Malformed(e.to_string());
                self.report_failure(&queue, "POP_MESSAGE", &reason);
                self.pop_failed(now, poller, receive, reason);
                return;
            }
        };
        let mut computed = computed.into_iter();
        let mut handles: Vec<ReceiptHandle> = Vec::with_capacity(messages.len());
        for own in own {
            match own.or_else(|| computed.next()) {
                Some(handle) => handles.push(handle),
                None => break,
            }
        }
        // `receipt_handles` answers one handle per message it was given, so every message has
        // one; a shorter list would drop the tail rather than pair a wrong handle.
        messages.truncate(handles.len());
        for m in &mut messages {
            // Redeliveries come from the pop retry topic; the handle keeps that, the
            // application sees the subscribed topic (`processPopResponse`).
            if m.topic() != topic {
                m.set_topic(topic.clone());
            }
        }
        if self.config.orderly
            && let Some(info) = header.order_count_info.as_deref()
        {
            // Orderly redeliveries stay in the topic; the broker counts them apart
            // (`MQClientAPIImpl.processPopResponse` sets the reconsume count from this).
            match proto::headers::receipt::parse_order_count_info(info) {
                Ok(counts) => {
                    for (m, handle) in messages.iter_mut().zip(&handles) {
                        if let Some(count) = order_count(&counts, handle).filter(|c| *c > 0) {
                            m.set_reconsume_times(count);
                        }
                    }
                }
                Err(e) => self.report_failure(
                    &queue,
                    "POP_MESSAGE",
                    &FailureReason::Malformed(e.to_string()),
                ),
            }
        }
        self.stats.popped += messages.len() as u64;
        let visible_until = self.visible_until(sent, now, header.pop_time, header.invisible_time);
        match receive {
            Some(request) => {
                let popped = messages
                    .into_iter()
                    .zip(handles)
                    .map(|(message, handle)| PopMessage {
                        message,
                        receipt: Receipt {
                            topic: topic.clone(),
                            handle,
                        },
                    })
                    .collect();
                self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                    request,
                    messages: Ok(popped),
                }));
            }
            None => {
                for (message, handle) in messages.into_iter().zip(handles) {
                    let held = HeldMessage {
                        topic: topic.clone(),
                        handle,
                        visible_until,
                        bytes: message.body().len(),
                        reconsume_times: message.reconsume_times(),
                        commit_log_offset: message.commit_log_offset(),
                        msg_id: message.msg_id(),
                        stage: Stage::Ready(Box::new(message)),
                        renewing: false,
                        settle_after_renewal: None,
                        attempts: 0,
                    };
                    let id = self.held.insert(held);
                    if self.lifecycle != Lifecycle::Running {
                        // Popped while shutting down: let the group have it at once.
                        if let Some(h) = self.held.get_mut(id) {
                            h.stage = Stage::Settling;
                        }
                        self.release(now, id);
                    }
                }
                if let Some(seq) = poller {
                    self.poll_later(now, seq, Duration::ZERO);
                }
            }
        }
    }

    // ----- deliveries and settling -----

    fn dispatch(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        while self.deliveries.len() < self.config.max_in_flight_deliveries && self.held.has_ready()
        {
            self.next_delivery += 1;
            let delivery = PopDeliveryId(self.next_delivery);
            let mut messages = Vec::new();
            // Orderly: the delivery's queue, fixed by its first message.
            let mut queue: Option<OrderKey> = None;
            while messages.len() < self.config.consume_batch_size {
                let taken = if self.config.orderly {
                    let (ordered, wanted) = (&self.ordered, queue.as_ref());
                    self.held.take_ready_where(delivery, |m| {
                        let key = OrderKey::of(m);
                        wanted.map_or(!ordered.is_busy(&key), |q| *q == key)
                    })
                } else {
                    self.held.take_ready(delivery)
                };
                let Some((id, message)) = taken else {
                    break;
                };
                let Some(held) = self.held.get(id) else {
                    continue;
                };
                if held.visible_until <= now {
                    // Its invisibility ran out while it waited: another member may have it
                    // now (Java drops such a request too, `ConsumeRequest.isPopTimeout`).
                    self.stats.expired += 1;
                    self.held.remove(id);
                    continue;
                }
                if self.config.orderly && queue.is_none() {
                    queue = Some(OrderKey::of(held));
                }
                let receipt = Receipt {
                    topic: held.topic.clone(),
                    handle: held.handle.clone(),
                };
                if let Some(at) = held.visible_until.checked_sub(self.renew_ahead()) {
                    self.timers.set(at.max(now), PopTimer::Renew(id));
                }
                messages.push(PopMessage { message, receipt });
            }
            if messages.is_empty() {
                if self.config.orderly {
                    // Every ready message's queue is at the handler already.
                    break;
                }
                continue;
            }
            if let Some(queue) = queue {
                self.ordered.start(delivery, queue);
            }
            self.deliveries.insert(delivery);
            self.outputs.push_back(PopOutput::Deliver(PopDelivery {
                id: delivery,
                messages,
            }));
        }
    }

    fn settle(&mut self, now: Instant, id: HeldId, settle: Settle) {
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.stage = Stage::Settling;
        if held.renewing {
            held.settle_after_renewal = Some(settle);
            return;
        }
        held.settle_after_renewal = Some(settle);
        let (topic, handle) = (held.topic.clone(), held.handle.clone());
        match settle {
            Settle::Ack => self.acks.push(id),
            Settle::Retry(delay) => self.send_change(now, &topic, &handle, delay, Kind::Retry(id)),
            Settle::DeadLetter => self.send_dead_letter(now, id),
        }
    }

    /// Orderly: a delivery of `queue` failed and comes back after `delay`; the queue's later
    /// messages held here must not go to the handler before it. They become invisible for the
    /// same `delay`, so the broker, which restarts the queue from its first message not acked,
    /// delivers them again after it, in order.
    fn hold_back_queue(&mut self, now: Instant, queue: &OrderKey, delay: Duration) {
        for id in self.held.drain_ready_where(|m| OrderKey::of(m) == *queue) {
            let Some(held) = self.held.get_mut(id) else {
                continue;
            };
            held.settle_after_renewal = Some(Settle::Retry(delay));
            let (topic, handle) = (held.topic.clone(), held.handle.clone());
            self.send_change(now, &topic, &handle, delay, Kind::Release(id));
        }
    }

    fn renew(&mut self, now: Instant, id: HeldId) {
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        if !matches!(held.stage, Stage::Handling(_)) || held.renewing {
            return;
        }
        held.renewing = true;
        let (topic, handle) = (held.topic.clone(), held.handle.clone());
        let invisible = self.config.invisible_time;
        self.send_change(now, &topic, &handle, invisible, Kind::Renew(id));
    }

    fn release(&mut self, now: Instant, id: HeldId) {
        let Some(held) = self.held.get(id) else {
            return;
        };
        let (topic, handle) = (held.topic.clone(), held.handle.clone());
        self.report.released += 1;
        self.send_change(now, &topic, &handle, Duration::ZERO, Kind::Release(id));
    }

    fn send_ack(&mut self, now: Instant, topic: &str, handle: &ReceiptHandle, kind: Kind) {
        let Some(addr) = self.cluster.master_addr(&handle.broker_name) else {
            self.answer_unsent(now, kind);
            return;
        };
        let header = AckMessageRequest {
            consumer_group: self.config.group.clone(),
            topic: handle.real_topic(topic, &self.config.group),
            queue_id: handle.queue_id,
            extra_info: handle.to_string(),
            offset: handle.queue_offset,
            broker_name: Some(handle.broker_name.clone()),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::ACK_MESSAGE, &header),
            kind,
        );
    }

    fn send_change(
        &mut self,
        now: Instant,
        topic: &str,
        handle: &ReceiptHandle,
        invisible: Duration,
        kind: Kind,
    ) {
        let Some(addr) = self.cluster.master_addr(&handle.broker_name) else {
            self.answer_unsent(now, kind);
            return;
        };
        let header = ChangeInvisibleTimeRequest {
            consumer_group: self.config.group.clone(),
            topic: handle.real_topic(topic, &self.config.group),
            queue_id: handle.queue_id,
            extra_info: handle.to_string(),
            offset: handle.queue_offset,
            invisible_time: invisible.as_millis() as i64,
            broker_name: Some(handle.broker_name.clone()),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::CHANGE_MESSAGE_INVISIBLETIME, &header),
            kind,
        );
    }

    fn send_dead_letter(&mut self, now: Instant, id: HeldId) {
        let Some(held) = self.held.get(id) else {
            return;
        };
        let Some(addr) = self.cluster.master_addr(&held.handle.broker_name) else {
            self.answer_unsent(now, Kind::DeadLetter(id));
            return;
        };
        // Delay level -1 sends the stored message to `%DLQ%<group>`
        // (`AbstractSendMessageProcessor`/`SendMessageProcessor.consumerSendMsgBack`), as the 5.x
        // proxy's `forwardMessageToDeadLetterQueue` does for pop; the ack follows.
        let header = ConsumerSendMsgBackRequest {
            offset: held.commit_log_offset,
            group: self.config.group.clone(),
            delay_level: -1,
            origin_msg_id: Some(held.msg_id.clone()),
            origin_topic: Some(held.topic.clone()),
            unit_mode: false,
            max_reconsume_times: Some(self.config.max_reconsume_times),
        };
        self.request(
            now,
            &addr,
            Command::request(RequestCode::CONSUMER_SEND_MSG_BACK, &header),
            Kind::DeadLetter(id),
        );
    }

    /// Sends the acks gathered during this input: one `ACK_MESSAGE` for a lone message of a
    /// broker, else one `BATCH_ACK_MESSAGE` per broker with an entry per checkpoint
    /// (`MQClientAPIImpl.batchAckMessageAsync` merges by retry, queue, start offset and pop
    /// time).
    fn flush_acks(&mut self, now: Instant) {
        let ids = std::mem::take(&mut self.acks);
        let mut by_broker: BTreeMap<String, Vec<HeldId>> = BTreeMap::new();
        for id in ids {
            if let Some(held) = self.held.get(id) {
                by_broker
                    .entry(held.handle.broker_name.clone())
                    .or_default()
                    .push(id);
            }
        }
        for (broker, ids) in by_broker {
            // A bit index must fit the checkpoint (at most 32 messages per pop); a handle that
            // does not is acked alone.
            let (batchable, alone): (Vec<HeldId>, Vec<HeldId>) = ids.into_iter().partition(|id| {
                self.held.get(*id).is_some_and(|h| {
                    (0..1024).contains(&(h.handle.queue_offset - h.handle.ck_queue_offset))
                })
            });
            let (batchable, alone) = if batchable.len() > 1 {
                (batchable, alone)
            } else {
                (Vec::new(), [batchable, alone].concat())
            };
            for id in alone {
                if let Some(held) = self.held.get(id) {
                    let (topic, handle) = (held.topic.clone(), held.handle.clone());
                    self.send_ack(now, &topic, &handle, Kind::Ack(vec![id]));
                }
            }
            if batchable.is_empty() {
                continue;
            }
            let mut acks: BTreeMap<(String, String, i32, i64, i64), BatchAck> = BTreeMap::new();
            for id in &batchable {
                let Some(held) = self.held.get(*id) else {
                    continue;
                };
                let h = &held.handle;
                let key = (
                    held.topic.clone(),
                    h.retry.as_str().to_owned(),
                    h.queue_id,
                    h.ck_queue_offset,
                    h.pop_time,
                );
                let entry = acks.entry(key).or_insert_with(|| BatchAck {
                    consumer_group: self.config.group.clone(),
                    topic: held.topic.clone(),
                    retry: h.retry.as_str().to_owned(),
                    start_offset: h.ck_queue_offset,
                    queue_id: h.queue_id,
                    revive_queue_id: h.revive_qid,
                    pop_time: h.pop_time,
                    invisible_time: h.invisible_time,
                    bit_set: Vec::new(),
                });
                entry
                    .bit_set
                    .push((h.queue_offset - h.ck_queue_offset) as u32);
            }
            let Some(addr) = self.cluster.master_addr(&broker) else {
                self.answer_unsent(now, Kind::Ack(batchable));
                continue;
            };
            let body = BatchAckMessageRequestBody {
                broker_name: broker.clone(),
                acks: acks.into_values().collect(),
            };
            let command = Command::request_with_fields(
                RequestCode::BATCH_ACK_MESSAGE,
                proto::ExtFields::new(),
            )
            .with_body(body.encode());
            self.request(now, &addr, command, Kind::Ack(batchable));
        }
    }

    // ----- answers -----

    fn answer(&mut self, now: Instant, pending: Pending, answer: Result<Command, FailureReason>) {
        let name = pending.kind.name();
        let addr = pending.addr.clone();
        match pending.kind {
            Kind::Route(topic) => {
                let route = answer.and_then(success).and_then(|r| {
                    TopicRouteData::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match route {
                    Ok(route) => self.on_route(now, &topic, route),
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.cluster.name_server_failed(&addr);
                        self.timers.reset_earlier(
                            now + self.config.exception_backoff,
                            PopTimer::RouteRefresh,
                        );
                    }
                }
            }
            Kind::Heartbeat | Kind::SetMode => match answer.and_then(success) {
                // The broker knows this member (and the group's mode) now: ask for the
                // assignment rather than wait for the next round.
                Ok(_) => self.timers.reset_earlier(now, PopTimer::Rebalance),
                Err(reason) => {
                    if matches!(pending.kind, Kind::SetMode) {
                        // Try the mode again soon (a 5.x broker refuses it with
                        // SUBSCRIPTION_GROUP_NOT_EXIST until a heartbeat created the group).
                        self.mode_set.retain(|(a, _)| *a != addr);
                        self.timers.reset_earlier(
                            now + self.config.exception_backoff,
                            PopTimer::RouteRefresh,
                        );
                    }
                    self.failed(&addr, name, reason);
                }
            },
            Kind::Assignment(topic) => {
                let body = answer.and_then(success).and_then(|r| {
                    QueryAssignmentResponseBody::decode(&r.body)
                        .map_err(|e| FailureReason::Malformed(e.to_string()))
                });
                match body {
                    // No set at all: the broker could not assign (yet: the heartbeat may still
                    // be on its way); Java keeps the old assignment. Ask again soon.
                    Ok(QueryAssignmentResponseBody {
                        message_queue_assignments: None,
                    }) => self
                        .timers
                        .reset_earlier(now + self.config.exception_backoff, PopTimer::Rebalance),
                    Ok(QueryAssignmentResponseBody {
                        message_queue_assignments: Some(assignments),
                    }) => {
                        let queues = assignments
                            .into_iter()
                            .filter_map(|a| a.message_queue)
                            .filter(|mq| mq.topic() == topic)
                            .collect();
                        self.apply_assignment(&topic, queues);
                    }
                    Err(reason) => {
                        self.failed(&addr, name, reason);
                        self.assignment_turn = self.assignment_turn.wrapping_add(1);
                        self.timers.reset_earlier(
                            now + self.config.exception_backoff,
                            PopTimer::Rebalance,
                        );
                    }
                }
            }
            Kind::Pop {
                queue,
                topic,
                poller,
                receive,
            } => match answer {
                Ok(response) => {
                    self.on_pop(now, pending.sent, queue, topic, poller, receive, response)
                }
                Err(reason) => {
                    self.failed(&addr, name, reason.clone());
                    self.pop_failed(now, poller, receive, reason);
                }
            },
            Kind::Ack(ids) => match answer.and_then(success) {
                Ok(_) => {
                    for id in ids {
                        if self.held.remove(id).is_some() {
                            self.stats.acked += 1;
                        }
                    }
                }
                Err(reason) => {
                    for id in ids {
                        self.settle_retry_or_fail(now, id, name, reason.clone());
                    }
                }
            },
            Kind::Retry(id) | Kind::Release(id) => match answer.and_then(success) {
                Ok(_) => {
                    if matches!(pending.kind, Kind::Retry(_)) {
                        self.stats.retried += 1;
                    }
                    self.held.remove(id);
                }
                Err(reason) => self.settle_retry_or_fail(now, id, name, reason),
            },
            Kind::DeadLetter(id) => match answer.and_then(success) {
                Ok(_) => {
                    self.stats.dead_lettered += 1;
                    if let Some(held) = self.held.get_mut(id) {
                        held.settle_after_renewal = Some(Settle::Ack);
                        let receipt = Receipt {
                            topic: held.topic.clone(),
                            handle: held.handle.clone(),
                        };
                        self.outputs
                            .push_back(PopOutput::Event(PopEvent::DeadLettered { receipt }));
                        self.acks.push(id);
                    }
                }
                Err(reason) => {
                    // Not in the DLQ: delay it for as long as retries ever wait, and try again
                    // at its next delivery.
                    self.failed(&addr, name, reason);
                    let delay = self.config.retry_delay(i32::MAX, 0);
                    if let Some(held) = self.held.get(id) {
                        let (topic, handle) = (held.topic.clone(), held.handle.clone());
                        self.send_change(now, &topic, &handle, delay, Kind::Retry(id));
                    }
                }
            },
            Kind::Renew(id) => self.on_renewed(now, pending.sent, id, answer),
            Kind::AppAck(request) => {
                let result = answer.and_then(success).map(|_| ());
                if result.is_ok() {
                    self.stats.acked += 1;
                }
                self.outputs
                    .push_back(PopOutput::Event(PopEvent::Acked { request, result }));
            }
            Kind::AppChange(request, topic, handle) => {
                let receipt = answer
                    .and_then(success)
                    .and_then(|r| {
                        r.header::<ChangeInvisibleTimeResponse>()
                            .map_err(|e| FailureReason::Malformed(e.to_string()))
                    })
                    .map(|h| Receipt {
                        topic,
                        handle: handle.renewed(h.pop_time, h.invisible_time, h.revive_qid),
                    });
                self.outputs
                    .push_back(PopOutput::Event(PopEvent::InvisibilityChanged {
                        request,
                        receipt,
                    }));
            }
            Kind::Unregister => {
                if self.lifecycle == Lifecycle::Finishing
                    && !self.requests.any(|p| matches!(p.kind, Kind::Unregister))
                {
                    self.close();
                }
            }
        }
    }

    fn on_renewed(
        &mut self,
        now: Instant,
        sent: Instant,
        id: HeldId,
        answer: Result<Command, FailureReason>,
    ) {
        let header = answer.and_then(success).and_then(|r| {
            r.header::<ChangeInvisibleTimeResponse>()
                .map_err(|e| FailureReason::Malformed(e.to_string()))
        });
        let renew_ahead = self.renew_ahead();
        let renewed_until = header
            .as_ref()
            .map(|h| self.visible_until(sent, now, h.pop_time, h.invisible_time));
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.renewing = false;
        match header {
            Ok(h) => {
                held.handle = held
                    .handle
                    .renewed(h.pop_time, h.invisible_time, h.revive_qid);
                held.visible_until = renewed_until.unwrap_or(held.visible_until);
                self.stats.renewed += 1;
                if matches!(held.stage, Stage::Handling(_)) {
                    let at = held.visible_until.checked_sub(renew_ahead).unwrap_or(now);
                    self.timers.set(at.max(now), PopTimer::Renew(id));
                }
            }
            Err(reason) => {
                // The old handle still holds until its time; try again soon while it does.
                let retry_at = now + SETTLE_RETRY;
                let still = held.visible_until > retry_at;
                let receipt = Receipt {
                    topic: held.topic.clone(),
                    handle: held.handle.clone(),
                };
                if still && matches!(held.stage, Stage::Handling(_)) {
                    self.timers.set(retry_at, PopTimer::Renew(id));
                }
                self.stats.settle_failures += 1;
                self.outputs
                    .push_back(PopOutput::Event(PopEvent::SettleFailed {
                        receipt,
                        request: "CHANGE_MESSAGE_INVISIBLETIME",
                        reason,
                    }));
            }
        }
        // The handler finished meanwhile: settle with the handle we have now.
        if let Some(held) = self.held.get(id)
            && !matches!(held.stage, Stage::Handling(_))
            && let Some(settle) = held.settle_after_renewal
        {
            self.settle(now, id, settle);
        }
    }

    /// A settle failed: a timeout or lost connection is tried again while the message is
    /// still invisible; a refusal (`NO_MESSAGE`: the handle is spent) is final.
    fn settle_retry_or_fail(
        &mut self,
        now: Instant,
        id: HeldId,
        name: &'static str,
        reason: FailureReason,
    ) {
        let transient = matches!(reason, FailureReason::Timeout | FailureReason::Disconnected);
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.attempts += 1;
        if transient
            && held.attempts < MAX_SETTLE_ATTEMPTS
            && held.visible_until > now + SETTLE_RETRY
        {
            self.timers.set(now + SETTLE_RETRY, PopTimer::Resettle(id));
            return;
        }
        if let Some(held) = self.held.remove(id) {
            self.stats.settle_failures += 1;
            let receipt = Receipt {
                topic: held.topic,
                handle: held.handle,
            };
            self.outputs
                .push_back(PopOutput::Event(PopEvent::SettleFailed {
                    receipt,
                    request: name,
                    reason,
                }));
        }
    }

    fn settle_failed(&mut self, held: &HeldMessage, request: &'static str, reason: FailureReason) {
        self.stats.settle_failures += 1;
        self.outputs
            .push_back(PopOutput::Event(PopEvent::SettleFailed {
                receipt: Receipt {
                    topic: held.topic.clone(),
                    handle: held.handle.clone(),
                },
                request,
                reason,
            }));
    }

    /// A request that could not even be sent (no address for its broker).
    fn answer_unsent(&mut self, now: Instant, kind: Kind) {
        let pending = Pending {
            conn: ConnId(0),
            addr: String::new(),
            kind,
            sent: now,
            deadline: now,
        };
        self.answer(now, pending, Err(FailureReason::Disconnected));
    }

    fn failed(&mut self, addr: &str, request: &'static str, reason: FailureReason) {
        self.outputs
            .push_back(PopOutput::Event(PopEvent::RequestFailed {
                addr: addr.to_owned(),
                request,
                reason,
            }));
    }

    fn report_failure(
        &mut self,
        queue: &MessageQueue,
        request: &'static str,
        reason: &FailureReason,
    ) {
        let addr = self
            .cluster
            .master_addr(queue.broker_name())
            .unwrap_or_default();
        self.failed(&addr, request, reason.clone());
    }

    // ----- broker requests -----

    fn handle_request(&mut self, now: Instant, conn: ConnId, request: Command) {
        match request.request_code() {
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED => {
                self.timers.reset_earlier(now, PopTimer::Rebalance);
            }
            _ if request.is_oneway() => {}
            _ => {
                // Running info, consume directly and the like are the classic consumer's; a
                // pop consumer says so instead of letting the broker wait.
                let response =
                    Command::response(ResponseCode::REQUEST_CODE_NOT_SUPPORTED, request.opaque);
                self.outputs.push_back(PopOutput::Send {
                    conn,
                    command: response,
                });
            }
        }
    }

    // ----- request layer -----

    fn timeout_of(&self, kind: &Kind) -> Duration {
        match kind {
            Kind::Pop { .. } => self.config.poll_time + self.config.poll_grace,
            _ => self.config.request_timeout,
        }
    }

    fn request(&mut self, now: Instant, addr: &str, mut command: Command, kind: Kind) {
        let opaque = self.requests.next_opaque();
        command.opaque = opaque;
        let deadline = now + self.timeout_of(&kind);
        let (route, command) = self.conns.route(now, addr, command);
        let conn = match route {
            Route::Send(conn) => {
                if let Some(command) = command {
                    self.outputs.push_back(PopOutput::Send { conn, command });
                }
                conn
            }
            Route::Queued(conn) => conn,
            Route::Opening(conn) => {
                self.timers
                    .set(now + self.config.connect_timeout, PopTimer::Connect(conn));
                conn
            }
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
        self.timers.set(deadline, PopTimer::Request(conn.0, opaque));
    }

    fn connection_lost(&mut self, now: Instant, conn: ConnId) {
        let retry_at = now + self.config.reconnect_backoff;
        if self.conns.disconnected(conn, retry_at).is_none() {
            return;
        }
        // One at a time: failing one may close the consumer, which ends the others.
        while let Some((opaque, pending)) = self.requests.next_lost_on(conn) {
            self.timers
                .remove(pending.deadline, PopTimer::Request(conn.0, opaque));
            self.answer(now, pending, Err(FailureReason::Disconnected));
        }
    }

    // ----- shutdown -----

    fn after_input(&mut self, now: Instant) {
        self.flush_acks(now);
        self.dispatch(now);
        self.pop_ready(now);
        if self.lifecycle == Lifecycle::Draining
            && self.deliveries.is_empty()
            && self.held.is_empty()
        {
            self.finish_drain(now);
        }
    }

    fn finish_drain(&mut self, now: Instant) {
        self.report.abandoned = self.deliveries.len();
        self.lifecycle = Lifecycle::Finishing;
        let addrs = self.cluster.broker_addrs();
        self.timers
            .set(now + self.config.request_timeout, PopTimer::ShutdownFinish);
        if addrs.is_empty() {
            self.close();
            return;
        }
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
                Kind::Unregister,
            );
        }
    }

    fn close(&mut self) {
        if self.lifecycle == Lifecycle::Closed {
            return;
        }
        self.lifecycle = Lifecycle::Closed;
        self.timers.clear();
        self.requests.clear();
        for conn in self.conns.ids() {
            self.outputs.push_back(PopOutput::Close { conn });
        }
        self.conns.clear();
        self.report.acked = self.stats.acked;
        self.outputs
            .push_back(PopOutput::Event(PopEvent::Closed(self.report.clone())));
    }

    // ----- helpers -----

    fn wire(&self, name: &str) -> String {
        match &self.namespace {
            Some(ns) => ns.wrap(name).into_owned(),
            None => name.to_owned(),
        }
    }

    fn outward_name(&self, name: &str) -> String {
        match &self.namespace {
            Some(ns) => ns.unwrap(name).into_owned(),
            None => name.to_owned(),
        }
    }

    fn outward(&self, m: &mut PopMessage) {
        if let Some(ns) = &self.namespace {
            ns.unwrap_message(&mut m.message);
            m.receipt.topic = ns.unwrap(&m.receipt.topic).into_owned();
        }
    }

    /// When the broker makes a message visible again, as well as this side can tell: it popped
    /// (or renewed) it between `sent` and `now`, so the end lies within those two plus the
    /// invisibility; within that, the broker's own `pop_time` places it (Java's
    /// `ConsumeRequest.isPopTimeout` compares the broker's pop time with the local clock too).
    /// The send time alone would be far too early for a long poll answered seconds later.
    fn visible_until(
        &self,
        sent: Instant,
        now: Instant,
        pop_time: i64,
        invisible_ms: i64,
    ) -> Instant {
        let invisible = Duration::from_millis(u64::try_from(invisible_ms).unwrap_or(0));
        let (earliest, latest) = (sent + invisible, now + invisible);
        let ahead = pop_time.saturating_add(invisible_ms) - self.unix_ms(now);
        let by_clock = match u64::try_from(ahead) {
            Ok(ahead) => now + Duration::from_millis(ahead),
            Err(_) => now
                .checked_sub(Duration::from_millis(ahead.unsigned_abs()))
                .unwrap_or(earliest),
        };
        by_clock.clamp(earliest, latest)
    }

    /// How long before a running delivery's invisibility ends it is renewed: `renew_ahead`, but
    /// never more than half the invisibility (or a renewal would follow each renewal at once).
    fn renew_ahead(&self) -> Duration {
        self.config.renew_ahead.min(self.config.invisible_time / 2)
    }

    fn next_request_id(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    fn unix_ms(&self, now: Instant) -> i64 {
        self.start_unix_ms + now.saturating_duration_since(self.start).as_millis() as i64
    }
}

fn success(response: Command) -> Result<Command, FailureReason> {
    match response.response_code() {
        ResponseCode::SUCCESS => Ok(response),
        code => Err(FailureReason::Refused(code, response.remark)),
    }
}
