//! Hand-overs in a group shared with Apache's Java push consumer, hand-overs on (the default):
//! [`MESSAGES`] messages streamed at 1,000 a second over [`QUEUES`] queues to a Java member and
//! one of ours ('a'); a second of ours ('c') joins a third of the way through and 'a' shuts down
//! gracefully two thirds of the way through, so queues move between ours and between ours and
//! Java while messages arrive. Nothing is lost, and no message is consumed by two of our members
//! (those hand-overs are quiet). Java takes no locks, so a queue moving to or from the Java
//! member is handed over as Java does; the messages consumed twice across those are counted and
//! printed, not bounded: they measure what a mixed group gets.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocketmq_tests::unique;
use rocketmq_tokio::{ConsumeFrom, TokioRuntime};
use serde_json::Value;

use super::peer::{JavaPeer, queue_ids, text};
use crate::scenario::broker_scenario::{Consuming, Topic, WAIT, builder, start_built};

/// Queues of the topic.
const QUEUES: i32 = 8;
/// Messages streamed.
const MESSAGES: usize = 12_000;
/// Messages sent per [`TICK`]: 1,000 a second.
const PER_TICK: usize = 10;
/// The producer's pace.
const TICK: Duration = Duration::from_millis(10);

/// The Java member and ours, and who consumed what.
struct Group {
    topic: String,
    java: JavaPeer,
    java_started: bool,
    java_owned: BTreeSet<i32>,
    /// Ours, by name ('a', 'c'), while running.
    ours: BTreeMap<char, Consuming>,
    /// Body -> the members that consumed it ('j' for Java), one entry per delivery.
    consumed: BTreeMap<String, Vec<char>>,
}

impl Group {
    fn java_line(&mut self, line: &Value) {
        match line["event"].as_str() {
            Some("started") => self.java_started = true,
            Some("assignment") => {
                self.java_owned = queue_ids(line, &self.topic);
            }
            Some("message") if line["topic"] == self.topic.as_str() => {
                self.consumed
                    .entry(text(line, "body").to_owned())
                    .or_default()
                    .push('j');
            }
            _ => {}
        }
    }

    /// Reads what the members did during about 100 ms.
    async fn pump(&mut self) {
        // Java prints a line per message: read for a bounded while, not until it pauses.
        let until = Instant::now() + Duration::from_millis(20);
        while let Some(line) = self
            .java
            .next_line(until.saturating_duration_since(Instant::now()))
        {
            self.java_line(&line);
            if Instant::now() >= until {
                break;
            }
        }
        for (member, consuming) in &mut self.ours {
            for body in consuming
                .during::<TokioRuntime>(Duration::from_millis(40))
                .await
            {
                self.consumed.entry(body).or_default().push(*member);
            }
        }
    }

    /// Our member `member` shuts down gracefully; what it handled is counted to the end.
    async fn leave(&mut self, member: char) {
        if let Some(consuming) = self.ours.remove(&member) {
            let (_, rest) = consuming.shutdown_with_rest().await;
            for body in rest {
                self.consumed.entry(body).or_default().push(member);
            }
        }
    }

    fn deliveries(&self) -> usize {
        self.consumed.values().map(Vec::len).sum()
    }

    /// Whether the members running now own every queue, each exactly once.
    fn split(&self, members: usize) -> bool {
        let mut owned: Vec<i32> = self.java_owned.iter().copied().collect();
        let mut owners = usize::from(!self.java_owned.is_empty());
        for consuming in self.ours.values() {
            let queues = consuming.owned.get();
            owners += usize::from(!queues.is_empty());
            owned.extend(queues);
        }
        owned.sort_unstable();
        owners == members && owned == (0..QUEUES).collect::<Vec<_>>()
    }

    /// Pumps until `done(self)` holds, failing after [`WAIT`].
    async fn until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "{what}: not within {WAIT:?}; Java owns {:?}, ours {:?}",
                self.java_owned,
                self.ours
                    .iter()
                    .map(|(m, c)| (*m, c.owned.get()))
                    .collect::<Vec<_>>()
            );
            self.pump().await;
        }
    }
}

