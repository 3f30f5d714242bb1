//! [`World`]: several real [`Consumer`]s against the [`SimCluster`], over a simulated network
//! with seeded latency, on a virtual clock, with seeded faults, checking invariants after
//! every step. Every command crosses the network as bytes through the real codec.
//!
//! A failing run panics with its seed (`SIM_SEED=<seed>` replays it) and the tail of a
//! readable trace.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use consumer_core::{
    ConnId, ConsumeFrom, ConsumeMode, ConsumeOutcome, Consumer, ConsumerConfig, Credentials,
    Delivery, DeliveryId, Event, MessageModel, Output, Polled, RequestId, ShutdownReport,
};
use proto::headers::SendMessageRequestV2;
use proto::{
    Command, FrameDecoder, HeaderEncoding, MessageQueue, RequestCode, ResponseCode, frame,
};

use crate::sim::{ConnKey, Fault, SimCluster, SimConfig, SimRng, dlq_topic};

/// What to simulate.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    /// The seed of everything random: latencies, handler times, faults.
    pub seed: u64,
    /// The consumer group.
    pub group: String,
    /// The topic consumed.
    pub topic: String,
    /// Queues of the topic on each broker.
    pub queues_per_broker: i32,
    /// Consumers at the start.
    pub consumers: usize,
    /// Messages produced, spread over the first half of the run.
    pub messages: usize,
    /// How long faults and production go on.
    pub active: Duration,
    /// One-way network latency range.
    pub latency: (Duration, Duration),
    /// Handler time range.
    pub handler_time: (Duration, Duration),
    /// Chance (percent) that a handler asks to reconsume later (or, at random, to retry part
    /// of its batch, or to suspend).
    pub reconsume_percent: u64,
    /// Share (percent) of messages whose handler always fails: they must end in the
    /// dead-letter queue (clustering) or be given up (broadcasting).
    pub poison_percent: u64,
    /// How the consumers consume.
    pub mode: ConsumeMode,
    /// Clustering or broadcasting.
    pub model: MessageModel,
    /// The consumers' `max_reconsume_times`.
    pub max_reconsume_times: Option<i32>,
    /// Inject faults (connection drops, broker restart, member churn, OFFSET_MOVED,
    /// SYSTEM_BUSY, black-holed connections).
    pub faults: bool,
    /// Adjusts each consumer's configuration.
    pub consumer_config: fn(ConsumerConfig) -> ConsumerConfig,
    /// ACL on: brokers accept only requests signed as [`SIM_ACCESS_KEY`] with
    /// [`SIM_SECRET_KEY`], and every consumer has those credentials.
    pub acl: bool,
    /// A consumer-wide rate limit (messages a second) on every consumer.
    pub rate_limit: Option<u32>,
    /// Faults also pause a random queue of a random member for a few seconds (then resume
    /// it); no delivery may come from a paused queue.
    pub pauses: bool,
    /// Message trace on every consumer; [`World::shutdown_all`] then checks that every
    /// delivered message was traced before and, once completed, after its handler.
    pub trace: bool,
}

/// The access key of the simulated cluster's one ACL user.
pub const SIM_ACCESS_KEY: &str = "sim-access-key";
/// Its secret key.
pub const SIM_SECRET_KEY: &str = "sim-secret-key";

impl WorldConfig {
    /// A small cluster (2 brokers x 2 queues), 2 consumers, 60 messages, faults on.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            group: "sim-group".into(),
            topic: "SimTopic".into(),
            queues_per_broker: 2,
            consumers: 2,
            messages: 60,
            active: Duration::from_secs(60),
            latency: (Duration::from_micros(100), Duration::from_millis(5)),
            handler_time: (Duration::from_micros(50), Duration::from_millis(20)),
            reconsume_percent: 5,
            poison_percent: 0,
            mode: ConsumeMode::Concurrent,
            model: MessageModel::Clustering,
            max_reconsume_times: None,
            faults: true,
            consumer_config: |c| c,
            acl: false,
            rate_limit: None,
            pauses: false,
            trace: false,
        }
    }
}

impl WorldConfig {
    /// The seed's variant of the standard run, rotating through the consumer's modes:
    /// concurrent clustering; the same with poisoned messages and `max_reconsume_times` 2
    /// (dead-letter path); orderly clustering with poisoned messages; broadcasting with
    /// poisoned messages. Every other round of four delivers batches of 3 messages instead of 1.
    /// Every third seed runs with ACL on ([`WorldConfig::acl`]), across all of those; every
    /// fifth with a rate limit of 25 messages a second, and every other one with message trace.
    pub fn rotating(seed: u64) -> Self {
        let mut config = Self::new(seed);
        config.acl = seed % 3 == 2;
        config.rate_limit = (seed % 5 == 3).then_some(25);
        config.pauses = seed % 7 == 5;
        config.trace = seed % 2 == 1;
        if (seed / 4) % 2 == 1 {
            config.consumer_config = |mut c| {
                c.consume_batch_size = 3;
                c
            };
        }
        match seed % 4 {
            0 => {}
            1 => {
                config.poison_percent = 10;
                config.max_reconsume_times = Some(2);
            }
            2 => {
                config.mode = ConsumeMode::Orderly;
                config.poison_percent = 5;
                config.max_reconsume_times = Some(2);
            }
            _ => {
                config.model = MessageModel::Broadcasting;
                config.poison_percent = 5;
                config.max_reconsume_times = Some(2);
            }
        }
        config
    }
}

#[derive(Debug)]
enum Ev {
    ToCluster(ConnKey, Bytes),
    ToNode(usize, ConnId, Bytes),
    Connected(usize, ConnId),
    Refused(usize, ConnId),
    Lost(usize, ConnId),
    Complete(usize, DeliveryId, ConsumeOutcome),
    Produce,
    Fault,
    Join,
    BrokerUp(String),
    Resume(usize, MessageQueue),
}

/// A delivery whose handler is running.
#[derive(Debug)]
struct Outstanding {
    /// The queue it came from.
    queue: MessageQueue,
    /// Where each message was first produced (a retried copy maps to its original).
    origins: Vec<Option<(MessageQueue, i64)>>,
}

/// A produced message's place: queue and offset.
type Position = (MessageQueue, i64);

