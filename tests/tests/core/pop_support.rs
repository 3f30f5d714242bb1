//! A small world for the pop scenarios: [`PopConsumer`]s against the simulated cluster on a
//! virtual clock, every command through the codec, handlers that take a given time and give a
//! given outcome, members that can be killed. It checks, at every delivery, that no message is
//! with two live members' handlers at once (the broker keeps it invisible meanwhile, and
//! renewal keeps it so while a handler runs long), unless a renewal of it failed first (its
//! invisibility may then lapse, and the message comes back: at-least-once).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use consumer_core::pop::{PopConfig, PopConsumer, PopDeliveryId, PopEvent, PopOutput, PopStats};
use consumer_core::{ConnId, ConsumeOutcome, Wire};
use proto::message::property;
use proto::{Command, FrameDecoder, HeaderEncoding, MessageQueue, frame};
use rocketmq_tests::sim::{ConnKey, SimCluster, SimConfig, dlq_topic};

/// The group of every scenario.
pub(crate) const GROUP: &str = "pop-group";
/// The topic of every scenario.
pub(crate) const TOPIC: &str = "PopTopic";
/// The one broker.
pub(crate) const BROKER: &str = "broker-a";

/// What a handler does with one message: how long it takes and what it answers.
pub(crate) type Handler =
    Box<dyn FnMut(usize, &proto::message::Message) -> (Duration, ConsumeOutcome)>;

struct Running {
    delivery: PopDeliveryId,
    done_at: Instant,
    outcome: ConsumeOutcome,
    keys: Vec<String>,
    /// Each message's queue and offset, as its receipt names them.
    at: Vec<(i32, i64)>,
    /// Keys of this delivery whose renewal failed.
    lapsed: BTreeSet<String>,
}

struct Member {
    pop: PopConsumer,
    alive: bool,
    conns: BTreeMap<ConnId, ConnKey>,
    running: Vec<Running>,
    closed: bool,
}

/// One delivery as the world saw it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) member: usize,
    pub(crate) key: String,
    pub(crate) reconsume_times: i32,
    pub(crate) at: Duration,
}

/// The world.
pub(crate) struct PopWorld {
    pub(crate) cluster: SimCluster,
    pub(crate) epoch: Instant,
    pub(crate) now: Instant,
    members: Vec<Member>,
    by_key: BTreeMap<ConnKey, (usize, ConnId)>,
    next_key: ConnKey,
    handler: Handler,
    /// Every delivery, in order.
    pub(crate) seen: Vec<Seen>,
    /// Keys whose handler succeeded, with the member.
    pub(crate) consumed: BTreeMap<String, usize>,
    /// Every produced key.
    pub(crate) produced: BTreeSet<String>,
    pub(crate) events: Vec<(usize, PopEvent)>,
}

impl PopWorld {
    /// A cluster of one broker with [`TOPIC`] of `queues` queues, and no members yet.
    pub(crate) fn new(queues: i32, handler: Handler) -> Self {
        let epoch = Instant::now();
        let mut config = SimConfig::new(epoch);
        config.brokers = vec![BROKER.to_owned()];
        let mut cluster = SimCluster::new(config);
        cluster.create_topic(TOPIC, queues);
        Self {
            cluster,
            epoch,
            now: epoch,
            members: Vec::new(),
            by_key: BTreeMap::new(),
            next_key: 0,
            handler,
            seen: Vec::new(),
            consumed: BTreeMap::new(),
            produced: BTreeSet::new(),
            events: Vec::new(),
        }
    }

    /// A pop config for this world (short invisibility so scenarios stay short in virtual time).
    pub(crate) fn config(&self) -> PopConfig {
        let mut config = PopConfig::new(GROUP, vec![self.cluster.namesrv_addr().to_owned()]);
        config.invisible_time = Duration::from_secs(20);
        config.renew_ahead = Duration::from_secs(5);
        config
    }

    /// Adds a member subscribed to [`TOPIC`]; returns its index.
    pub(crate) fn add_member(&mut self, config: PopConfig) -> usize {
        let i = self.members.len();
        let unix = self.cluster.wall_millis(self.now);
        let mut pop = PopConsumer::new(config, format!("10.0.0.{}@pop", i + 1), self.now, unix)
            .expect("a valid config");
        pop.subscribe(self.now, TOPIC, "*")
            .expect("a valid subscription");
        self.members.push(Member {
            pop,
            alive: true,
            conns: BTreeMap::new(),
            running: Vec::new(),
            closed: false,
        });
        self.drain();
        i
    }

