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
//! Internally, [`PopConsumer`] is a coordinator over sub-states that own their data: `held`
//! (each popped message until it is settled, with the flow-control totals), `orderly` (the
//! queues at the handler, orderly) and the request table (`crate::requests`, shared with the
//! push consumer). This file holds the inputs and outputs and decides when things run; the
//! duties are grouped by file: `requests` (what each request is for, sending one, a lost
//! connection), `answer` (how each request ends), `assignment` (routes, request mode,
//! heartbeats, assignments), `popping` (the pop loops and their answers), `settling`
//! (deliveries, acks, retries, dead letters, renewals), `broker_request` (what brokers ask)
//! and `shutdown`.

mod answer;
mod assignment;
mod broker_request;
mod config;
mod held;
mod orderly;
mod output;
mod popping;
mod requests;
mod settling;
mod shutdown;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use proto::body::SubscriptionData;
use proto::{Command, MessageQueue};

use crate::consumer::cluster::ClusterView;
use crate::error::ConfigError;
use crate::link::{Link, Rules};
use crate::namespace::Namespace;
use crate::output::{ConnId, ConsumeOutcome, FailureReason, RequestId, Wire};
use crate::signer::Signer;
use crate::timer::TimerQueue;

pub use config::{PopConfig, PopMode};
use held::{Held, HeldId, Settle};
use orderly::OrderedQueues;
pub use output::{
    PopDelivery, PopDeliveryId, PopEvent, PopMessage, PopOutput, PopShutdownReport, PopStats,
    Receipt,
};
use popping::{Poller, WaitingReceive};
use requests::Kind;

/// A timer. Per-message and per-request timers carry their key; one whose subject is gone is
/// ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PopTimer {
    /// Refresh topic routes.
    RouteRefresh,
    /// Heartbeat every broker.
    Heartbeat,
    /// Query every topic's assignment.
    Rebalance,
    /// The poller with this sequence number may pop again.
    Poll(u64),
    /// Renew the held message's invisibility.
    Renew(HeldId),
    /// Try a failed settle again.
    Resettle(HeldId),
    /// Shutdown stops waiting for running handlers.
    ShutdownDrain,
    /// Shutdown stops waiting for unregister answers.
    ShutdownFinish,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Running,
    /// Waiting for running handlers (and the settles of what they did).
    Draining,
    /// Waiting for unregistration.
    Finishing,
    Closed,
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
    timers: TimerQueue<PopTimer>,
    /// The connections and the requests in flight.
    link: Link<Kind>,
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
        let rules = Rules {
            connect_timeout: config.connect_timeout,
            reconnect_backoff: config.reconnect_backoff,
            close_after_timeouts: config.close_after_timeouts,
        };
        Ok(Self {
            cluster: ClusterView::new(config.name_servers.clone(), 0),
            config,
            client_id: client_id.into(),
            start: now,
            start_unix_ms: unix_ms,
            lifecycle: Lifecycle::Running,
            subscriptions: BTreeMap::new(),
            timers: TimerQueue::default(),
            link: Link::new(rules),
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
        let (addr, queued) = self.link.connected(now, conn);
        self.link.write(conn, queued);
        // Brokers know members by connection: heartbeat on a new one at once, so pops and
        // assignment queries on it find this member.
        if let Some(addr) = addr
            && self.cluster.is_broker(&addr)
            && !self
                .link
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
            if let Some(pending) = self.link.answered(now, conn, command.opaque) {
                self.answer(now, pending, Ok(command));
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
        self.settle_delivery(now, delivery, outcome);
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
        self.start_drain(now);
        self.after_input(now);
    }

    // ----- outputs -----

    /// The next piece of work for the driver.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<PopOutput> {
        let mut output = match self.link.poll_wire() {
            Some(wire) => PopOutput::Wire(wire),
            None => self.outputs.pop_front()?,
        };
        match &mut output {
            PopOutput::Wire(Wire::Send { command, .. }) => self.signer.sign(command),
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
        let own = self.timers.next().map(|(at, _)| at);
        [own, self.link.poll_timeout()].into_iter().flatten().min()
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

    /// Does what timer `timer`, due at `now`, is for.
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
            PopTimer::ShutdownDrain => {
                if self.lifecycle == Lifecycle::Draining {
                    self.finish_drain(now);
                }
            }
            PopTimer::ShutdownFinish => self.close(),
        }
    }

    /// After every input: the acks gathered go out, ready messages are delivered, the pops
    /// that may go are sent, and a drain with nothing left to wait for finishes.
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

    // ----- helpers -----

    /// `name` as the brokers know it (in the namespace).
    fn wire(&self, name: &str) -> String {
        match &self.namespace {
            Some(ns) => ns.wrap(name).into_owned(),
            None => name.to_owned(),
        }
    }

    /// `name` as the application knows it (out of the namespace).
    fn outward_name(&self, name: &str) -> String {
        match &self.namespace {
            Some(ns) => ns.unwrap(name).into_owned(),
            None => name.to_owned(),
        }
    }

    /// A message and its receipt as the application knows them.
    fn outward(&self, m: &mut PopMessage) {
        if let Some(ns) = &self.namespace {
            ns.unwrap_message(&mut m.message);
            m.receipt.topic = ns.unwrap(&m.receipt.topic).into_owned();
        }
    }

    /// A fresh id for an application request.
    fn next_request_id(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    /// The wall clock at `now`, from the one given at the start.
    fn unix_ms(&self, now: Instant) -> i64 {
        self.start_unix_ms + now.saturating_duration_since(self.start).as_millis() as i64
    }
}
