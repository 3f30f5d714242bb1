//! A consumer group with members in both languages: Java's `DefaultMQPushConsumer` and ours,
//! both with `AllocateMessageQueueAveragely`, then both with
//! `AllocateMessageQueueConsistentHash`. Once settled each member owns exactly the queues our
//! [`allocate`] gives its client id (Java's side read from its rebalance result, ours from its
//! assignment events), so the two languages compute the same partition, and the messages sent
//! meanwhile are each consumed once. Then the Java member leaves and ours takes every queue; a
//! new Java member joins and they share again; ours leaves and Java takes every queue. Nothing
//! sent across these changes is lost.
//!
//! A consistent-hash ring of two members can give one of them every queue: the instance names
//! are chosen (ours before it starts, the second Java member's before it starts) so that each
//! member's share is non-empty, which is what makes "both consumed" a fair demand.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use consumer_core::MessageQueue;
use consumer_core::rebalance::allocate;
use rocketmq_tests::unique;
use rocketmq_tokio::{ConsumeFrom, Strategy, TokioRuntime};
use serde_json::Value;

use super::peer::{JavaPeer, queue_ids, text};
use crate::scenario::broker_scenario::{Consuming, Topic, WAIT, builder, start_built};

/// Queues of the topic.
const QUEUES: i32 = 8;

#[test]
fn averagely_mixed_group_shares_every_queue_once() {
    mixed_group(Strategy::Averagely, "averagely");
}

#[test]
fn consistent_hash_mixed_group_shares_every_queue_once() {
    mixed_group(
        Strategy::ConsistentHash { virtual_nodes: 10 },
        "consistent-hash",
    );
}

/// The members, and what they consumed.
struct Members {
    topic: String,
    strategy: Strategy,
    /// The topic's queues, as the members allocate them.
    queues: Vec<MessageQueue>,
    java: JavaPeer,
    /// The running Java member's client id, from its `started` line.
    java_id: Option<String>,
    java_owned: BTreeSet<i32>,
    /// Ours's client id, until it leaves.
    ours_id: Option<String>,
    /// Ours, until it leaves.
    ours: Option<Consuming>,
    /// Body -> deliveries, over all members.
    consumed: BTreeMap<String, usize>,
    /// Deliveries to Java members, and to ours.
    by_java: usize,
    by_ours: usize,
}

impl Members {
    /// The queue ids ours owns now (none once it left).
    fn ours_owned(&self) -> BTreeSet<i32> {
        self.ours
            .as_ref()
            .map(|c| c.owned.get())
            .unwrap_or_default()
    }

    /// Reads what the members did during about 100 ms.
    async fn pump(&mut self) {
        while let Some(line) = self.java.next_line(Duration::from_millis(50)) {
            self.java_line(&line);
        }
        let Some(ours) = self.ours.as_mut() else {
            return;
        };
        for body in ours.during::<TokioRuntime>(Duration::from_millis(50)).await {
            *self.consumed.entry(body).or_default() += 1;
            self.by_ours += 1;
        }
    }

    /// The queue ids `member` gets when the group is the members running now.
    fn share_of(&self, member: &str) -> BTreeSet<i32> {
        let ids: Vec<String> = self.java_id.iter().chain(&self.ours_id).cloned().collect();
        share(&self.strategy, &self.queues, member, &ids)
    }

    /// Both members own exactly their share, and each share is non-empty.
    fn shared(&self) -> bool {
        let (Some(java_id), Some(ours_id)) = (&self.java_id, &self.ours_id) else {
            return false;
        };
        let (java, ours) = (self.share_of(java_id), self.share_of(ours_id));
        !java.is_empty() && !ours.is_empty() && self.java_owned == java && self.ours_owned() == ours
    }

    /// Waits for the Java member's `started` line and records its client id.
    async fn java_started(&mut self) {
        let deadline = Instant::now() + WAIT;
        while self.java_id.is_none() {
            assert!(
                Instant::now() < deadline,
                "no started line from Java within {WAIT:?}"
            );
            self.pump().await;
        }
    }

    fn java_line(&mut self, line: &Value) {
        match line["event"].as_str() {
            Some("started") => self.java_id = Some(text(line, "client_id").to_owned()),
            Some("assignment") => {
                self.java_owned = queue_ids(line, &self.topic);
            }
            Some("message") => {
                *self
                    .consumed
                    .entry(text(line, "body").to_owned())
                    .or_default() += 1;
                self.by_java += 1;
            }
            _ => {}
        }
    }

    /// Pumps until `settled(self)` holds, failing after [`WAIT`].
    async fn until(&mut self, what: &str, settled: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !settled(self) {
            assert!(
                Instant::now() < deadline,
                "{what}: not within {WAIT:?}; Java ({:?}) owns {:?}, ours ({:?}) {:?}; their \
                 shares are {:?} and {:?}",
                self.java_id,
                self.java_owned,
                self.ours_id,
                self.ours_owned(),
                self.java_id.as_deref().map(|id| self.share_of(id)),
                self.ours_id.as_deref().map(|id| self.share_of(id)),
            );
            self.pump().await;
        }
    }

    /// Pumps until every body of `bodies` was consumed, failing after [`WAIT`].
    async fn consume(&mut self, bodies: &BTreeSet<String>) {
        let deadline = Instant::now() + WAIT;
        while !bodies.iter().all(|b| self.consumed.contains_key(b)) {
            assert!(
                Instant::now() < deadline,
                "missing after {WAIT:?}: {:?}",
                bodies
                    .iter()
                    .filter(|b| !self.consumed.contains_key(*b))
                    .collect::<Vec<_>>()
            );
            self.pump().await;
        }
    }
}