    /// Produces `n` messages round robin over the topic's queues, each with its own key.
    pub(crate) fn produce(&mut self, n: usize, queues: i32) {
        for k in 0..n {
            let key = format!("m{}", self.produced.len());
            let queue = i32::try_from(k).unwrap_or(0) % queues.max(1);
            self.cluster.produce(
                self.now,
                TOPIC,
                BROKER,
                queue,
                Bytes::from(key.clone()),
                None,
                Some(&key),
            );
            self.produced.insert(key);
        }
        self.drain();
    }

    /// Kills member `i` as SIGKILL would: its connections drop, nothing more is sent.
    pub(crate) fn kill(&mut self, i: usize) {
        let member = &mut self.members[i];
        member.alive = false;
        member.running.clear();
        let keys: Vec<ConnKey> = member.conns.values().copied().collect();
        for key in keys {
            self.cluster.disconnect(self.now, key);
            self.by_key.remove(&key);
        }
        self.drain();
    }

    /// Starts a graceful shutdown of member `i`.
    pub(crate) fn shutdown(&mut self, i: usize) {
        self.members[i].pop.shutdown(self.now);
        self.drain();
    }

    /// Whether member `i` finished its shutdown.
    pub(crate) fn is_closed(&self, i: usize) -> bool {
        self.members[i].closed
    }

    /// Member `i`'s counters.
    pub(crate) fn stats(&self, i: usize) -> PopStats {
        self.members[i].pop.stats()
    }

    /// Runs for `span` of virtual time, or until `done` holds (checked after each step).
    pub(crate) fn run_until(
        &mut self,
        span: Duration,
        mut done: impl FnMut(&Self) -> bool,
    ) -> bool {
        let deadline = self.now + span;
        let mut steps = 0u32;
        while self.now < deadline {
            if done(self) {
                return true;
            }
            steps += 1;
            assert!(steps < 1_000_000, "the world does not settle");
            let next = self
                .next_event()
                .unwrap_or(deadline)
                .min(deadline)
                .max(self.now);
            self.now = next;
            self.cluster.handle_timeout(self.now);
            for i in 0..self.members.len() {
                if self.members[i].alive {
                    self.members[i].pop.handle_timeout(self.now);
                    self.finish_handlers(i);
                }
            }
            self.drain();
            if next == deadline && self.next_event().is_none_or(|at| at > deadline) {
                break;
            }
        }
        done(self)
    }

    /// Every produced message was consumed (a handler succeeded) or is in the dead-letter queue.
    pub(crate) fn all_consumed_or_dead(&self) -> bool {
        let dead = self.dead_lettered();
        self.produced
            .iter()
            .all(|k| self.consumed.contains_key(k) || dead.contains(k))
    }

    /// The keys in `%DLQ%<group>`.
    pub(crate) fn dead_lettered(&self) -> BTreeSet<String> {
        let dlq = MessageQueue::new(&dlq_topic(GROUP), BROKER, 0);
        self.cluster
            .messages(&dlq)
            .filter_map(|(_, m)| m.keys().map(str::to_owned))
            .collect()
    }

    /// How many deliveries each member got.
    pub(crate) fn shares(&self) -> BTreeMap<usize, usize> {
        let mut shares = BTreeMap::new();
        for seen in &self.seen {
            *shares.entry(seen.member).or_default() += 1;
        }
        shares
    }

    /// The deliveries of `key`.
    pub(crate) fn deliveries_of(&self, key: &str) -> Vec<Seen> {
        self.seen.iter().filter(|s| s.key == key).cloned().collect()
    }