/// One consumer process.
#[derive(Debug)]
pub struct Node {
    /// The consumer.
    pub consumer: Consumer,
    keys: BTreeMap<ConnId, ConnKey>,
    outstanding: BTreeMap<DeliveryId, Outstanding>,
    /// Messages this node's handler consumed (by first position).
    pub consumed: BTreeSet<Position>,
    /// Broadcasting: the last offset table the node handed out to store.
    pub stored: BTreeMap<MessageQueue, i64>,
    /// Set once its shutdown finished.
    pub report: Option<ShutdownReport>,
    shutting_down: bool,
    /// Every event the consumer output, with the time it did.
    pub events: Vec<(Instant, Event)>,
    /// Every delivery the consumer handed out, with the time it did.
    pub delivered: Vec<(Instant, Delivery)>,
    /// Messages the consumer gave up on (`Event::GaveUp`).
    pub gave_up: BTreeSet<Position>,
    /// While set, the node's handler does not complete deliveries on its own: they wait in
    /// [`Node::held`] until the test completes them ([`World::complete_at`]).
    pub hold: bool,
    /// Deliveries handed out while [`Node::hold`] was set and not completed by the test yet.
    pub held: Vec<DeliveryId>,
    /// With `revoke_hook`: every revoke the consumer announced ([`Output::Revoking`]), with
    /// the time it did; the world never answers them (a test calls `revoke_done`, or the
    /// revoke deadline ends them).
    pub revoking: Vec<(Instant, RequestId, Vec<MessageQueue>)>,
    /// With `trace`: every message trace record the consumer handed out, with the time.
    pub traces: Vec<(Instant, proto::trace::TraceRecord)>,
    /// Queues the node's application paused and has not resumed.
    pub paused: BTreeSet<MessageQueue>,
}

/// The simulated world.
#[derive(Debug)]
pub struct World {
    /// The configuration.
    pub config: WorldConfig,
    /// The virtual time.
    pub now: Instant,
    epoch: Instant,
    /// The cluster.
    pub cluster: SimCluster,
    /// Every consumer ever started, alive or shut down.
    pub nodes: Vec<Node>,
    queue: BTreeMap<(Instant, u64), Ev>,
    seq: u64,
    next_key: ConnKey,
    conn_owner: BTreeMap<ConnKey, (usize, ConnId)>,
    /// The last delivery time scheduled per connection and direction, to keep TCP order.
    last_at: BTreeMap<(ConnKey, bool), Instant>,
    rng: SimRng,
    trace: Vec<String>,
    produced: BTreeMap<MessageQueue, BTreeSet<i64>>,
    acked: BTreeMap<MessageQueue, BTreeSet<i64>>,
    /// Messages whose retry (or dead-letter) copy a broker confirmed to a consumer.
    sent_back: BTreeMap<MessageQueue, BTreeSet<i64>>,
    /// Every produced body and where it was produced.
    origin: BTreeMap<Bytes, Position>,
    poison: BTreeSet<Bytes>,
    /// Send-backs in flight, by connection and opaque: the body they carry.
    send_backs: BTreeMap<(ConnKey, i32), Bytes>,
    key_addr: BTreeMap<ConnKey, String>,
    /// Connections the consumers asked for, by address.
    opened: BTreeMap<String, usize>,
    restarted_at: BTreeMap<String, Instant>,
    deliveries: u64,
    to_produce: usize,
    slow_until: Instant,
}

impl World {
    /// A world per `config`, with its topic created and its consumers started.
    pub fn new(config: WorldConfig) -> Self {
        let epoch = Instant::now();
        let mut sim = SimConfig::new(epoch);
        sim.seed = config.seed;
        let mut cluster = SimCluster::new(sim);
        cluster.create_topic(&config.topic, config.queues_per_broker);
        if config.acl {
            cluster.require_signatures(SIM_ACCESS_KEY, SIM_SECRET_KEY);
        }
        let mut world = Self {
            now: epoch,
            epoch,
            cluster,
            nodes: Vec::new(),
            queue: BTreeMap::new(),
            seq: 0,
            next_key: 0,
            conn_owner: BTreeMap::new(),
            last_at: BTreeMap::new(),
            rng: SimRng::new(config.seed ^ 0x5EED),
            trace: Vec::new(),
            produced: BTreeMap::new(),
            acked: BTreeMap::new(),
            sent_back: BTreeMap::new(),
            origin: BTreeMap::new(),
            poison: BTreeSet::new(),
            send_backs: BTreeMap::new(),
            key_addr: BTreeMap::new(),
            opened: BTreeMap::new(),
            restarted_at: BTreeMap::new(),
            deliveries: 0,
            to_produce: config.messages,
            slow_until: epoch,
            config,
        };
        for _ in 0..world.config.consumers {
            world.add_consumer();
        }
        let active = world.config.active;
        for i in 0..world.config.messages {
            let at =
                world.epoch + active.mul_f64(i as f64 / world.config.messages.max(1) as f64 / 2.0);
            world.schedule(at, Ev::Produce);
        }
        if world.config.faults {
            for _ in 0..6 {
                let at =
                    world.epoch + Duration::from_millis(world.rng.below(active.as_millis() as u64));
                world.schedule(at, Ev::Fault);
            }
            let at = world.epoch + active / 3;
            world.schedule(at, Ev::Join);
        }
        world
    }

    /// Starts one more consumer.
    pub fn add_consumer(&mut self) -> usize {
        self.add_consumer_with(|config| config)
    }

    /// Runs until `deadline`, checking invariants after every step.
    pub fn run_until(&mut self, deadline: Instant) {
        self.run_until_with(deadline, |_| {});
    }

    /// Runs the configured scenario: the active phase, then a quiet phase long enough for
    /// every message to be consumed; then checks that nothing was lost and ownership settled.
    pub fn run(&mut self) {
        let active_end = self.epoch + self.config.active;
        self.run_until(active_end);
        // Quiet: long enough for a rebalance round, reconnects, redeliveries and long polls,
        // and for poisoned messages to go through their delayed retries.
        let quiet = if self.config.poison_percent > 0 {
            150
        } else {
            90
        };
        self.run_until(active_end + Duration::from_secs(quiet));
        // A message never handed back to the broker has no excuse to be late: it must be done
        // by the end of the quiet phase.
        if let Some(late) = self.late_without_retry() {
            self.fail(&late);
        }
        // Retries back off (10 s, 30 s, 1 min, 2 min, ... 2 h): a message that failed a few
        // times in a row is still on its way; let its schedule play out (with the default 16
        // retries that takes up to about 5 h of virtual time).
        let limit = active_end + Duration::from_secs(6 * 3600);
        while self.now < limit && self.work_left() {
            let next = self.now + Duration::from_secs(60);
            self.run_until(next);
        }
        self.check_final();
    }

