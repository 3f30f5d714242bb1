//! A consumer group with members in both languages: Java's `DefaultMQPushConsumer` and ours,
//! both with `AllocateMessageQueueAveragely`, then both with
//! `AllocateMessageQueueConsistentHash`. Once settled every queue has exactly one owner across
//! the two (Java's side read from its rebalance result, ours from its assignment events) and the
//! messages sent meanwhile are each consumed once. Then the Java member leaves and ours takes
//! every queue; a new Java member joins and they share again; ours leaves and Java takes every
//! queue. Nothing sent across these changes is lost.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use consumer_core::rebalance::Strategy;
use rocketmq_tests::unique;
use rocketmq_tokio::{ConsumeFrom, TokioRuntime};
use serde_json::Value;

use super::peer::{JavaPeer, int, text};
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
    java: JavaPeer,
    java_owned: BTreeSet<i32>,
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

    fn java_line(&mut self, line: &Value) {
        match line["event"].as_str() {
            Some("assignment") => {
                self.java_owned = line["queues"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|q| q["topic"] == self.topic.as_str())
                    .map(|q| i32::try_from(int(q, "queue_id")).expect("a queue id"))
                    .collect();
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

    /// Pumps until `settled(java's queues, ours)` holds, failing after [`WAIT`].
    async fn until(
        &mut self,
        what: &str,
        settled: impl Fn(&BTreeSet<i32>, &BTreeSet<i32>) -> bool,
    ) {
        let deadline = Instant::now() + WAIT;
        while !settled(&self.java_owned, &self.ours_owned()) {
            assert!(
                Instant::now() < deadline,
                "{what}: not within {WAIT:?}; Java owns {:?}, ours {:?}",
                self.java_owned,
                self.ours_owned()
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

fn mixed_group(strategy: Strategy, java_strategy: &str) {
    crate::support::block_on(async {
        let topic = Topic::create("interop-mixed", QUEUES);
        let group = unique("interop-mixed");
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
        let java = JavaPeer::consume(&topic.namesrv, &group, &topic.name, &java_args);
        let ours = start_built(
            &topic,
            builder::<TokioRuntime>(&topic, &group, "*", ConsumeFrom::First).configure(|c| {
                c.strategy = strategy;
                c.rebalance_interval = Duration::from_secs(1);
            }),
        );
        let mut members = Members {
            topic: topic.name.clone(),
            java,
            java_owned: BTreeSet::new(),
            ours: Some(ours),
            consumed: BTreeMap::new(),
            by_java: 0,
            by_ours: 0,
        };

        // Settled: both own queues, none twice, none left over.
        let shared = |java: &BTreeSet<i32>, ours: &BTreeSet<i32>| {
            !java.is_empty()
                && !ours.is_empty()
                && java.is_disjoint(ours)
                && java.union(ours).copied().collect::<BTreeSet<_>>() == all
        };
        members
            .until("the two languages share the queues", shared)
            .await;
        let first = topic.send("shared", 160, None);
        members.consume(&first).await;
        // Still shared the same way, and in a settled group nothing is delivered twice.
        assert!(shared(&members.java_owned, &members.ours_owned()));
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
        members
            .until("ours owns every queue after Java left", |_, ours| {
                *ours == all
            })
            .await;
        let second = topic.send("alone", 80, None);
        members.consume(&second).await;

        // A new Java member joins and they share again; then ours leaves and Java takes all.
        members.java = JavaPeer::consume(&topic.namesrv, &group, &topic.name, &java_args);
        members.java_owned.clear();
        members
            .until("a new Java member shares the queues", shared)
            .await;
        if let Some(ours) = members.ours.take() {
            drop(ours.shutdown().await);
        }
        members
            .until("Java owns every queue after ours left", |java, _| {
                *java == all
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