    fn next_event(&self) -> Option<Instant> {
        let mut next = self.cluster.poll_timeout();
        for member in self.members.iter().filter(|m| m.alive) {
            let times = member
                .pop
                .poll_timeout()
                .into_iter()
                .chain(member.running.iter().map(|r| r.done_at));
            for at in times {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next
    }

    fn finish_handlers(&mut self, i: usize) {
        let now = self.now;
        let member = &mut self.members[i];
        let (done, running): (Vec<Running>, Vec<Running>) = std::mem::take(&mut member.running)
            .into_iter()
            .partition(|r| r.done_at <= now);
        member.running = running;
        for run in done {
            if run.outcome == ConsumeOutcome::Success {
                for key in &run.keys {
                    self.consumed.insert(key.clone(), i);
                }
            }
            self.members[i].pop.complete(now, run.delivery, run.outcome);
        }
    }

    /// Moves every output until nothing moves.
    fn drain(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.members.len() {
                while self.members[i].alive {
                    let Some(output) = self.members[i].pop.poll_output() else {
                        break;
                    };
                    moved = true;
                    self.on_output(i, output);
                }
            }
            while let Some((key, command)) = self.cluster.poll_output() {
                moved = true;
                if let Some(&(i, conn)) = self.by_key.get(&key)
                    && self.members[i].alive
                {
                    self.members[i]
                        .pop
                        .handle_command(self.now, conn, through_codec(&command));
                }
            }
            while let Some(key) = self.cluster.poll_closed() {
                moved = true;
                if let Some((i, conn)) = self.by_key.remove(&key)
                    && self.members[i].alive
                {
                    self.members[i].conns.remove(&conn);
                    self.members[i].pop.handle_disconnected(self.now, conn);
                }
            }
            if !moved {
                break;
            }
        }
    }

    fn on_output(&mut self, i: usize, output: PopOutput) {
        match output {
            PopOutput::Wire(Wire::Connect { conn, addr }) => {
                self.next_key += 1;
                let key = self.next_key;
                if self.cluster.connect(key, &addr) {
                    self.by_key.insert(key, (i, conn));
                    self.members[i].conns.insert(conn, key);
                    self.members[i].pop.handle_connected(self.now, conn);
                } else {
                    self.members[i].pop.handle_disconnected(self.now, conn);
                }
            }
            PopOutput::Wire(Wire::Send { conn, command }) => {
                if let Some(&key) = self.members[i].conns.get(&conn) {
                    self.cluster
                        .handle_command(self.now, key, through_codec(&command));
                }
            }
            PopOutput::Wire(Wire::Close { conn }) => {
                if let Some(key) = self.members[i].conns.remove(&conn) {
                    self.by_key.remove(&key);
                    self.cluster.disconnect(self.now, key);
                }
            }
            PopOutput::Deliver(delivery) => {
                let at = self.now - self.epoch;
                let mut keys = Vec::new();
                let mut at_list = Vec::new();
                let mut longest = Duration::ZERO;
                let mut outcome = ConsumeOutcome::Success;
                for m in &delivery.messages {
                    let key = m
                        .message
                        .property(property::KEYS)
                        .unwrap_or_default()
                        .to_owned();
                    // The invariant: no live member's handler has this message now, unless its
                    // renewal there failed.
                    for (j, other) in self.members.iter().enumerate() {
                        let holds = other
                            .running
                            .iter()
                            .any(|r| r.keys.contains(&key) && !r.lapsed.contains(&key));
                        if other.alive && holds {
                            panic!(
                                "{key} delivered to member {i} at {at:?} while member {j} still runs it"
                            );
                        }
                    }
                    self.seen.push(Seen {
                        member: i,
                        key: key.clone(),
                        reconsume_times: m.message.reconsume_times(),
                        at,
                    });
                    let (took, said) = (self.handler)(i, &m.message);
                    longest = longest.max(took);
                    if said != ConsumeOutcome::Success {
                        outcome = said;
                    }
                    keys.push(key);
                    at_list.push((m.receipt.handle.queue_id, m.receipt.handle.queue_offset));
                }
                self.members[i].running.push(Running {
                    delivery: delivery.id,
                    done_at: self.now + longest,
                    outcome,
                    keys,
                    at: at_list,
                    lapsed: BTreeSet::new(),
                });
            }
            PopOutput::Event(event) => {
                if matches!(event, PopEvent::Closed(_)) {
                    self.members[i].closed = true;
                }
                if let PopEvent::SettleFailed {
                    receipt,
                    request: "CHANGE_MESSAGE_INVISIBLETIME",
                    ..
                } = &event
                {
                    let at = (receipt.handle.queue_id, receipt.handle.queue_offset);
                    for run in &mut self.members[i].running {
                        let lapsed: Vec<String> = run
                            .keys
                            .iter()
                            .zip(&run.at)
                            .filter(|(_, a)| **a == at)
                            .map(|(k, _)| k.clone())
                            .collect();
                        run.lapsed.extend(lapsed);
                    }
                }
                self.events.push((i, event));
            }
        }
    }
}

/// Encodes and decodes `command`, as the wire would.
fn through_codec(command: &Command) -> Command {
    let mut buf = BytesMut::new();
    frame::encode(command, HeaderEncoding::Json, &mut buf).expect("commands fit a frame");
    FrameDecoder::default()
        .decode(&mut buf)
        .expect("the codec decodes what it encoded")
        .expect("one whole frame")
}
