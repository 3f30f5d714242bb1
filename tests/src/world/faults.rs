//! The seeded faults: dropped and black-holed connections, broker restarts and outages, offset
//! resets, `SYSTEM_BUSY`, `OFFSET_MOVED`, lost responses, slow handlers, members leaving, and
//! (with [`WorldConfig::pauses`](super::WorldConfig::pauses)) queues paused by the application.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::MessageQueue;

use super::{Ev, World};
use crate::sim::{ConnKey, Fault};

impl World {
    pub(super) fn inject_fault(&mut self) {
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
        self.schedule(at, Ev::Resume(i, queue));
    }
}
