//! The world's API for scenario tests: what they read (connections opened, deliveries,
//! acknowledged offsets, the trace) and the hooks that steer one run into a precise situation
//! (consumers added with their own settings, handlers held and completed by hand, messages
//! produced to one queue, poll-mode takes).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use consumer_core::{
    ConsumeFrom, ConsumeOutcome, Consumer, ConsumerConfig, Credentials, DeliveryId, MessageQueue,
    Polled,
};

use super::{Ev, Node, SIM_ACCESS_KEY, SIM_SECRET_KEY, World};
use crate::sim::ConnKey;

/// Hooks for scenario tests that steer the world into one precise situation.
impl World {
    /// Deliveries handed out so far.
    pub fn deliveries(&self) -> u64 {
        self.deliveries
    }

    /// Messages consumed more than once (by any nodes), and the consumptions past the first.
    pub fn duplicates(&self) -> (usize, u64) {
        let twice = self.consumptions.values().filter(|n| **n > 1);
        (twice.clone().count(), twice.map(|n| u64::from(n - 1)).sum())
    }

    /// Messages produced so far.
    pub fn produced(&self) -> usize {
        self.produced.values().map(BTreeSet::len).sum()
    }

    /// How many connections the consumers asked to open to `addr` so far.
    pub fn connections_opened(&self, addr: &str) -> usize {
        self.opened.get(addr).copied().unwrap_or(0)
    }

    /// How many requests with `code` the consumers sent to `addr` so far (a broker node's
    /// address tells master from slave).
    pub fn requests_sent(&self, addr: &str, code: proto::RequestCode) -> usize {
        self.sent
            .get(addr)
            .and_then(|codes| codes.get(&code))
            .copied()
            .unwrap_or(0)
    }

    /// The origin of the virtual clock.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Starts one more consumer, as [`World::add_consumer`] does, with its configuration
    /// further changed by `adjust` (after [`WorldConfig::consumer_config`](super::WorldConfig::consumer_config)): per-node settings.
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
        if let Some((queue, total)) = self.config.cache_limits {
            config.max_cached_messages_per_queue = queue;
            config.max_cached_messages_total = total;
        }
        let config = adjust((self.config.consumer_config)(config));
        let cache_limits = (
            config.max_cached_messages_per_queue,
            config.max_cached_messages_total,
        );
        let unix_ms = self.cluster.wall_millis(self.now);
        let mut consumer = Consumer::new(
            config,
            format!("10.0.0.{index}@sim#{index}"),
            self.now,
            unix_ms,
        )
        .expect("the test's consumer configuration is valid");
        if self.config.deliver_on_demand {
            consumer.deliver_on_demand();
        }
        consumer
            .subscribe(self.now, &self.config.topic, "*")
            .expect("the simulation's topic is valid");
        self.nodes.push(Node {
            consumer,
            keys: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            report: None,
            shutting_down: false,
            killed: false,
            events: Vec::new(),
            delivered: Vec::new(),
            gave_up: BTreeSet::new(),
            consumed: BTreeSet::new(),
            stored: BTreeMap::new(),
            hold: false,
            held: Vec::new(),
            at_once: None,
            revoking: Vec::new(),
            traces: Vec::new(),
            paused: BTreeSet::new(),
            cache_limits,
        });
        self.note(format!("node {index} starts"));
        if self.config.poller {
            let at = self.now + Duration::from_millis(5 + self.rng.below(45));
            self.schedule(at, Ev::Poll(index));
        }
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

    /// Kills node `i` on the spot, as SIGKILL does: it handles nothing more (no timer, no
    /// answer, no handler's completion), and the brokers see its connections close, as the
    /// operating system closes a dead process's sockets, so it leaves the group at once. What
    /// it held at the brokers (locks) stays until it expires.
    pub fn kill(&mut self, i: usize) {
        let now = self.now;
        let node = &mut self.nodes[i];
        node.killed = true;
        node.shutting_down = true;
        let keys: Vec<ConnKey> = std::mem::take(&mut node.keys).into_values().collect();
        for key in keys {
            self.conn_owner.remove(&key);
            self.cluster.disconnect(now, key);
        }
        self.note(format!("node {i} killed"));
    }

    /// The broker at `addr` closes node `i`'s connection to it now, as a network failure or a
    /// broker dropping a client would: the node hears of it one link latency later. Returns
    /// whether there was such a connection.
    pub fn drop_connection(&mut self, i: usize, addr: &str) -> bool {
        let Some(key) = self.conn_key(i, addr) else {
            return false;
        };
        self.note(format!("node {i}'s connection to {addr} dropped"));
        self.cluster.disconnect(self.now, key);
        self.conn_owner.remove(&key);
        let Some(conn) = self.nodes[i]
            .keys
            .iter()
            .find(|(_, k)| **k == key)
            .map(|(conn, _)| *conn)
        else {
            return false;
        };
        self.nodes[i].keys.remove(&conn);
        let at = self.now + self.latency();
        self.schedule(at, Ev::Lost(i, conn));
        true
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

    /// Node `i`'s open connection to `addr` (e.g. [`SimCluster::broker_addr`](crate::sim::SimCluster::broker_addr)), as the
    /// cluster names it: where [`SimCluster::request_client`](crate::sim::SimCluster::request_client) reaches the node.
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
                self.consumed_now(i, mq, offset);
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

    /// Node `i`'s application takes what is ready (up to 4 takes of 32), and comes back in 5
    /// to 50 ms while the node runs. Nothing taken may come from a queue the node does not own
    /// or has paused.
    pub(super) fn application_polls(&mut self, i: usize) {
        if self.nodes[i].shutting_down || self.nodes[i].consumer.is_closed() {
            return;
        }
        for _ in 0..4 {
            let Some(polled) = self.poll(i, 32) else {
                break;
            };
            let owned = self.nodes[i]
                .consumer
                .assignment()
                .any(|q| q == polled.queue);
            self.fail_if(
                !owned,
                &format!("node {i} took {:?}, which it does not own", polled.queue),
            );
            self.fail_if(
                self.nodes[i].paused.contains(&polled.queue),
                &format!("node {i} took {:?}, which it paused", polled.queue),
            );
        }
        let at = self.now + Duration::from_millis(5 + self.rng.below(45));
        self.schedule(at, Ev::Poll(i));
    }
}