    /// Shuts every live consumer down and runs until they closed.
    pub fn shutdown_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.shutdown_node(i);
        }
        let end = self.now + Duration::from_secs(30);
        self.run_until(end);
        for (i, node) in self.nodes.iter().enumerate() {
            self.fail_if(
                !node.consumer.is_closed(),
                &format!("node {i} did not close"),
            );
        }
        if self.config.trace {
            self.check_traces();
        }
    }

    /// With trace: every delivered message has one `SubBefore` record, and every `SubAfter`
    /// follows the `SubBefore` of the same delivery (request id) and message.
    fn check_traces(&self) {
        use proto::trace::TraceRecord;
        for (i, node) in self.nodes.iter().enumerate() {
            let delivered: usize = node.delivered.iter().map(|(_, d)| d.messages.len()).sum();
            // A set: one delivery may hold two copies of a message (its retries), one id.
            let mut before = BTreeSet::new();
            let mut befores = 0;
            for (_, record) in &node.traces {
                match record {
                    TraceRecord::SubBefore(b) => {
                        befores += 1;
                        before.insert((b.request_id.clone(), b.msg_id.clone()));
                    }
                    TraceRecord::SubAfter(a) => self.fail_if(
                        !before.contains(&(a.request_id.clone(), a.msg_id.clone())),
                        &format!("node {i}: a SubAfter without its SubBefore: {a:?}"),
                    ),
                    TraceRecord::Pub(p) => self.fail(&format!("node {i} traced a send: {p:?}")),
                }
            }
            self.fail_if(
                befores != delivered,
                &format!(
                    "node {i}: {befores} SubBefore records for {delivered} delivered messages"
                ),
            );
        }
    }

    fn shutdown_node(&mut self, i: usize) {
        if let Some(node) = self.nodes.get_mut(i)
            && !node.shutting_down
        {
            node.shutting_down = true;
            node.consumer.shutdown(self.now);
            self.note(format!("node {i} shuts down"));
        }
    }

    fn step(&mut self) {
        let now = self.now;
        // Outputs are drained after every single input, as a driver does, so a check made
        // when an output is carried out sees the state that produced it.
        self.cluster.handle_timeout(now);
        self.drain();
        for i in 0..self.nodes.len() {
            if self.nodes[i]
                .consumer
                .poll_timeout()
                .is_some_and(|t| t <= now)
            {
                self.nodes[i].consumer.handle_timeout(now);
                self.drain();
            }
        }
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ev = entry.remove();
            self.apply(ev);
            self.drain();
        }
    }

    fn apply(&mut self, ev: Ev) {
        let now = self.now;
        match ev {
            Ev::ToCluster(key, bytes) => {
                if self.cluster.is_connected(key) {
                    let command = decode(&bytes);
                    self.watch_send_back(key, &command);
                    self.cluster.handle_command(now, key, command);
                }
            }
            Ev::ToNode(i, conn, bytes) => {
                let live = self
                    .nodes
                    .get(i)
                    .is_some_and(|n| n.keys.contains_key(&conn));
                if live {
                    let command = decode(&bytes);
                    if command.is_response()
                        && let Some(key) = self.nodes[i].keys.get(&conn).copied()
                        && let Some(body) = self.send_backs.remove(&(key, command.opaque))
                        && command.response_code() == ResponseCode::SUCCESS
                        && let Some((mq, offset)) = self.origin.get(&body).cloned()
                    {
                        self.note(format!("node {i}: {mq:?}@{offset} sent back"));
                        self.sent_back.entry(mq).or_default().insert(offset);
                    }
                    self.nodes[i].consumer.handle_command(now, conn, command);
                }
            }
            Ev::Connected(i, conn) => self.nodes[i].consumer.handle_connected(now, conn),
            Ev::Refused(i, conn) | Ev::Lost(i, conn) => {
                if let Some(key) = self.nodes[i].keys.remove(&conn) {
                    self.conn_owner.remove(&key);
                }
                self.nodes[i].consumer.handle_disconnected(now, conn);
            }
            Ev::Complete(i, id, outcome) => {
                if let Some(out) = self.nodes[i].outstanding.remove(&id)
                    && !self.nodes[i].consumer.is_closed()
                {
                    let consumed = match outcome {
                        ConsumeOutcome::Success => out.origins.len(),
                        ConsumeOutcome::Retry { consumed, .. } => consumed,
                        _ => 0,
                    };
                    for (mq, offset) in out.origins.into_iter().take(consumed).flatten() {
                        self.nodes[i].consumed.insert((mq.clone(), offset));
                        self.acked.entry(mq).or_default().insert(offset);
                    }
                }
                self.nodes[i].consumer.complete(now, id, outcome);
            }
            Ev::Produce => self.produce_one(),
            Ev::Fault => self.inject_fault(),
            Ev::Join => {
                self.add_consumer();
            }
            Ev::BrokerUp(broker) => {
                self.note(format!("{broker} is up again"));
                self.cluster.set_broker_down(&broker, false);
            }
            Ev::Resume(i, queue) => {
                self.note(format!("node {i} resumes {queue:?}"));
                self.nodes[i].paused.remove(&queue);
                let now = self.now;
                self.nodes[i].consumer.resume(now, &queue);
            }
        }
    }

    /// A member's application pauses one queue of `broker` for a few seconds.
    fn pause_a_queue(&mut self, broker: &str) {
        let live: Vec<usize> = (0..self.nodes.len())
            .filter(|i| !self.nodes[*i].shutting_down)
            .collect();
        if live.is_empty() {
            return;
        }
        let i = live[self.rng.index(live.len())];
        let queue_id = self.rng.below(self.config.queues_per_broker as u64) as i32;
        let queue = MessageQueue::new(&self.config.topic, broker, queue_id);
        if !self.nodes[i].paused.insert(queue.clone()) {
            return;
        }
        let pause_for = Duration::from_millis(1000 + self.rng.below(3000));
        self.note(format!(
            "fault: node {i} pauses {queue:?} for {pause_for:?}"
        ));
        self.nodes[i].consumer.pause(&queue);
        let at = self.now + pause_for;
        self.schedule(at, Ev::Resume(i, queue));
    }

    fn produce_one(&mut self) {
        if self.to_produce == 0 {
            return;
        }
        self.to_produce -= 1;
        let brokers: Vec<String> = self.cluster.broker_names().map(str::to_owned).collect();
        let broker = brokers[self.rng.index(brokers.len())].clone();
        let queue_id = self.rng.below(self.config.queues_per_broker as u64) as i32;
        let body = Bytes::from(format!(
            "message {}",
            self.config.messages - self.to_produce
        ));
        let offset = self.cluster.produce(
            self.now,
            &self.config.topic,
            &broker,
            queue_id,
            body.clone(),
            Some("TagA"),
            None,
        );
        let mq = MessageQueue::new(&self.config.topic, &broker, queue_id);
        self.note(format!("produce {mq:?}@{offset}"));
        self.record_produced(mq, offset, body);
    }

    fn record_produced(&mut self, mq: MessageQueue, offset: i64, body: Bytes) {
        if self.rng.chance(self.config.poison_percent, 100) {
            self.poison.insert(body.clone());
        }
        self.origin.insert(body, (mq.clone(), offset));
        self.produced.entry(mq).or_default().insert(offset);
    }

    /// Remembers a send-back (or a re-send to a retry topic) going to the cluster, to learn
    /// from its answer that the message is safe in the broker.
    fn watch_send_back(&mut self, key: ConnKey, command: &Command) {
        if command.is_response() {
            return;
        }
        let body = match command.request_code() {
            RequestCode::CONSUMER_SEND_MSG_BACK => {
                let offset = command
                    .header::<proto::headers::ConsumerSendMsgBackRequest>()
                    .ok()
                    .map(|h| h.offset);
                let broker = self.key_addr.get(&key).and_then(|addr| {
                    self.cluster
                        .broker_names()
                        .find(|b| self.cluster.broker_addr(b) == *addr)
                        .map(str::to_owned)
                });
                match (broker, offset) {
                    (Some(broker), Some(offset)) => self
                        .cluster
                        .message_at_commit_log_offset(&broker, offset)
                        .map(|m| m.body.clone()),
                    _ => None,
                }
            }
            RequestCode::SEND_MESSAGE_V2 => command
                .header::<SendMessageRequestV2>()
                .ok()
                .filter(|h| h.topic.starts_with("%RETRY%"))
                .map(|_| command.body.clone()),
            _ => None,
        };
        if let Some(body) = body {
            self.send_backs.insert((key, command.opaque), body);
        }
    }

    fn inject_fault(&mut self) {
        let brokers: Vec<String> = self.cluster.broker_names().map(str::to_owned).collect();
        let broker = brokers[self.rng.index(brokers.len())].clone();
        if self.config.pauses && self.rng.chance(1, 3) {
            self.pause_a_queue(&broker);
            return;
        }
        match self.rng.below(9) {
            0 if self.rng.chance(1, 2) => {
                // Every connection to the broker goes dead without a FIN, as behind a firewall
                // that lost its state: nothing arrives either way, nothing closes; the
                // consumers' liveness probes must find out and reconnect.
                self.note(format!("fault: black-hole the connections to {broker}"));
                self.cluster.black_hole_connections(&broker);
            }
            0 => {
                // Drop a random connection, as a network failure would.
                let keys: Vec<ConnKey> = self.conn_owner.keys().copied().collect();
                if keys.is_empty() {
                    return;
                }
                let key = keys[self.rng.index(keys.len())];
                self.note(format!("fault: drop connection {key}"));
                self.cluster.disconnect(self.now, key);
                if let Some((i, conn)) = self.conn_owner.remove(&key) {
                    self.nodes[i].keys.remove(&conn);
                    let at = self.now + self.latency();
                    self.schedule(at, Ev::Lost(i, conn));
                }
            }
            1 => {
                self.note(format!("fault: restart {broker}"));
                self.restarted_at.insert(broker.clone(), self.now);
                self.cluster.restart_broker(self.now, &broker);
            }
            7 if !self.cluster.is_broker_down(&broker) => {
                // The broker process is gone for a few seconds: connections fail and the name
                // server drops it from every route until it is back.
                let down_for = Duration::from_millis(2000 + self.rng.below(4000));
                self.note(format!("fault: {broker} down for {down_for:?}"));
                self.restarted_at.insert(broker.clone(), self.now);
                self.cluster.set_broker_down(&broker, true);
                let at = self.now + down_for;
                self.schedule(at, Ev::BrokerUp(broker));
            }
            4 => {
                // An admin resets a queue's offsets to its beginning (client-side reset).
                let queue_id = self.rng.below(self.config.queues_per_broker as u64) as i32;
                let mq = MessageQueue::new(&self.config.topic, &broker, queue_id);
                self.note(format!("fault: reset {mq:?} to 0"));
                let table = BTreeMap::from([(mq, 0)]);
                let (group, topic) = (self.config.group.clone(), self.config.topic.clone());
                self.cluster.reset_offsets(self.now, &group, &topic, &table);
            }
            2 => {
                self.note(format!("fault: SYSTEM_BUSY x3 on {broker}"));
                self.cluster.inject(Fault::SystemBusy { broker, count: 3 });
            }
            3 => {
                let queue_id = self.rng.below(self.config.queues_per_broker as u64) as i32;
                self.note(format!("fault: OFFSET_MOVED to 0 on {broker}#{queue_id}"));
                self.cluster.inject(Fault::OffsetMoved {
                    broker,
                    topic: self.config.topic.clone(),
                    queue_id,
                    next_begin_offset: 0,
                });
            }
            5 => {
                // Loss: the next responses vanish, so requests must time out and retry.
                self.note("fault: drop the next 2 responses".into());
                self.cluster.inject(Fault::DropResponses { count: 2 });
            }
            6 => {
                // A slow handler: the next deliveries take longer than a revoke waits.
                self.note("fault: handlers stall for 8 s".into());
                self.slow_until = self.now + Duration::from_secs(3);
            }
            _ => {
                // A member leaves (never the last one).
                let live: Vec<usize> = (0..self.nodes.len())
                    .filter(|i| !self.nodes[*i].shutting_down)
                    .collect();
                if live.len() > 1 {
                    let i = live[self.rng.index(live.len())];
                    self.shutdown_node(i);
                }
            }
        }
    }

    /// Carries out every output of every node and the cluster until none is left.
    fn drain(&mut self) {
        loop {
            let mut progress = false;
            for i in 0..self.nodes.len() {
                while let Some(output) = self.nodes[i].consumer.poll_output() {
                    progress = true;
                    self.on_output(i, output);
                }
            }
            while let Some((key, command)) = self.cluster.poll_output() {
                progress = true;
                if let Some(&(i, conn)) = self.conn_owner.get(&key) {
                    let bytes = encode(&command, self.rng.chance(1, 2));
                    let at = self.ordered_at(key, false);
                    self.schedule(at, Ev::ToNode(i, conn, bytes));
                }
            }
            while let Some(key) = self.cluster.poll_closed() {
                progress = true;
                if let Some((i, conn)) = self.conn_owner.remove(&key) {
                    self.nodes[i].keys.remove(&conn);
                    let at = self.now + self.latency();
                    self.schedule(at, Ev::Lost(i, conn));
                }
            }
            if !progress {
                break;
            }
        }
    }

    fn on_output(&mut self, i: usize, output: Output) {
        match output {
            Output::Connect { conn, addr } => {
                *self.opened.entry(addr.clone()).or_default() += 1;
                self.next_key += 1;
                let key = self.next_key;
                let at = self.now + self.latency();
                if self.cluster.connect(key, &addr) {
                    self.key_addr.insert(key, addr.clone());
                    self.conn_owner.insert(key, (i, conn));
                    self.nodes[i].keys.insert(conn, key);
                    self.schedule(at, Ev::Connected(i, conn));
                } else {
                    self.schedule(at, Ev::Refused(i, conn));
                }
            }
            Output::Send { conn, command } => {
                if let Some(&key) = self.nodes[i].keys.get(&conn) {
                    let bytes = encode(&command, false);
                    let at = self.ordered_at(key, true);
                    self.schedule(at, Ev::ToCluster(key, bytes));
                }
            }
            Output::Revoking { request, queues } => {
                self.nodes[i].revoking.push((self.now, request, queues));
            }
            Output::Trace(batch) => {
                let records = match proto::trace::TraceRecord::decode_all(&batch.data) {
                    Ok(records) => records,
                    Err(e) => self.fail(&format!("node {i} traced undecodable records: {e}")),
                };
                self.fail_if(
                    records.len() != batch.records,
                    &format!(
                        "node {i}: a trace batch counts {} records, holds {}",
                        batch.records,
                        records.len()
                    ),
                );
                let now = self.now;
                self.nodes[i]
                    .traces
                    .extend(records.into_iter().map(|r| (now, r)));
            }
            Output::Close { conn } => {
                if let Some(key) = self.nodes[i].keys.remove(&conn) {
                    self.conn_owner.remove(&key);
                    self.cluster.disconnect(self.now, key);
                }
            }
            Output::Deliver(delivery) => {
                self.deliveries += 1;
                let owned = self.nodes[i]
                    .consumer
                    .assignment()
                    .any(|q| q == delivery.queue);
                self.fail_if(
                    !owned,
                    &format!(
                        "node {i} delivered {:?} which it does not own",
                        delivery.queue
                    ),
                );
                self.fail_if(
                    self.nodes[i].paused.contains(&delivery.queue),
                    &format!("node {i} delivered {:?}, which it paused", delivery.queue),
                );
                if self.config.mode == ConsumeMode::Orderly {
                    self.check_orderly_delivery(i, &delivery);
                }
                let origins: Vec<Option<Position>> = delivery
                    .messages
                    .iter()
                    .map(|m| self.origin.get(m.body()).cloned())
                    .collect();
                let poisoned = delivery
                    .messages
                    .iter()
                    .position(|m| self.poison.contains(m.body()));
                self.nodes[i].outstanding.insert(
                    delivery.id,
                    Outstanding {
                        queue: delivery.queue.clone(),
                        origins,
                    },
                );
                self.nodes[i].delivered.push((self.now, delivery.clone()));
                if self.nodes[i].hold {
                    self.nodes[i].held.push(delivery.id);
                    return;
                }
                let (lo, hi) = self.config.handler_time;
                let took =
                    lo + Duration::from_micros(self.rng.below((hi - lo).as_micros() as u64 + 1));
                let len = delivery.messages.len();
                let outcome = match poisoned {
                    // A poisoned message never succeeds; those before it may.
                    Some(0) => ConsumeOutcome::ReconsumeLater,
                    Some(k) => ConsumeOutcome::Retry {
                        consumed: k,
                        delay_level: 0,
                    },
                    None if self.rng.chance(self.config.reconsume_percent, 100) => {
                        match self.rng.below(3) {
                            0 => ConsumeOutcome::ReconsumeLater,
                            1 => ConsumeOutcome::Retry {
                                consumed: self.rng.index(len),
                                delay_level: 0,
                            },
                            _ => ConsumeOutcome::Suspend(Duration::from_millis(
                                10 + self.rng.below(200),
                            )),
                        }
                    }
                    None => ConsumeOutcome::Success,
                };
                let at = self.now + took;
                self.schedule(at, Ev::Complete(i, delivery.id, outcome));
            }
            Output::StoreOffsets(table) => {
                self.nodes[i].stored = table.into_iter().collect();
            }
            Output::Event(event) => {
                if let Event::Closed(report) = &event {
                    self.nodes[i].report = Some(report.clone());
                }
                if let Event::GaveUp { queue, offset } = &event {
                    self.nodes[i].gave_up.insert((queue.clone(), *offset));
                }
                self.nodes[i].events.push((self.now, event.clone()));
                self.note(format!("node {i}: {event:?}"));
            }
        }
    }

    fn check_invariants(&mut self) {
        let batch = 32;
        for (i, node) in self.nodes.iter().enumerate() {
            if node.consumer.is_closed() {
                continue;
            }
            let stats = node.consumer.stats();
            let total: usize = stats.queues.iter().map(|q| q.cached_messages).sum();
            for q in &stats.queues {
                if q.cached_messages > 1000 + batch {
                    self.fail(&format!(
                        "node {i} caches {} messages of {:?}",
                        q.cached_messages, q.queue
                    ));
                }
            }
            if total > 10_000 + batch * stats.queues.len().max(1) {
                self.fail(&format!("node {i} caches {total} messages in all"));
            }
        }
        // A committed offset never passes a message that was neither consumed nor safely
        // handed back to the broker for a retry.
        for (mq, offsets) in &self.produced {
            let Some(committed) = self.cluster.committed_offset(&self.config.group, mq) else {
                continue;
            };
            if let Some(missing) = offsets.range(..committed).find(|o| !self.is_done(mq, **o)) {
                self.fail(&format!(
                    "{mq:?} committed {committed} but offset {missing} was never acknowledged"
                ));
            }
        }
        // Broadcasting: a member's stored offsets never pass what that member consumed.
        for (i, node) in self.nodes.iter().enumerate() {
            for (mq, stored) in &node.stored {
                let Some(offsets) = self.produced.get(mq) else {
                    continue;
                };
                let position = |o: &i64| (mq.clone(), *o);
                if let Some(missing) = offsets.range(..*stored).find(|o| {
                    !node.consumed.contains(&position(o)) && !node.gave_up.contains(&position(o))
                }) {
                    self.fail(&format!(
                        "node {i} stored {mq:?} at {stored} but never consumed offset {missing}"
                    ));
                }
            }
        }
    }

    /// Consumed by someone, or safe in a retry or dead-letter queue.
    fn is_done(&self, mq: &MessageQueue, offset: i64) -> bool {
        self.acked.get(mq).is_some_and(|a| a.contains(&offset))
            || self.sent_back.get(mq).is_some_and(|a| a.contains(&offset))
    }

    /// Orderly: the node holds the queue's broker lock (or the broker just restarted and the
    /// node has not heard yet), no other delivery of the queue whose result would count is
    /// running anywhere, and every earlier message of the queue is done, with the batch
    /// holding the next messages without a gap.
    fn check_orderly_delivery(&self, i: usize, delivery: &Delivery) {
        let queue = &delivery.queue;
        if queue.topic() != self.config.topic {
            return;
        }
        let me = self.nodes[i].consumer.client_id();
        match self.cluster.lock_owner(&self.config.group, queue, self.now) {
            Some(owner) if owner == me => {}
            None if self.restarted_at.get(queue.broker_name()).is_some_and(|t| {
                self.now.saturating_duration_since(*t) < Duration::from_millis(100)
            }) => {}
            owner => self.fail(&format!(
                "node {i} delivered {queue:?} while the broker lock is {owner:?}"
            )),
        }
        for (j, node) in self.nodes.iter().enumerate() {
            for (id, out) in &node.outstanding {
                if out.queue == *queue && node.consumer.is_current(*id, self.now) {
                    self.fail(&format!(
                        "node {i} delivered {queue:?} while node {j} still consumes a batch of it"
                    ));
                }
            }
        }
        let offsets: Vec<i64> = delivery.messages.iter().map(|m| m.queue_offset()).collect();
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            return;
        };
        let produced = self.produced.get(queue).cloned().unwrap_or_default();
        if let Some(earlier) = produced.range(..first).find(|o| !self.is_done(queue, **o)) {
            self.fail(&format!(
                "node {i} delivered {queue:?}@{first} before offset {earlier} was consumed"
            ));
        }
        let expected: Vec<i64> = produced.range(first..=last).copied().collect();
        if expected != offsets {
            self.fail(&format!(
                "node {i} delivered {queue:?} offsets {offsets:?}, expected {expected:?}"
            ));
        }
    }

    fn check_final(&mut self) {
        if self.config.model == MessageModel::Broadcasting {
            return self.check_final_broadcast();
        }
        let max = self
            .nodes
            .first()
            .map_or(16, |n| n.consumer.config().effective_max_reconsume_times());
        // Every dead-lettered copy failed exactly `max + 1` times.
        let mut dead: BTreeSet<Position> = BTreeSet::new();
        for broker in self
            .cluster
            .broker_names()
            .map(str::to_owned)
            .collect::<Vec<_>>()
        {
            let dlq = MessageQueue::new(&dlq_topic(&self.config.group), &broker, 0);
            for (_, message) in self.cluster.messages(&dlq) {
                let Some(position) = self.origin.get(&message.body).cloned() else {
                    continue;
                };
                if message.reconsume_times != max.saturating_add(1) {
                    self.fail(&format!(
                        "{position:?} reached the dead-letter queue after {} deliveries, not {}",
                        message.reconsume_times,
                        max.saturating_add(1)
                    ));
                }
                dead.insert(position);
            }
        }
        if let Some(missing) = self.unfinished(&dead) {
            self.fail(&missing);
        }
        // Once membership is stable each queue has exactly one owner.
        let mut owners: BTreeMap<MessageQueue, Vec<usize>> = BTreeMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if node.shutting_down {
                continue;
            }
            for mq in node.consumer.assignment() {
                owners.entry(mq).or_default().push(i);
            }
        }
        for mq in self.topic_queues() {
            let n = owners.get(&mq).map_or(0, Vec::len);
            if n != 1 {
                self.fail(&format!(
                    "{mq:?} has {n} owners after the group settled: {:?}",
                    owners.get(&mq)
                ));
            }
        }
    }

    /// The first produced message neither consumed nor in `dead`, said as a failure.
    fn unfinished(&self, dead: &BTreeSet<Position>) -> Option<String> {
        for (mq, offsets) in &self.produced {
            let acked = self.acked.get(mq);
            if let Some(missing) = offsets.iter().find(|o| {
                !acked.is_some_and(|a| a.contains(o)) && !dead.contains(&(mq.clone(), **o))
            }) {
                return Some(format!(
                    "{mq:?} offset {missing} was produced but never consumed nor dead-lettered"
                ));
            }
        }
        None
    }

    /// A message not consumed (by a live member, broadcasting) although it was never sent back
    /// for a delayed retry, said as a failure.
    fn late_without_retry(&self) -> Option<String> {
        for (mq, offsets) in &self.produced {
            for offset in offsets {
                let position = (mq.clone(), *offset);
                if self.sent_back.get(mq).is_some_and(|s| s.contains(offset)) {
                    continue;
                }
                let late = if self.config.model == MessageModel::Broadcasting {
                    self.nodes.iter().position(|n| {
                        !n.shutting_down
                            && !n.consumed.contains(&position)
                            && !n.gave_up.contains(&position)
                    })
                } else {
                    (!self.acked.get(mq).is_some_and(|a| a.contains(offset))).then_some(0)
                };
                if let Some(node) = late {
                    return Some(format!(
                        "{mq:?}@{offset}, never sent back, is still not consumed (node {node}) at the end of \
                         the quiet phase"
                    ));
                }
            }
        }
        None
    }

    /// Whether a message is still on its way: not consumed (by every live member, when
    /// broadcasting), not dead-lettered, not given up on.
    fn work_left(&self) -> bool {
        if self.config.model == MessageModel::Broadcasting {
            return self.nodes.iter().filter(|n| !n.shutting_down).any(|node| {
                self.produced.iter().any(|(mq, offsets)| {
                    offsets.iter().any(|o| {
                        let position = (mq.clone(), *o);
                        !node.consumed.contains(&position) && !node.gave_up.contains(&position)
                    })
                })
            });
        }
        let mut dead = BTreeSet::new();
        for broker in self.cluster.broker_names() {
            let dlq = MessageQueue::new(&dlq_topic(&self.config.group), broker, 0);
            for (_, message) in self.cluster.messages(&dlq) {
                if let Some(position) = self.origin.get(&message.body) {
                    dead.insert(position.clone());
                }
            }
        }
        self.unfinished(&dead).is_some()
    }

    /// Broadcasting: every member still running consumed (or gave up on) every message, and
    /// owns every queue.
    fn check_final_broadcast(&mut self) {
        let queues = self.topic_queues();
        for (i, node) in self.nodes.iter().enumerate() {
            if node.shutting_down {
                continue;
            }
            for (mq, offsets) in &self.produced {
                for offset in offsets {
                    let position = (mq.clone(), *offset);
                    if !node.consumed.contains(&position) && !node.gave_up.contains(&position) {
                        self.fail(&format!("node {i} never consumed {mq:?}@{offset}"));
                    }
                }
            }
            let owned: BTreeSet<MessageQueue> = node.consumer.assignment().collect();
            if let Some(missing) = queues.iter().find(|q| !owned.contains(*q)) {
                self.fail(&format!("node {i} does not own {missing:?}"));
            }
        }
    }

    /// Every queue of the world's topic.
    fn topic_queues(&self) -> Vec<MessageQueue> {
        let mut queues = Vec::new();
        for broker in self.cluster.broker_names() {
            for queue_id in 0..self.config.queues_per_broker {
                queues.push(MessageQueue::new(&self.config.topic, broker, queue_id));
            }
        }
        queues
    }

    /// Deliveries handed out so far.
    pub fn deliveries(&self) -> u64 {
        self.deliveries
    }

    /// Messages produced so far.
    pub fn produced(&self) -> usize {
        self.produced.values().map(BTreeSet::len).sum()
    }

    fn latency(&mut self) -> Duration {
        let (lo, hi) = self.config.latency;
        lo + Duration::from_micros(self.rng.below((hi - lo).as_micros() as u64 + 1))
    }

    /// A delivery time after every earlier one on the same connection and direction.
    fn ordered_at(&mut self, key: ConnKey, to_cluster: bool) -> Instant {
        let at = self.now + self.latency();
        let last = self.last_at.entry((key, to_cluster)).or_insert(at);
        let at = at.max(*last);
        *last = at;
        at
    }

    fn schedule(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at, self.seq), ev);
    }

    fn note(&mut self, line: String) {
        let t = self.now.saturating_duration_since(self.epoch);
        self.trace.push(format!("{:>9.3}s {line}", t.as_secs_f64()));
    }

    fn fail_if(&self, condition: bool, what: &str) {
        if condition {
            self.fail(what);
        }
    }

    fn fail(&self, what: &str) -> ! {
        let mut tail = String::new();
        for line in self.trace.iter().rev().take(60).rev() {
            let _ = writeln!(tail, "  {line}");
        }
        panic!(
            "simulation failed: {what}\nreplay with SIM_SEED={}\nlast trace lines:\n{tail}",
            self.config.seed
        );
    }
}

