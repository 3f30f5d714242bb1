//! Quiet hand-overs against the real broker: [`MESSAGES`] messages streamed at a steady rate
//! over [`QUEUES`] queues to a group of two members; a third member joins a third of the way
//! through, and one of the first two shuts down gracefully two thirds of the way through.
//! Every queue changes hands at least once while messages arrive, and:
//!
//! - nothing is lost and nothing is consumed twice;
//! - the group's committed offsets, read from the broker every 100 ms, never go backwards;
//! - no hand-over ran into `handover_timeout` (every old owner released its queues);
//! - the stand-still of the queues that changed hands (the time between the last delivery by
//!   the old owner and the first by the new one) is printed as p50 and max.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::broker_scenario::{
    Owned, Topic, WAIT, build_tracked, builder, group_offset, shutdown_committed, sleep, wait_for,
};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Queues of the topic.
const QUEUES: i32 = 8;
/// Messages streamed.
const MESSAGES: usize = 20_000;
/// Messages sent per [`TICK`]: 2 000 a second.
const PER_TICK: usize = 20;
/// The producer's pace.
const TICK: Duration = Duration::from_millis(10);

/// One delivery: which member handled which message of which queue, and when.
#[derive(Clone, Debug)]
struct Delivery {
    member: char,
    queue: i32,
    body: String,
    at: Instant,
}

/// Every delivery of every member, in the order the handlers ran.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Delivery>>>);

impl Log {
    fn all(&self) -> Vec<Delivery> {
        self.0.lock().map(|d| d.clone()).unwrap_or_default()
    }

    /// Starts member `member` of `group`, logging every message it handles.
    fn member<R: Runtime>(
        &self,
        topic: &Topic,
        group: &str,
        member: char,
    ) -> (RunningConsumer, Owned) {
        let log = self.clone();
        let (consumer, owned) =
            build_tracked(topic, builder::<R>(topic, group, "*", ConsumeFrom::First));
        let running = consumer.start_concurrently(move |messages: Messages| {
            if let Ok(mut log) = log.0.lock() {
                for message in &messages {
                    log.push(Delivery {
                        member,
                        queue: message.queue_id(),
                        body: String::from_utf8_lossy(message.body()).into_owned(),
                        at: Instant::now(),
                    });
                }
            }
            std::future::ready(ConsumeOutcome::Success)
        });
        (running, owned)
    }
}