/// Who consumed each queue's messages, and how many: "q0 j1500 a20", ...
fn per_queue(consumed: &BTreeMap<String, Vec<char>>) -> String {
    let mut counts: BTreeMap<i32, BTreeMap<char, usize>> = BTreeMap::new();
    for (body, by) in consumed {
        let Some(i) = body.rsplit('/').next().and_then(|i| i.parse::<i32>().ok()) else {
            continue;
        };
        for member in by {
            *counts
                .entry(i % QUEUES)
                .or_default()
                .entry(*member)
                .or_default() += 1;
        }
    }
    counts
        .iter()
        .map(|(queue, by)| {
            let by: Vec<String> = by.iter().map(|(m, n)| format!("{m}{n}")).collect();
            format!("q{queue} {}", by.join(" "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn ours(topic: &Topic, group: &str) -> Consuming {
    start_built(
        topic,
        builder::<TokioRuntime>(topic, group, "*", ConsumeFrom::First).client_ip("127.0.0.1"),
    )
}

#[test]
fn hand_overs_between_ours_stay_quiet_beside_a_java_member() {
    crate::support::block_on(async {
        let topic = Arc::new(Topic::create("interop-handover", QUEUES));
        let group = unique("interop-handover");
        let java_args = [
            "--from",
            "first",
            "--duration-s",
            "150",
            "--timeout-s",
            "160",
        ];
        let mut members = Group {
            topic: topic.name.clone(),
            java: JavaPeer::consume(&topic.namesrv, &group, &topic.name, &java_args),
            java_started: false,
            java_owned: BTreeSet::new(),
            ours: BTreeMap::new(),
            consumed: BTreeMap::new(),
        };
        members.until("Java started", |m| m.java_started).await;
        members.ours.insert('a', ours(&topic, &group));
        members
            .until("Java and ours share the queues", |m| m.split(2))
            .await;

        let producer = topic.stream(MESSAGES, PER_TICK, TICK);
        members
            .until("a third of the stream consumed", |m| {
                m.deliveries() * 3 >= MESSAGES
            })
            .await;
        members.ours.insert('c', ours(&topic, &group));
        members
            .until("Java and two of ours share the queues", |m| m.split(3))
            .await;
        members
            .until("two thirds of the stream consumed", |m| {
                m.deliveries() * 3 >= MESSAGES * 2
            })
            .await;
        members.leave('a').await;
        members
            .until("Java and the one of ours left share the queues", |m| {
                m.split(2)
            })
            .await;

        let expected = producer.join().expect("the producer sent every message");
        let deadline = Instant::now() + WAIT;
        loop {
            let missing: Vec<&String> = expected
                .iter()
                .filter(|b| !members.consumed.contains_key(*b))
                .collect();
            if missing.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} messages not consumed within {WAIT:?} (queue = number % {QUEUES}), among \
                 them {:?}; Java owns {:?}, ours {:?}; consumed so far: {}",
                missing.len(),
                missing.iter().take(20).collect::<Vec<_>>(),
                members.java_owned,
                members
                    .ours
                    .iter()
                    .map(|(m, c)| (*m, c.owned.get()))
                    .collect::<Vec<_>>(),
                per_queue(&members.consumed)
            );
            members.pump().await;
        }
        // Anything consumed twice would arrive by now.
        let settle = Instant::now() + Duration::from_secs(2);
        while Instant::now() < settle {
            members.pump().await;
        }
        members.leave('c').await;
        members.java.terminate();

        let mut between_ours = Vec::new();
        let mut with_java = 0;
        for (body, by) in &members.consumed {
            if by.len() > 1 {
                if by.contains(&'j') {
                    with_java += 1;
                } else {
                    between_ours.push((body, by));
                }
            }
        }
        let lost = expected
            .iter()
            .filter(|b| !members.consumed.contains_key(*b))
            .count();
        assert_eq!(lost, 0, "messages lost");
        assert!(
            between_ours.is_empty(),
            "{} messages consumed by two of ours (hand-overs between ours are quiet): {:?}",
            between_ours.len(),
            between_ours.iter().take(10).collect::<Vec<_>>()
        );
        let java = members
            .consumed
            .values()
            .flatten()
            .filter(|m| **m == 'j')
            .count();
        println!(
            "mixed hand-over: {} messages, {java} consumed by Java; 0 twice between ours, \
             {with_java} twice across a hand-over with the Java member; per queue: {}",
            expected.len(),
            per_queue(&members.consumed)
        );
    });
}