fn encode(command: &Command, binary: bool) -> Bytes {
    let mut buf = BytesMut::new();
    let encoding = if binary {
        HeaderEncoding::Binary
    } else {
        HeaderEncoding::Json
    };
    frame::encode(command, encoding, &mut buf).expect("simulated commands fit a frame");
    buf.freeze()
}

fn decode(bytes: &Bytes) -> Command {
    let mut buf = BytesMut::from(&bytes[..]);
    FrameDecoder::default()
        .decode(&mut buf)
        .expect("the codec decodes what it encoded")
        .expect("one whole frame")
}

/// Hooks for scenario tests that steer the world into one precise situation.
impl World {
    /// How many connections the consumers asked to open to `addr` so far.
    pub fn connections_opened(&self, addr: &str) -> usize {
        self.opened.get(addr).copied().unwrap_or(0)
    }

    /// The origin of the virtual clock.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Starts one more consumer, as [`World::add_consumer`] does, with its configuration
    /// further changed by `adjust` (after [`WorldConfig::consumer_config`]): per-node settings.
    pub fn add_consumer_with(
        &mut self,
        adjust: impl FnOnce(ConsumerConfig) -> ConsumerConfig,
    ) -> usize {
        let index = self.nodes.len();
        let mut config = ConsumerConfig::new(
            self.config.group.clone(),
            vec![self.cluster.namesrv_addr().to_owned()],
        );
        config.consume_from = ConsumeFrom::First;
        config.seed = self.config.seed.wrapping_add(index as u64);
        config.consume_mode = self.config.mode;
        config.message_model = self.config.model;
        config.max_reconsume_times = self.config.max_reconsume_times;
        if self.config.acl {
            config.credentials = Some(Credentials::new(SIM_ACCESS_KEY, SIM_SECRET_KEY));
        }
        config.rate_limit = self
            .config
            .rate_limit
            .map(consumer_core::rate::RateLimit::messages);
        config.trace = self.config.trace;
        let config = adjust((self.config.consumer_config)(config));
        let unix_ms = self.cluster.wall_millis(self.now);
        let mut consumer = Consumer::new(
            config,
            format!("10.0.0.{index}@sim#{index}"),
            self.now,
            unix_ms,
        )
        .expect("the test's consumer configuration is valid");
        consumer
            .subscribe(self.now, &self.config.topic, "*")
            .expect("the simulation's topic is valid");
        self.nodes.push(Node {
            consumer,
            keys: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            report: None,
            shutting_down: false,
            events: Vec::new(),
            delivered: Vec::new(),
            gave_up: BTreeSet::new(),
            consumed: BTreeSet::new(),
            stored: BTreeMap::new(),
            hold: false,
            held: Vec::new(),
            revoking: Vec::new(),
            traces: Vec::new(),
            paused: BTreeSet::new(),
        });
        self.note(format!("node {index} starts"));
        index
    }

