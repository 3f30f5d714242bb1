//! What must hold: after every step (bounded caches, no commit past an unacknowledged message,
//! broadcasting's stored offsets behind what was consumed, orderly delivery under the lock and
//! in order), and at the end (everything consumed or dead-lettered after exactly
//! `max_reconsume_times + 1` deliveries, one owner per queue, every delivery traced). A failure
//! panics with the seed that replays it and the tail of the trace.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use consumer_core::{Delivery, MessageModel, MessageQueue};

use super::{Position, World};
use crate::sim::{Role, dlq_topic};

impl World {
    /// With trace: every delivered message has one `SubBefore` record, and every `SubAfter`
    /// follows the `SubBefore` of the same delivery (request id) and message.
    pub(super) fn check_traces(&self) {
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

    pub(super) fn check_invariants(&mut self) {
        // A queue is pulled only while it caches less than its limit (and the consumer less than
        // its own), so one pull's batch over either is the most there can be.
        let batch = 32;
        let mut most = self.cached_at_most;
        for (i, node) in self.nodes.iter().enumerate() {
            if node.consumer.is_closed() {
                continue;
            }
            let (queue_limit, total_limit) = node.cache_limits;
            let stats = node.consumer.stats();
            let total: usize = stats.queues.iter().map(|q| q.cached_messages).sum();
            most.1 = most.1.max(total);
            for q in &stats.queues {
                most.0 = most.0.max(q.cached_messages);
                if q.cached_messages > queue_limit + batch {
                    self.fail(&format!(
                        "node {i} caches {} messages of {:?} (limit {queue_limit})",
                        q.cached_messages, q.queue
                    ));
                }
            }
            if total > total_limit + batch * stats.queues.len().max(1) {
                self.fail(&format!(
                    "node {i} caches {total} messages in all (limit {total_limit})"
                ));
            }
        }
        self.cached_at_most = most;
        // A committed offset never passes a message that was neither consumed nor safely
        // handed back to the broker for a retry: on the master, nor on its slave (which takes
        // commits while the master is down).
        for (mq, offsets) in &self.produced {
            let (acked, sent_back) = (self.acked.get(mq), self.sent_back.get(mq));
            let done = |o: &i64| {
                acked.is_some_and(|a| a.contains(o)) || sent_back.is_some_and(|s| s.contains(o))
            };
            for role in [Role::Master, Role::Slave] {
                let Some(committed) =
                    self.cluster
                        .committed_offset_on(role, &self.config.group, mq)
                else {
                    continue;
                };
                if let Some(missing) = offsets.range(..committed).find(|o| !done(o)) {
                    self.fail(&format!(
                        "{mq:?} committed {committed} on the {role:?} but offset {missing} was \
                         never acknowledged"
                    ));
                }
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
    pub(super) fn is_done(&self, mq: &MessageQueue, offset: i64) -> bool {
        self.acked.get(mq).is_some_and(|a| a.contains(&offset))
            || self.sent_back.get(mq).is_some_and(|a| a.contains(&offset))
    }

    /// Orderly: the node holds the queue's broker lock (or the broker just restarted and the
    /// node has not heard yet), no other delivery of the queue whose result would count is
    /// running anywhere, and every earlier message of the queue is done, with the batch
    /// holding the next messages without a gap.
    pub(super) fn check_orderly_delivery(&self, i: usize, delivery: &Delivery) {
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

    pub(super) fn check_final(&mut self) {
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
    pub(super) fn unfinished(&self, dead: &BTreeSet<Position>) -> Option<String> {
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
    pub(super) fn late_without_retry(&self) -> Option<String> {
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
    pub(super) fn work_left(&self) -> bool {
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
    pub(super) fn check_final_broadcast(&mut self) {
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
    pub(super) fn topic_queues(&self) -> Vec<MessageQueue> {
        let mut queues = Vec::new();
        for broker in self.cluster.broker_names() {
            for queue_id in 0..self.config.queues_per_broker {
                queues.push(MessageQueue::new(&self.config.topic, broker, queue_id));
            }
        }
        queues
    }

    pub(super) fn note(&mut self, line: String) {
        let t = self.now.saturating_duration_since(self.epoch);
        self.trace.push(format!("{:>9.3}s {line}", t.as_secs_f64()));
    }

    pub(super) fn fail_if(&self, condition: bool, what: &str) {
        if condition {
            self.fail(what);
        }
    }

    pub(super) fn fail(&self, what: &str) -> ! {
        let mut tail = String::new();
        for line in self.trace.iter().rev().take(60).rev() {
            let _ = writeln!(tail, "  {line}");
        }
        panic!(
            "simulation failed: {what}\nreplay with SIM_SEED={}\nlast trace lines:\n{tail}",
            self.config.seed
        );
    }

    /// Clustering: the longest a message waited to be first consumed, counted from when it
    /// was produced or from the end of the last fault that began before it was consumed,
    /// whichever came later. Messages handed back to the broker for a delayed retry are left
    /// out (their backoff is the broker's schedule), and so is anything never consumed (the
    /// final checks report that). With the message, for the failure.
    pub(super) fn longest_wait(&self) -> Option<(Duration, Position)> {
        self.first_consumed
            .iter()
            .filter(|((mq, offset), _)| !self.sent_back.get(mq).is_some_and(|s| s.contains(offset)))
            .filter_map(|(position, consumed)| {
                let produced = *self.produced_at.get(position)?;
                let fault_end = self
                    .faults
                    .iter()
                    .filter(|(began, _)| began <= consumed)
                    .map(|(_, ended)| *ended)
                    .max();
                let from = fault_end.map_or(produced, |end| end.max(produced));
                Some((consumed.saturating_duration_since(from), position.clone()))
            })
            .max()
    }
}
