//! [`World`]: several real [`Consumer`]s against the [`SimCluster`], over a simulated network
//! with seeded latency, on a virtual clock, with seeded faults, checking invariants after
//! every step. Every command crosses the network as bytes through the real codec.
//!
//! A failing run panics with its seed (`SIM_SEED=<seed>` replays it) and the tail of a
//! readable trace.
//!
//! By duty: this file holds the configuration, the nodes and the event loop; `network` carries
//! outputs and answers, `faults` injects the seeded faults, `invariants` checks what must hold,
//! `api` is what scenario tests call.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use consumer_core::{
    ConnId, ConsumeMode, ConsumeOutcome, Consumer, ConsumerConfig, Delivery, DeliveryId, Event,
    MessageModel, RequestId, ShutdownReport,
};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use crate::sim::{ConnKey, SimCluster, SimConfig, SimRng};
use network::decode;

mod api;
mod faults;
mod invariants;
mod network;

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
    /// Messages produced, spread over the first half of the run (or [`WorldConfig::burst`]).
    pub messages: usize,
    /// All messages produced within this long of the start instead, so caches fill.
    pub burst: Option<Duration>,
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
    /// Poll mode: the application of every consumer takes what is ready every 5 to 50 ms (up
    /// to 4 takes of 32), as a lite pull consumer's loop does; every message taken counts as
    /// consumed (auto-commit).
    pub poller: bool,
    /// Every broker has a slave (`SimConfig::slaves`), copying its master this far behind
    /// (`SimConfig::replication_lag`). With faults, one master is then also lost for 60 to
    /// 180 s while its slave serves, and comes back; and messages are produced only to brokers
    /// whose master is up, as a producer cannot write to a slave (Java's producers skip a
    /// broker name without a master in its route).
    pub slaves: Option<Duration>,
    /// Adjusts the simulated cluster's configuration (after the world's own settings).
    pub cluster_config: fn(SimConfig) -> SimConfig,
    /// Small cache limits for every consumer, `(per queue, consumer-wide)` messages
    /// (`max_cached_messages_per_queue`, `max_cached_messages_total`), so that the runs reach
    /// them and the invariants that bound the caches can fail: each limit given must have been
    /// reached by the end of the run, or the run fails.
    pub cache_limits: Option<(usize, usize)>,
    /// How much later than it arrives the cluster handles each `UPDATE_CONSUMER_OFFSET`
    /// (zero: at once, in arrival order). Apache's brokers run commits on the consume-manage
    /// thread pool and locks and unlocks on the admin pool (`BrokerController.registerProcessor`),
    /// so a commit can take effect after requests sent behind it on the same connection.
    pub commit_lag: Duration,
    /// The group changes gracefully and nothing else goes wrong: the faults are members
    /// joining, members shutting down, and rolling restarts (a member shuts down and a new
    /// one joins a moment later), no more; handlers never fail.
    pub graceful_churn: bool,
    /// No message may be consumed twice (checked as each is): with `graceful_churn`, a
    /// consumer's quiet hand-over must make every group change duplicate-free
    /// (`ConsumerConfig::handover_timeout`).
    pub forbid_duplicates: bool,
    /// The consumers hand out their deliveries on demand, one at a time as the driver asks
    /// for them (`Consumer::deliver_on_demand`, `Consumer::deliver_now`), and half of the
    /// handlers finish as theirs is handed out (`Handled::Done`), settling it in the same
    /// call; the rest run for their time as with [`WorldConfig::handler_time`].
    pub deliver_on_demand: bool,
}

/// Clustering: how long any message may wait to be first consumed after it was produced or
/// the last fault before its consumption ended, whichever is later (messages sent back for a
/// delayed retry aside). A fault that loses answers lasts, for this, until a lost pull has
/// timed out (`pull_timeout`, 30 s, Java's `CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND`): no client
/// can know sooner on a live connection; a master lost while its slave serves
/// ([`WorldConfig::slaves`]) lasts until 30 s after it is back, as no client learns of its
/// return before its next route refresh. What bounds it: a member that left is noticed at the
/// next rebalance (20 s) at worst, and a connection dead without a FIN within the probe's 18 s.
/// Measured over the 500 default seeds: at most 28.5 s (concurrent) and 17.7 s (poll mode).
pub const MESSAGE_WAIT_BOUND: Duration = Duration::from_secs(40);