    /// Runs until `deadline` as [`World::run_until`] does, and calls `check` after every step
    /// (after the invariants), so a test can watch a property that must hold throughout.
    pub fn run_until_with(&mut self, deadline: Instant, mut check: impl FnMut(&Self)) {
        loop {
            self.drain();
            self.check_invariants();
            check(self);
            let next = [
                self.queue.keys().next().map(|(at, _)| *at),
                self.cluster.poll_timeout(),
            ]
            .into_iter()
            .chain(self.nodes.iter().map(|n| n.consumer.poll_timeout()))
            .flatten()
            .min();
            let Some(next) = next else { break };
            if next > deadline {
                break;
            }
            self.now = self.now.max(next);
            self.step();
        }
        self.now = self.now.max(deadline);
    }

    /// Starts a graceful shutdown of node `i` now (does not run the world).
    pub fn shutdown_one(&mut self, i: usize) {
        self.shutdown_node(i);
    }

    /// Has node `i`'s handler finish delivery `id` with `outcome` at `at` (not before now),
    /// taking it out of [`Node::held`].
    pub fn complete_at(&mut self, i: usize, id: DeliveryId, outcome: ConsumeOutcome, at: Instant) {
        self.nodes[i].held.retain(|held| *held != id);
        let at = at.max(self.now);
        self.schedule(at, Ev::Complete(i, id, outcome));
    }

