//! A mixed orderly group: Java's `DefaultMQPushConsumer` with `MessageListenerOrderly` and our
//! `start_orderly` in one group, keyed messages sent by our producer (one queue per sharding
//! key) in three phases: both members; the Java member gone; a new Java member joined. The
//! broker's queue locks hand each queue to one member at a time, whatever its language:
//!
//! - every message is consumed;
//! - each member sees each queue in offset order (a queue it loses, it never regains here, so
//!   its deliveries per queue only go forward), which for a queue of one key is the send order;
//! - both Java members and ours consumed some.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rocketmq_tests::{BrokerImpl, broker_impl, unique};
use rocketmq_tokio::{ConsumeFrom, ConsumeOutcome, Producer, ProducerMessage, PushConsumer};
use serde_json::Value;

use super::peer::{JavaPeer, int, text};
use crate::scenario::broker_scenario::{Topic, WAIT};

/// Queues of the topic, sharding keys, and messages per key in each phase.
const QUEUES: i32 = 4;
const KEYS: usize = 8;
const PER_PHASE: usize = 10;

/// One delivery: (queue id, queue offset, body).
type Seen = (i64, i64, String);

/// Deliveries per member, in the order each member handled them.
#[derive(Default)]
struct Log {
    members: BTreeMap<String, Vec<Seen>>,
    /// Queue ids of the topic each Java member holds now, from its assignment lines.
    java_owned: BTreeMap<String, BTreeSet<i64>>,
    /// Java members that printed their `started` line.
    started: BTreeSet<String>,
}

impl Log {
    fn java(&mut self, member: &str, line: &Value, topic: &str) {
        match line["event"].as_str() {
            Some("message") => self.members.entry(member.to_owned()).or_default().push((
                int(line, "queue_id"),
                int(line, "queue_offset"),
                text(line, "body").to_owned(),
            )),
            Some("started") => {
                self.started.insert(member.to_owned());
            }
            Some("assignment") => {
                let owned = line["queues"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|q| q["topic"] == topic)
                    .map(|q| int(q, "queue_id"))
                    .collect();
                self.java_owned.insert(member.to_owned(), owned);
            }
            _ => {}
        }
    }

    fn consumed(&self) -> BTreeSet<&str> {
        self.members
            .values()
            .flatten()
            .map(|(_, _, body)| body.as_str())
            .collect()
    }
}

/// Sends phase `phase`: [`PER_PHASE`] messages per key, keys interleaved, each key's in order.
async fn send_phase(producer: &Producer, topic: &str, phase: usize) -> BTreeSet<String> {
    let mut sent = BTreeSet::new();
    for n in 0..PER_PHASE {
        for key in 0..KEYS {
            let seq = phase * PER_PHASE + n;
            let body = format!("key-{key}/{seq:03}");
            producer
                .send(
                    topic,
                    ProducerMessage::new(body.clone()).with_sharding_key(format!("key-{key}")),
                )
                .await
                .unwrap_or_else(|e| panic!("send {body}: {e}"));
            sent.insert(body);
        }
    }
    sent
}