/// The same for orderly consumption, longer: a member that vanished without unlocking (its
/// connection dead) holds its queues' broker locks until they expire, 60 s after its last
/// renewal (Java's `REBALANCE_LOCK_MAX_LIVE_TIME`), and the next owner's lock goes at its
/// next renewal (20 s). Measured over the 500 default seeds: at most 66.6 s.
pub const ORDERLY_MESSAGE_WAIT_BOUND: Duration = Duration::from_secs(90);

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
            poller: false,
            slaves: None,
            cluster_config: |c| c,
            cache_limits: None,
            burst: None,
            commit_lag: Duration::ZERO,
            graceful_churn: false,
            forbid_duplicates: false,
            deliver_on_demand: false,
        }
    }

    /// Graceful group changes only ([`WorldConfig::graceful_churn`]) with hand-overs on
    /// (`handover_timeout` 6 s) in a concurrent
    /// clustering group of three over a steady stream of 600 messages (handlers of 1 to 40 ms,
    /// so deliveries are in flight at every change), nothing consumed twice
    /// ([`WorldConfig::forbid_duplicates`]); odd seeds hand deliveries out on demand
    /// ([`WorldConfig::deliver_on_demand`]).
    pub fn graceful(seed: u64) -> Self {
        let mut config = Self::new(seed);
        config.graceful_churn = true;
        config.forbid_duplicates = true;
        config.consumers = 3;
        config.messages = 600;
        config.reconsume_percent = 0;
        config.handler_time = (Duration::from_millis(1), Duration::from_millis(40));
        config.consumer_config = |mut c| {
            c.handover_timeout = Duration::from_secs(6);
            c
        };
        config.deliver_on_demand = seed % 2 == 1;
        config
    }
}

impl WorldConfig {
    /// The seed's variant of the standard run, rotating through the consumer's modes:
    /// concurrent clustering; the same with poisoned messages and `max_reconsume_times` 2
    /// (dead-letter path); orderly clustering with poisoned messages; broadcasting with
    /// poisoned messages. Every other round of four delivers batches of 3 messages instead of 1.
    /// Every third seed runs with ACL on ([`WorldConfig::acl`]), across all of those; every
    /// fifth with a rate limit of 25 messages a second, and every other one with message trace.
    /// Every tenth (seeds ending in 9) runs in poll mode instead, its application polling
    /// ([`WorldConfig::poller`]). Every seventh (3, 10, 17, ...: every mode and model, with and
    /// without ACL, over the cycle) runs with slaves copying 0 to 300 ms behind and a master
    /// lost for minutes ([`WorldConfig::slaves`]). Every other run of three seeds (3 to 5, 9
    /// to 11, ...) hands deliveries out on demand, as the driver does
    /// ([`WorldConfig::deliver_on_demand`]).
    pub fn rotating(seed: u64) -> Self {
        let mut config = Self::new(seed);
        if seed % 7 == 3 {
            let mut state = seed;
            let lag = crate::sim::splitmix64(&mut state) % 301;
            config.slaves = Some(Duration::from_millis(lag));
        }
        // Caches that fill: a small per-queue limit, or a small consumer-wide one, and a
        // backlog big enough to reach it.
        match seed % 11 {
            4 => config.cache_limits = Some((8, 10_000)),
            8 => config.cache_limits = Some((1_000, 12)),
            _ => {}
        }
        if config.cache_limits.is_some() {
            // Produced faster than handled: a backlog the pulls bring in whole batches.
            config.messages = 300;
            config.burst = Some(Duration::from_millis(200));
            config.handler_time = (Duration::from_millis(20), Duration::from_millis(60));
        }
        config.acl = seed % 3 == 2;
        config.rate_limit = (seed % 5 == 3).then_some(25);
        config.pauses = seed % 7 == 5;
        config.trace = seed % 2 == 1;
        config.deliver_on_demand = (seed / 3) % 2 == 1;
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
        if seed % 10 == 9 {
            // Poll mode, clustering: no handler, so nothing fails or is traced.
            config.mode = ConsumeMode::Poll;
            config.model = MessageModel::Clustering;
            config.poller = true;
            config.poison_percent = 0;
            config.reconsume_percent = 0;
            config.max_reconsume_times = None;
            config.trace = false;
        }
        config
    }
}