    /// Has node `i`'s handler finish every held delivery successfully at `at`.
    pub fn release_held(&mut self, i: usize, at: Instant) {
        for id in std::mem::take(&mut self.nodes[i].held) {
            self.complete_at(i, id, ConsumeOutcome::Success, at);
        }
    }

    /// Produces `n` messages (tag `TagA`) into `queue` now, recorded like the configured
    /// messages, so the invariants and the final check cover them; returns their offsets.
    pub fn produce_to(&mut self, queue: &MessageQueue, n: usize) -> Vec<i64> {
        let mut offsets = Vec::with_capacity(n);
        for k in 0..n {
            let body = Bytes::from(format!("{queue:?} message {k} #{}", self.origin.len()));
            let offset = self.cluster.produce(
                self.now,
                queue.topic(),
                queue.broker_name(),
                queue.queue_id(),
                body.clone(),
                Some("TagA"),
                None,
            );
            self.origin.insert(body, (queue.clone(), offset));
            self.produced
                .entry(queue.clone())
                .or_default()
                .insert(offset);
            offsets.push(offset);
        }
        self.note(format!("produce {n} into {queue:?}: {offsets:?}"));
        offsets
    }

    /// The offsets of `queue` whose delivery some handler completed successfully.
    pub fn acknowledged(&self, queue: &MessageQueue) -> BTreeSet<i64> {
        self.acked.get(queue).cloned().unwrap_or_default()
    }