#[test]
fn mixed_orderly_group_keeps_each_queue_in_order() {
    crate::support::block_on(async {
        let topic = Topic::create("interop-orderly", QUEUES);
        let ns = topic.namesrv.clone();
        let group = unique("interop-orderly");
        let start_java = |instance: &str| {
            JavaPeer::consume(
                &ns,
                &group,
                &topic.name,
                &[
                    "--mode",
                    "orderly",
                    "--from",
                    "first",
                    "--instance",
                    instance,
                    "--rebalance-interval-ms",
                    "1000",
                    "--duration-s",
                    "150",
                    "--timeout-s",
                    "160",
                ],
            )
        };
        let mut java1 = start_java("orderly-j1");

        let (tx, mut ours_rx) = futures_channel::mpsc::unbounded::<Seen>();
        let ours = PushConsumer::builder(group.clone())
            .name_server(ns.clone())
            .subscribe(topic.name.clone(), "*")
            .consume_from(ConsumeFrom::First)
            .configure(|c| c.rebalance_interval = Duration::from_secs(1))
            .build()
            .expect("a valid consumer")
            .start_orderly(move |messages| {
                for m in &messages {
                    let body = String::from_utf8_lossy(m.body()).into_owned();
                    let _ = tx.unbounded_send((i64::from(m.queue_id()), m.queue_offset(), body));
                }
                std::future::ready(ConsumeOutcome::Success)
            });
        let producer = super::peer::our_producer(&ns, "interop-orderly-producer");

        let mut log = Log::default();
        let mut sent = BTreeSet::new();
        // Pumps both sides until `done(log)` holds or WAIT passes.
        macro_rules! pump_until {
            ($what:expr, $peers:expr, $done:expr) => {{
                let deadline = Instant::now() + WAIT;
                loop {
                    for (name, peer) in $peers {
                        let peer: &mut JavaPeer = peer;
                        while let Some(line) = peer.next_line(Duration::from_millis(20)) {
                            log.java(name, &line, &topic.name);
                        }
                    }
                    while let Ok(Some(seen)) =
                        tokio::time::timeout(Duration::from_millis(20), ours_rx.next()).await
                    {
                        log.members.entry("ours".to_owned()).or_default().push(seen);
                    }
                    if $done(&log) {
                        break;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "{}: not within {WAIT:?}; Java owns {:?}; deliveries per member {:?}",
                        $what,
                        log.java_owned,
                        log.members
                            .iter()
                            .map(|(m, d)| (m, d.len()))
                            .collect::<Vec<_>>()
                    );
                }
            }};
        }

        if broker_impl() == BrokerImpl::Rust {
            // The Rust broker 1.0 with a Java orderly member: the allocation gives Java its
            // share, but Java never takes a queue (its RebalanceImpl adds an orderly queue to
            // its table only once LOCK_BATCH_MQ grants it, so that broker does not grant Java's
            // lock requests), and Java's share is consumed by nobody; ours consumes its own.
            // On Apache's brokers the two share and consume everything. Pinned so a fixed
            // broker shows.
            pump_until!("Java starts", [("java-1", &mut java1)], |log: &Log| {
                log.started.contains("java-1")
            });
            // Five of Java's rebalance rounds.
            let settle = Instant::now() + Duration::from_secs(5);
            pump_until!("", [("java-1", &mut java1)], |_: &Log| Instant::now()
                > settle);
            sent.extend(send_phase(&producer, &topic.name, 0).await);
            let watch = Instant::now() + Duration::from_secs(10);
            pump_until!("", [("java-1", &mut java1)], |_: &Log| Instant::now()
                > watch);
            let ours_count = log.members.get("ours").map_or(0, Vec::len);
            assert!(
                ours_count > 0 && ours_count < sent.len(),
                "ours consumed {ours_count} of {}",
                sent.len()
            );
            assert!(
                log.java_owned.get("java-1").is_none_or(BTreeSet::is_empty),
                "Java took queues on Rust: {:?}",
                log.java_owned
            );
            assert!(!log.members.contains_key("java-1"), "Java consumed on Rust");
            producer.close();
            drop(ours.shutdown().await);
            java1.terminate();
            return;
        }
        pump_until!(
            "Java takes queues",
            [("java-1", &mut java1)],
            |log: &Log| {
                log.java_owned
                    .get("java-1")
                    .is_some_and(|q| !q.is_empty() && q.len() < QUEUES as usize)
            }
        );
        sent.extend(send_phase(&producer, &topic.name, 0).await);
        pump_until!("phase 1 consumed", [("java-1", &mut java1)], |log: &Log| {
            sent.iter().all(|b| log.consumed().contains(b.as_str()))
        });

        for line in java1.terminate() {
            log.java("java-1", &line, &topic.name);
        }
        sent.extend(send_phase(&producer, &topic.name, 1).await);
        pump_until!("phase 2 consumed", [("java-1", &mut java1)], |log: &Log| {
            sent.iter().all(|b| log.consumed().contains(b.as_str()))
        });

        let mut java2 = start_java("orderly-j2");
        pump_until!(
            "the new Java member takes queues",
            [("java-2", &mut java2)],
            |log: &Log| { log.java_owned.get("java-2").is_some_and(|q| !q.is_empty()) }
        );
        sent.extend(send_phase(&producer, &topic.name, 2).await);
        pump_until!("phase 3 consumed", [("java-2", &mut java2)], |log: &Log| {
            sent.iter().all(|b| log.consumed().contains(b.as_str()))
        });
        producer.close();
        drop(ours.shutdown().await);
        for line in java2.terminate() {
            log.java("java-2", &line, &topic.name);
        }

        for member in ["java-1", "ours", "java-2"] {
            let seen = log.members.get(member).map_or(0, Vec::len);
            assert!(
                seen > 0,
                "{member} consumed nothing: {:?}",
                log.members.keys()
            );
        }
        for (member, deliveries) in &log.members {
            let mut last: BTreeMap<i64, i64> = BTreeMap::new();
            for (queue, offset, body) in deliveries {
                if let Some(before) = last.insert(*queue, *offset) {
                    assert!(
                        *offset > before,
                        "{member} went back on queue {queue}: offset {offset} ({body}) after {before}"
                    );
                }
            }
        }
        // Per key: offsets in the queue follow the send order (one queue per key).
        let mut by_key: BTreeMap<&str, BTreeMap<i64, &str>> = BTreeMap::new();
        for (_, offset, body) in log.members.values().flatten() {
            let key = body.split('/').next().unwrap_or_default();
            by_key.entry(key).or_default().insert(*offset, body);
        }
        for (key, by_offset) in by_key {
            let bodies: Vec<&str> = by_offset.values().copied().collect();
            let mut sorted = bodies.clone();
            sorted.sort_unstable();
            assert_eq!(bodies, sorted, "{key}: queue order is send order");
        }
    });
}