#[derive(Debug)]
enum Ev {
    ToCluster(ConnKey, Bytes),
    /// A request the cluster read earlier and handles now ([`WorldConfig::commit_lag`]).
    Lagged(ConnKey, Command),
    ToNode(usize, ConnId, Bytes),
    Connected(usize, ConnId),
    Refused(usize, ConnId),
    Lost(usize, ConnId),
    Complete(usize, DeliveryId, ConsumeOutcome),
    Produce,
    Fault,
    Join,
    BrokerUp(String),
    /// This broker's master is lost for this long ([`WorldConfig::slaves`]).
    MasterLost(String, Duration),
    /// The lost master of this broker is back.
    MasterBack(String),
    /// The partition of this address ends.
    Heal(String),
    /// Node `.0`'s application takes what is ready ([`WorldConfig::poller`]).
    Poll(usize),
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

/// A partition between every client and one address.
#[derive(Debug)]
struct Partition {
    /// When it began.
    since: Instant,
    /// Connections the consumers tried to open to the address meanwhile.
    connects: usize,
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
    /// Killed on the spot ([`World::kill`]): it handles nothing any more.
    killed: bool,
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
    /// With [`WorldConfig::deliver_on_demand`]: whether the handlers finish as their
    /// deliveries are handed out (`Some(true)`: all; `Some(false)`: none); `None`, half of
    /// them at random. Never while [`Node::hold`] is set.
    pub at_once: Option<bool>,
    /// With `revoke_hook`: every revoke the consumer announced ([`Output::Revoking`](consumer_core::Output::Revoking)), with
    /// the time it did; the world never answers them (a test calls `revoke_done`, or the
    /// revoke deadline ends them).
    pub revoking: Vec<(Instant, RequestId, Vec<MessageQueue>)>,
    /// With `trace`: every message trace record the consumer handed out, with the time.
    pub traces: Vec<(Instant, proto::trace::TraceRecord)>,
    /// Queues the node's application paused and has not resumed.
    pub paused: BTreeSet<MessageQueue>,
    /// Its cache limits, per queue and consumer-wide (messages).
    pub cache_limits: (usize, usize),
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
    /// Masters lost for minutes ([`Ev::MasterLost`]), and until when: no shorter outage
    /// brings them back meanwhile.
    lost_until: BTreeMap<String, Instant>,
    /// The most messages any consumer cached of one queue, and in all.
    pub cached_at_most: (usize, usize),
    /// When the scheduled master loss ends, if one is: the quiet phase starts no earlier.
    outage_end: Option<Instant>,
    /// Requests the consumers sent, by address and code.
    sent: BTreeMap<String, BTreeMap<RequestCode, usize>>,
    /// Addresses cut off from every client until the time given: connections to them carry
    /// nothing and new ones hang (`World::partition`).
    partitioned: BTreeMap<String, Partition>,
    /// Connections that carry nothing either way, for ever (a firewall that lost their state).
    black_holed: BTreeSet<ConnKey>,
    /// When each message was produced, and first consumed.
    produced_at: BTreeMap<Position, Instant>,
    first_consumed: BTreeMap<Position, Instant>,
    /// How many times each message was consumed (by any node).
    consumptions: BTreeMap<Position, u32>,
    /// Every fault (or membership change): when it began and ended.
    faults: Vec<(Instant, Instant)>,
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
        if let Some(lag) = config.slaves {
            sim.slaves = sim.brokers.clone();
            sim.replication_lag = lag;
        }
        let mut cluster = SimCluster::new((config.cluster_config)(sim));
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
            lost_until: BTreeMap::new(),
            cached_at_most: (0, 0),
            outage_end: None,
            sent: BTreeMap::new(),
            partitioned: BTreeMap::new(),
            black_holed: BTreeSet::new(),
            produced_at: BTreeMap::new(),
            first_consumed: BTreeMap::new(),
            consumptions: BTreeMap::new(),
            faults: Vec::new(),
            deliveries: 0,
            to_produce: config.messages,
            slow_until: epoch,
            config,
        };
        for _ in 0..world.config.consumers {
            world.add_consumer();
        }
        let active = world.config.active;
        let over = world.config.burst.unwrap_or(active / 2);
        for i in 0..world.config.messages {
            let at = world.epoch + over.mul_f64(i as f64 / world.config.messages.max(1) as f64);
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
            if world.config.slaves.is_some() && !world.config.graceful_churn {
                world.schedule_master_loss();
            }
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
        // and for poisoned messages to go through their delayed retries; counted from the end
        // of a master loss that outlasts the active phase, as what only that master holds
        // (and, orderly, its queues' locks) waits for it.
        let quiet = if self.config.poison_percent > 0 {
            150
        } else {
            90
        };
        let quiet_from = self
            .outage_end
            .map_or(active_end, |end| end.max(active_end));
        self.run_until(quiet_from + Duration::from_secs(quiet));
        // A message never handed back to the broker has no excuse to be late: it must be done
        // by the end of the quiet phase.
        if let Some(late) = self.late_without_retry() {
            self.fail(&late);
        }
        let bound = match self.config.mode {
            ConsumeMode::Orderly => ORDERLY_MESSAGE_WAIT_BOUND,
            _ => MESSAGE_WAIT_BOUND,
        };
        if self.config.model == MessageModel::Clustering
            && let Some((waited, (mq, offset))) = self.longest_wait()
            && waited > bound
        {
            self.fail(&format!(
                "{mq:?}@{offset} waited {waited:?} to be consumed after it was produced or the \
                 last fault before it ended (bound {bound:?})"
            ));
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
                !node.killed && !node.consumer.is_closed(),
                &format!("node {i} did not close"),
            );
        }
        if self.config.trace {
            self.check_traces();
        }
        if let Some((queue, total)) = self.config.cache_limits {
            let (most_queue, most_total) = self.cached_at_most;
            let reached = if queue < total {
                most_queue >= queue
            } else {
                most_total >= total
            };
            self.fail_if(
                !reached,
                &format!(
                    "the cache limits {queue} per queue and {total} in all were never reached \
                     (at most {most_queue} and {most_total}): the cache bounds proved nothing"
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
            if !self.nodes[i].killed
                && self.nodes[i]
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
                if self.cluster.is_connected(key) && !self.black_holed.contains(&key) {
                    let command = decode(&bytes);
                    self.watch_send_back(key, &command);
                    let lag = self.config.commit_lag;
                    if !lag.is_zero()
                        && command.request_code() == RequestCode::UPDATE_CONSUMER_OFFSET
                    {
                        self.note(format!("cluster: a commit on {key:?} waits {lag:?}"));
                        self.schedule(now + lag, Ev::Lagged(key, command));
                    } else {
                        self.cluster.handle_command(now, key, command);
                    }
                }
            }
            Ev::Lagged(key, command) => {
                if self.cluster.is_connected(key) {
                    self.cluster.handle_command(now, key, command);
                }
            }
            Ev::ToNode(i, conn, bytes) => {
                let live = self
                    .nodes
                    .get(i)
                    .and_then(|n| n.keys.get(&conn))
                    .is_some_and(|key| !self.black_holed.contains(key));
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
            Ev::Connected(i, _) | Ev::Refused(i, _) | Ev::Lost(i, _) | Ev::Complete(i, ..)
                if self.nodes[i].killed => {}
            Ev::Connected(i, conn) => self.nodes[i].consumer.handle_connected(now, conn),
            Ev::Refused(i, conn) | Ev::Lost(i, conn) => {
                if let Some(key) = self.nodes[i].keys.remove(&conn) {
                    self.conn_owner.remove(&key);
                }
                self.nodes[i].consumer.handle_disconnected(now, conn);
            }
            Ev::Complete(i, id, outcome) => {
                if let Some(out) = self.nodes[i].outstanding.remove(&id) {
                    self.handler_done(i, out.origins, outcome);
                }
                self.nodes[i].consumer.complete(now, id, outcome);
            }
            Ev::Produce => self.produce_one(),
            Ev::Fault => self.inject_fault(),
            Ev::Join => {
                self.fault_lasts(Duration::ZERO);
                self.add_consumer();
            }
            Ev::Heal(addr) => self.heal(&addr),
            Ev::Poll(i) => self.application_polls(i),
            Ev::BrokerUp(broker) => {
                if self
                    .lost_until
                    .get(&broker)
                    .is_some_and(|until| *until > now)
                {
                    // A short outage ends inside a master loss: the master stays lost.
                    return;
                }
                self.note(format!("{broker} is up again"));
                self.cluster.set_broker_down(&broker, false);
            }
            Ev::MasterLost(broker, lasts) => self.lose_master(&broker, lasts),
            Ev::MasterBack(broker) => self.master_back(&broker),
            Ev::Resume(i, queue) => {
                self.note(format!("node {i} resumes {queue:?}"));
                self.nodes[i].paused.remove(&queue);
                let now = self.now;
                self.nodes[i].consumer.resume(now, &queue);
            }
        }
    }

    fn produce_one(&mut self) {
        if self.to_produce == 0 {
            return;
        }
        let mut brokers: Vec<String> = self.cluster.broker_names().map(str::to_owned).collect();
        if self.config.slaves.is_some() {
            // A producer writes only to masters: a broker whose master is down is skipped, and
            // with none up the send is tried again a second later.
            brokers.retain(|b| !self.cluster.is_broker_down(b));
            if brokers.is_empty() {
                let at = self.now + Duration::from_secs(1);
                self.schedule(at, Ev::Produce);
                return;
            }
        }
        self.to_produce -= 1;
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
        self.produced_at.insert((mq.clone(), offset), self.now);
        self.produced.entry(mq).or_default().insert(offset);
    }

    /// Node `i`'s application consumed the message produced at `mq`/`offset`.
    /// Node `i`'s handler finished a delivery of the messages from `origins` with `outcome`:
    /// those it consumed are consumed now (unless the node closed meanwhile).
    fn handler_done(&mut self, i: usize, origins: Vec<Option<Position>>, outcome: ConsumeOutcome) {
        if self.nodes[i].consumer.is_closed() {
            return;
        }
        let consumed = match outcome {
            ConsumeOutcome::Success => origins.len(),
            ConsumeOutcome::Retry { consumed, .. } => consumed,
            _ => 0,
        };
        for (mq, offset) in origins.into_iter().take(consumed).flatten() {
            self.consumed_now(i, mq, offset);
        }
    }

    fn consumed_now(&mut self, i: usize, mq: MessageQueue, offset: i64) {
        self.first_consumed
            .entry((mq.clone(), offset))
            .or_insert(self.now);
        let times = self.consumptions.entry((mq.clone(), offset)).or_default();
        *times += 1;
        let times = *times;
        if times > 1 && self.config.forbid_duplicates {
            self.fail(&format!(
                "node {i} consumed {mq:?}@{offset} again (time {times}): only graceful group \
                 changes happened, and a hand-over must not duplicate anything"
            ));
        }
        self.nodes[i].consumed.insert((mq.clone(), offset));
        self.acked.entry(mq).or_default().insert(offset);
    }

    /// A fault (or a membership change) that began now and lasts `lasts`.
    fn fault_lasts(&mut self, lasts: Duration) {
        self.faults.push((self.now, self.now + lasts));
    }
}