    /// The last `n` lines of the trace, for assertion messages.
    pub fn trace_tail(&self, n: usize) -> String {
        let skip = self.trace.len().saturating_sub(n);
        self.trace[skip..].join("\n")
    }

    /// Node `i`'s open connection to `addr` (e.g. [`SimCluster::broker_addr`]), as the
    /// cluster names it: where [`SimCluster::request_client`] reaches the node.
    pub fn conn_key(&self, i: usize, addr: &str) -> Option<ConnKey> {
        self.nodes[i].keys.values().copied().find(|key| {
            self.key_addr.get(key).is_some_and(|a| a == addr) && self.cluster.is_connected(*key)
        })
    }

    /// Poll mode: node `i`'s application takes up to `max` messages now
    /// (`Consumer::poll_messages`). Taken messages count as consumed, for the invariants and
    /// [`World::acknowledged`], as the consumer counts them.
    pub fn poll(&mut self, i: usize, max: usize) -> Option<Polled> {
        let polled = self.nodes[i].consumer.poll_messages(self.now, max)?;
        let offsets: Vec<i64> = polled.messages.iter().map(|m| m.queue_offset()).collect();
        for message in &polled.messages {
            if let Some((mq, offset)) = self.origin.get(message.body()).cloned() {
                self.nodes[i].consumed.insert((mq.clone(), offset));
                self.acked.entry(mq).or_default().insert(offset);
            }
        }
        self.note(format!("node {i} polls {:?}: {offsets:?}", polled.queue));
        self.drain();
        Some(polled)
    }

