//! The seeded faults: dropped and black-holed connections, broker restarts and outages, offset
//! resets, `SYSTEM_BUSY`, `OFFSET_MOVED`, lost responses, slow handlers, members leaving,
//! (with [`WorldConfig::pauses`](super::WorldConfig::pauses)) queues paused by the application,
//! and (with [`WorldConfig::slaves`](super::WorldConfig::slaves)) a master lost for minutes
//! while its slave serves.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::MessageQueue;

use super::{Ev, Partition, World};
use crate::sim::{ConnKey, Fault};

impl World {
    pub(super) fn inject_fault(&mut self) {
        self.fault_lasts(Duration::ZERO);
        if self.config.graceful_churn {
            self.change_the_group();
            return;
        }
        let brokers: Vec<String> = self.cluster.broker_names().map(str::to_owned).collect();
        let broker = brokers[self.rng.index(brokers.len())].clone();
        if self.config.pauses && self.rng.chance(1, 3) {
            self.pause_a_queue(&broker);
            return;
        }
        match self.rng.below(10) {
            8 => {
                // A partition between every client and one broker or the name server: what is
                // open goes dead, new connections hang, for a few seconds.
                let mut addrs: Vec<String> = brokers
                    .iter()
                    .map(|b| self.cluster.broker_addr(b))
                    .collect();
                addrs.extend(brokers.iter().filter_map(|b| self.cluster.slave_addr(b)));
                addrs.push(self.cluster.namesrv_addr().to_owned());
                let addr = addrs[self.rng.index(addrs.len())].clone();
                let lasts = Duration::from_millis(2000 + self.rng.below(8000));
                self.partition(&addr, lasts);
            }
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
                self.fault_lasts(down_for);
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
                // A lost answer to a long-polled pull is known only when the pull times out
                // (30 s): the fault lasts that long for the per-message bound.
                self.fault_lasts(Duration::from_secs(30));
            }
            6 => {
                // A slow handler: the next deliveries take longer than a revoke waits.
                self.note("fault: handlers stall for 8 s".into());
                self.slow_until = self.now + Duration::from_secs(3);
                self.fault_lasts(Duration::from_secs(3));
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

    /// A graceful group change ([`WorldConfig::graceful_churn`](super::WorldConfig)): a member
    /// joins, a member shuts down (never the last one), or a rolling restart's step (a member
    /// shuts down, its replacement joins 0.5 to 3 s later).
    fn change_the_group(&mut self) {
        let live: Vec<usize> = (0..self.nodes.len())
            .filter(|i| !self.nodes[*i].shutting_down)
            .collect();
        match self.rng.below(3) {
            0 => {
                self.note("fault: a member joins".into());
                self.add_consumer();
            }
            choice => {
                if live.len() < 2 {
                    self.add_consumer();
                    return;
                }
                let i = live[self.rng.index(live.len())];
                self.shutdown_node(i);
                if choice == 2 {
                    self.note(format!("fault: node {i} restarts"));
                    let at = self.now + Duration::from_millis(500 + self.rng.below(2500));
                    self.schedule(at, Ev::Join);
                }
            }
        }
    }

    /// Schedules the loss of one master for 60 to 180 s, starting 5 to 55 s into the active
    /// phase ([`WorldConfig::slaves`](super::WorldConfig::slaves)).
    pub(super) fn schedule_master_loss(&mut self) {
        let brokers: Vec<String> = self.cluster.broker_names().map(str::to_owned).collect();
        let broker = brokers[self.rng.index(brokers.len())].clone();
        let active = self.config.active.as_millis() as u64;
        let at = self.epoch
            + Duration::from_millis(5000 + self.rng.below(active.saturating_sub(10_000)));
        let lasts = Duration::from_millis(60_000 + self.rng.below(120_001));
        self.outage_end = Some(at + lasts);
        self.schedule(at, Ev::MasterLost(broker, lasts));
    }

    /// `broker`'s master is lost for `lasts` (a crash, as a short outage): its slave, still
    /// in the route, serves its queues meanwhile. For the per-message wait bound the fault
    /// lasts 30 s longer: no consumer can learn that the master is back before its next route
    /// refresh (`route_refresh_interval`, Java's `pollNameServerInterval`, 30 s), and until
    /// then it reads from the slave, which never gets what only the master holds.
    pub(super) fn lose_master(&mut self, broker: &str, lasts: Duration) {
        self.note(format!("fault: {broker}'s master lost for {lasts:?}"));
        self.restarted_at.insert(broker.to_owned(), self.now);
        self.lost_until.insert(broker.to_owned(), self.now + lasts);
        self.cluster.set_broker_down(broker, true);
        self.fault_lasts(lasts + Duration::from_secs(30));
        let at = self.now + lasts;
        self.schedule(at, Ev::MasterBack(broker.to_owned()));
    }

    /// The master lost by [`World::lose_master`] is back.
    pub(super) fn master_back(&mut self, broker: &str) {
        self.lost_until.remove(broker);
        self.note(format!("{broker}'s master is back"));
        self.cluster.set_broker_down(broker, false);
    }

    /// A member's application pauses one queue of `broker` for a few seconds.
    pub(super) fn pause_a_queue(&mut self, broker: &str) {
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
        self.fault_lasts(pause_for);
        self.schedule(at, Ev::Resume(i, queue));
    }

    /// Cuts every client off from `addr` for `lasts`: the connections open to it carry nothing
    /// from now on (for ever: they stay dead after the partition heals, as behind a firewall
    /// that lost their state), and connections opened meanwhile hang.
    pub(super) fn partition(&mut self, addr: &str, lasts: Duration) {
        if self.partitioned.contains_key(addr) {
            return;
        }
        self.note(format!("fault: partition from {addr} for {lasts:?}"));
        let open: Vec<ConnKey> = self
            .key_addr
            .iter()
            .filter(|(key, a)| *a == addr && self.conn_owner.contains_key(key))
            .map(|(key, _)| *key)
            .collect();
        self.black_holed.extend(open);
        self.partitioned.insert(
            addr.to_owned(),
            Partition {
                since: self.now,
                connects: 0,
            },
        );
        let at = self.now + lasts;
        self.fault_lasts(lasts);
        self.schedule(at, Ev::Heal(addr.to_owned()));
    }

    /// The partition from `addr` ends. The consumers must not have hammered it meanwhile:
    /// each tries at most about once a reconnect backoff (1 s), whatever it was doing.
    pub(super) fn heal(&mut self, addr: &str) {
        let Some(partition) = self.partitioned.remove(addr) else {
            return;
        };
        let lasted = self.now.saturating_duration_since(partition.since);
        let nodes = self
            .nodes
            .iter()
            .filter(|n| !n.consumer.is_closed())
            .count();
        let bound = nodes.max(1) * (lasted.as_secs() as usize + 2);
        self.note(format!(
            "partition from {addr} heals after {lasted:?}: {} connects tried",
            partition.connects
        ));
        self.fail_if(
            partition.connects > bound,
            &format!(
                "{} connects to partitioned {addr} in {lasted:?} by {nodes} consumers (bound {bound})",
                partition.connects
            ),
        );
    }
}