/// The group's committed offsets read every 100 ms until `stop`; fails on one going back.
fn watch_offsets(
    topic: &Topic,
    group: &str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    let (broker, name, group) = (
        topic.broker().to_owned(),
        topic.name.clone(),
        group.to_owned(),
    );
    std::thread::spawn(move || {
        let mut seen: BTreeMap<i32, i64> = BTreeMap::new();
        let mut reads = 0;
        while !stop.load(Ordering::Relaxed) {
            for queue in 0..QUEUES {
                let Ok(Some(offset)) = group_offset(&broker, &group, &name, queue) else {
                    continue;
                };
                reads += 1;
                let before = seen.insert(queue, offset).unwrap_or(offset);
                assert!(
                    offset >= before,
                    "queue {queue}: the committed offset went back from {before} to {offset}"
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        reads
    })
}

/// The stand-stills of hand-overs: per queue, the time between the last delivery by one
/// member and the first by the next, sorted.
fn stand_stills(deliveries: &[Delivery]) -> Vec<Duration> {
    let mut last: BTreeMap<i32, (char, Instant)> = BTreeMap::new();
    let mut gaps = Vec::new();
    for d in deliveries {
        if let Some((member, at)) = last.get(&d.queue)
            && *member != d.member
        {
            gaps.push(d.at.saturating_duration_since(*at));
        }
        last.insert(d.queue, (d.member, d.at));
    }
    gaps.sort();
    gaps
}

/// Who consumed the duplicated messages: per queue and member, how many and over which
/// stretch of time (from the first delivery of the run), to tell an overlap of two owners from
/// a restart of one.
fn duplicated(deliveries: &[Delivery], counts: &BTreeMap<&str, usize>) -> String {
    let Some(start) = deliveries.first().map(|d| d.at) else {
        return String::new();
    };
    let mut spans: BTreeMap<(i32, char), (usize, Duration, Duration)> = BTreeMap::new();
    for d in deliveries {
        if counts.get(d.body.as_str()).is_some_and(|n| *n > 1) {
            let at = d.at.saturating_duration_since(start);
            let span = spans.entry((d.queue, d.member)).or_insert((0, at, at));
            span.0 += 1;
            span.2 = at;
        }
    }
    spans
        .iter()
        .map(|((queue, member), (n, from, to))| {
            format!("queue {queue} member {member}: {n} from {from:?} to {to:?}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn graceful_changes_consume_nothing_twice<R: Runtime>(prefix: &str) {
    let topic = Arc::new(Topic::create(prefix, QUEUES));
    let group = unique("handover");
    let all: BTreeSet<i32> = (0..QUEUES).collect();
    let log = Log::default();
    let (a, a_owned) = log.member::<R>(&topic, &group, 'a');
    let (b, b_owned) = log.member::<R>(&topic, &group, 'b');
    wait_for::<R>("the first two members split the queues", || {
        let (a, b) = (a_owned.get(), b_owned.get());
        !a.is_empty() && !b.is_empty() && a.union(&b).eq(all.iter())
    })
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_offsets(&topic, &group, Arc::clone(&stop));
    let producer = topic.stream(MESSAGES, PER_TICK, TICK);
    let delivered = |log: &Log| log.0.lock().map(|d| d.len()).unwrap_or(0);
    wait_for::<R>("a third of the stream consumed", || {
        delivered(&log) * 3 >= MESSAGES
    })
    .await;
    let (c, c_owned) = log.member::<R>(&topic, &group, 'c');
    wait_for::<R>("the three members split the queues", || {
        let (a, b, c) = (a_owned.get(), b_owned.get(), c_owned.get());
        !c.is_empty()
            && a.is_disjoint(&c)
            && b.is_disjoint(&c)
            && a.union(&b).count() + c.len() == all.len()
    })
    .await;
    wait_for::<R>("two thirds of the stream consumed", || {
        delivered(&log) * 3 >= MESSAGES * 2
    })
    .await;
    let a_stats = a.stats().await.expect("member a answers its stats");
    shutdown_committed(a).await;
    wait_for::<R>("the two members left own every queue", || {
        let (b, c) = (b_owned.get(), c_owned.get());
        b.is_disjoint(&c) && b.union(&c).eq(all.iter())
    })
    .await;

    let expected = producer.join().expect("the producer sent every message");
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    while delivered(&log) < expected.len() {
        assert!(
            runtime.now() < deadline,
            "{} of {} messages consumed within {WAIT:?}",
            delivered(&log),
            expected.len()
        );
        sleep::<R>(Duration::from_millis(200)).await;
    }
    // Anything consumed twice would arrive by now.
    sleep::<R>(Duration::from_secs(2)).await;
    let mut stats = vec![a_stats];
    for member in [&b, &c] {
        stats.push(member.stats().await.expect("a member answers its stats"));
    }
    for running in [b, c] {
        shutdown_committed(running).await;
    }
    stop.store(true, Ordering::Relaxed);
    let reads = watcher
        .join()
        .expect("the committed offsets never went back");
    assert!(reads > 0, "the committed offsets were read");

    let deliveries = log.all();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &deliveries {
        *counts.entry(d.body.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    let missing = expected
        .iter()
        .filter(|b| !counts.contains_key(b.as_str()))
        .count();
    assert_eq!(missing, 0, "messages lost");
    let handovers: u64 = stats.iter().map(|s| s.handovers).sum();
    let timeouts: u64 = stats.iter().map(|s| s.handover_timeouts).sum();
    assert!(
        twice.is_empty(),
        "{} messages consumed twice ({timeouts} hand-over timeouts): {}",
        twice.len(),
        duplicated(&deliveries, &counts)
    );
    assert_eq!(timeouts, 0, "a hand-over waited out handover_timeout");
    let gaps = stand_stills(&deliveries);
    assert!(
        !gaps.is_empty(),
        "queues changed hands while messages arrived"
    );
    let p50 = gaps[gaps.len() / 2];
    let max = gaps[gaps.len() - 1];
    println!(
        "hand-over: {} messages, 0 twice; {handovers} hand-overs waited for, {} queue changes; \
         stand-still p50 {p50:?}, max {max:?}; {reads} offset reads, none backwards",
        deliveries.len(),
        gaps.len()
    );
}