    /// Poll mode: node `i`'s application hands `polled` back unread (`Consumer::unread`).
    /// Taken back, its messages no longer count as consumed by node `i`.
    pub fn unread(&mut self, i: usize, polled: Polled) -> bool {
        let offsets: Vec<i64> = polled.messages.iter().map(|m| m.queue_offset()).collect();
        let origins: Vec<(MessageQueue, i64)> = polled
            .messages
            .iter()
            .filter_map(|m| self.origin.get(m.body()).cloned())
            .collect();
        let queue = polled.queue.clone();
        let taken_back = self.nodes[i].consumer.unread(self.now, polled);
        if taken_back {
            for (mq, offset) in origins {
                self.nodes[i].consumed.remove(&(mq.clone(), offset));
                if let Some(acked) = self.acked.get_mut(&mq) {
                    acked.remove(&offset);
                }
            }
        }
        self.note(format!(
            "node {i} hands back {queue:?}: {offsets:?} (taken back: {taken_back})"
        ));
        self.drain();
        taken_back
    }

    /// Broadcasting: starts a new process in place of node `from` (shut down first), which
    /// loads the offset table `from` last stored (`Consumer::load_offsets`) and inherits what
    /// `from` consumed, so the stored-offset invariant covers it as it covered `from`.
    pub fn add_consumer_resuming(&mut self, from: usize) -> usize {
        let stored = self.nodes[from].stored.clone();
        let consumed = self.nodes[from].consumed.clone();
        let gave_up = self.nodes[from].gave_up.clone();
        let index = self.add_consumer();
        let node = &mut self.nodes[index];
        node.consumer.load_offsets(stored.clone());
        node.consumed = consumed;
        node.gave_up = gave_up;
        self.note(format!("node {index} resumes node {from} at {stored:?}"));
        index
    }
}