/// The queue ids `member` gets among `members` under `strategy`.
fn share(
    strategy: &Strategy,
    queues: &[MessageQueue],
    member: &str,
    members: &[String],
) -> BTreeSet<i32> {
    allocate(strategy, member, queues, members)
        .iter()
        .map(MessageQueue::queue_id)
        .collect()
}

/// The first of `{prefix}-0`, `{prefix}-1`, ... that, as the instance name of a member at
/// `ip` joining `other`, gives both a non-empty share.
fn instance_sharing_with(
    strategy: &Strategy,
    queues: &[MessageQueue],
    ip: &str,
    prefix: &str,
    other: &str,
) -> String {
    (0..100)
        .map(|n| format!("{prefix}-{n}"))
        .find(|instance| {
            let id = format!("{ip}@{instance}");
            let members = [id.clone(), other.to_owned()];
            !share(strategy, queues, &id, &members).is_empty()
                && !share(strategy, queues, other, &members).is_empty()
        })
        .unwrap_or_else(|| panic!("no instance name in 100 shares the queues with {other}"))
}

fn mixed_group(strategy: Strategy, java_strategy: &str) {
    crate::support::block_on(async {
        let topic = Topic::create("interop-mixed", QUEUES);
        let group = unique("interop-mixed");
        let route =
            rocketmq_tests::route(&topic.namesrv, &topic.name).expect("the topic is routed");
        let queues: Vec<MessageQueue> = route
            .queue_datas
            .iter()
            .flat_map(|q| {
                (0..q.read_queue_nums).map(|id| MessageQueue::new(&topic.name, &q.broker_name, id))
            })
            .collect();
        let all: BTreeSet<i32> = (0..QUEUES).collect();
        let java_args = [
            "--from",
            "first",
            "--strategy",
            java_strategy,
            "--rebalance-interval-ms",
            "1000",
            "--duration-s",
            "150",
            "--timeout-s",
            "160",
        ];
        let mut members = Members {
            topic: topic.name.clone(),
            strategy: strategy.clone(),
            queues,
            java: JavaPeer::consume(&topic.namesrv, &group, &topic.name, &java_args),
            java_id: None,
            java_owned: BTreeSet::new(),
            ours_id: None,
            ours: None,
            consumed: BTreeMap::new(),
            by_java: 0,
            by_ours: 0,
        };
        members.java_started().await;
        let java_id = members.java_id.clone().expect("Java started");
        let instance =
            instance_sharing_with(&strategy, &members.queues, "127.0.0.1", "ours", &java_id);
        let ours = start_built(
            &topic,
            builder::<TokioRuntime>(&topic, &group, "*", ConsumeFrom::First)
                .client_ip("127.0.0.1")
                .instance_name(instance)
                .allocation(strategy.clone())
                .configure(|c| c.rebalance_interval = Duration::from_secs(1)),
        );
        members.ours_id = Some(ours.running.client_id().to_owned());
        members.ours = Some(ours);

        members
            .until("the two languages share the queues", Members::shared)
            .await;
        let first = topic.send("shared", 160, None);
        members.consume(&first).await;
        // Still shared the same way, and in a settled group nothing is delivered twice.
        assert!(members.shared(), "the shares moved in a settled group");
        let twice: Vec<_> = members.consumed.iter().filter(|(_, n)| **n > 1).collect();
        assert!(
            twice.is_empty(),
            "delivered twice in a settled group: {twice:?}"
        );
        assert!(
            members.by_java > 0 && members.by_ours > 0,
            "both languages consumed: Java {}, ours {}",
            members.by_java,
            members.by_ours
        );

        // The Java member leaves: ours takes every queue.
        for line in members.java.terminate() {
            members.java_line(&line);
        }
        members.java_id = None;
        members
            .until("ours owns every queue after Java left", |m| {
                m.ours_owned() == all
            })
            .await;
        let second = topic.send("alone", 80, None);
        members.consume(&second).await;

        // A new Java member joins and they share again; then ours leaves and Java takes all.
        let java_ip = java_id.split('@').next().expect("a client id has an ip");
        let ours_id = members.ours_id.clone().expect("ours is running");
        let java_instance =
            instance_sharing_with(&strategy, &members.queues, java_ip, "java", &ours_id);
        let mut rejoin_args = java_args.to_vec();
        rejoin_args.extend(["--instance", &java_instance]);
        members.java = JavaPeer::consume(&topic.namesrv, &group, &topic.name, &rejoin_args);
        members.java_owned.clear();
        members.java_started().await;
        members
            .until("a new Java member shares the queues", Members::shared)
            .await;
        if let Some(ours) = members.ours.take() {
            drop(ours.shutdown().await);
        }
        members.ours_id = None;
        members
            .until("Java owns every queue after ours left", |m| {
                m.java_owned == all
            })
            .await;
        let third = topic.send("java-alone", 80, None);
        members.consume(&third).await;
        let lost: Vec<_> = first
            .iter()
            .chain(&second)
            .chain(&third)
            .filter(|b| !members.consumed.contains_key(*b))
            .collect();
        assert!(
            lost.is_empty(),
            "lost across the membership changes: {lost:?}"
        );
        members.java.terminate();
    });
}
