//! Orderly consumption against the real broker: messages of [`KEYS`] sharding keys, each sent
//! to queue `hash(key) % QUEUES` with a per-key sequence number, are produced over several
//! seconds while an orderly consumer runs; a second member of the group joins mid-stream and
//! takes over some queues. Across both members' deliveries (recorded in one log, in the order
//! the handlers ran):
//!
//! - no queue is ever in two handlers at once;
//! - per queue, and so per key, a delivery starts at most one past the furthest one started
//!   (nothing skipped) and after the last acknowledged one (nothing acknowledged comes again;
//!   going back is allowed only to redeliver an unacknowledged batch);
//! - every message arrives, and the second member handles some of them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::broker_scenario::{
    Owned, Topic, WAIT, build_tracked, builder, shutdown_committed, sleep, wait_for,
};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Queues of the topic.
const QUEUES: i32 = 4;
/// Sharding keys.
const KEYS: u32 = 8;
/// Messages per key.
const PER_KEY: u32 = 40;
/// Pause between sends, so production spans several seconds and the second member joins
/// while messages still arrive.
const SEND_GAP: Duration = Duration::from_millis(12);
/// Time each handler takes: long enough that a queue handed over while busy would show two
/// handlers at once.
const HANDLER_TIME: Duration = Duration::from_millis(5);

/// The queue of a sharding key: a stable hash (FNV-1a) modulo the queue count, as a producer
/// choosing queues by key would do.
fn queue_of(key: &str) -> i32 {
    let hash = key.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    i32::try_from(hash % QUEUES.unsigned_abs()).unwrap_or(0)
}

/// What happened, in the order the handlers did it.
#[derive(Clone, Debug)]
enum Step {
    /// Member `member` started handling `offset` of `queue` (key `key`, sequence `seq`).
    Start {
        member: char,
        queue: i32,
        offset: i64,
        key: String,
        seq: u32,
    },
    /// The handler of `offset` of `queue` acknowledged it.
    Ack {
        queue: i32,
        offset: i64,
        key: String,
        seq: u32,
    },
}

/// The shared log, and handlers currently running per queue.
#[derive(Clone, Default)]
struct Log {
    steps: Arc<Mutex<Vec<Step>>>,
    busy: Arc<Mutex<BTreeMap<i32, usize>>>,
    overlaps: Arc<Mutex<Vec<String>>>,
}

impl Log {
    fn steps(&self) -> Vec<Step> {
        self.steps.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn push(&self, step: Step) {
        if let Ok(mut steps) = self.steps.lock() {
            steps.push(step);
        }
    }

    /// Starts an orderly member `member` of `group` whose handler logs into this log.
    fn member<R: Runtime>(
        &self,
        topic: &Topic,
        group: &str,
        member: char,
    ) -> (RunningConsumer, Owned) {
        let log = self.clone();
        let (consumer, owned) =
            build_tracked(topic, builder::<R>(topic, group, "*", ConsumeFrom::First));
        let running = consumer.start_orderly(move |messages: Messages| {
            let log = log.clone();
            async move {
                let Some(queue) = messages.first().map(Message::queue_id) else {
                    return ConsumeOutcome::Success;
                };
                log.enter(member, queue);
                let parsed: Vec<(i64, String, u32)> = messages
                    .iter()
                    .map(|m| {
                        let body = String::from_utf8_lossy(m.body()).into_owned();
                        let (key, seq) = parse(&body);
                        (m.queue_offset(), key, seq)
                    })
                    .collect();
                for (offset, key, seq) in &parsed {
                    log.push(Step::Start {
                        member,
                        queue,
                        offset: *offset,
                        key: key.clone(),
                        seq: *seq,
                    });
                }
                sleep::<R>(HANDLER_TIME).await;
                for (offset, key, seq) in parsed {
                    log.push(Step::Ack {
                        queue,
                        offset,
                        key,
                        seq,
                    });
                }
                log.leave(queue);
                ConsumeOutcome::Success
            }
        });
        (running, owned)
    }

    fn enter(&self, member: char, queue: i32) {
        if let Ok(mut busy) = self.busy.lock() {
            let running = busy.entry(queue).or_default();
            *running += 1;
            if *running > 1
                && let Ok(mut overlaps) = self.overlaps.lock()
            {
                overlaps.push(format!(
                    "queue {queue} entered by member {member} while busy"
                ));
            }
        }
    }

    fn leave(&self, queue: i32) {
        if let Ok(mut busy) = self.busy.lock() {
            *busy.entry(queue).or_default() -= 1;
        }
    }
}

/// `(key, seq)` of a body `.../{key}/{seq}`.
fn parse(body: &str) -> (String, u32) {
    let mut parts = body.rsplitn(3, '/');
    let seq = parts.next().and_then(|s| s.parse().ok());
    let key = parts.next();
    match (key, seq) {
        (Some(key), Some(seq)) => (key.to_owned(), seq),
        _ => panic!("unexpected body {body}"),
    }
}

/// Checks that positions of one stream (a queue's offsets or a key's sequence numbers) go
/// forward: each start at most one past the furthest started, and past the last acknowledged.
#[derive(Default)]
struct Order {
    started: Option<i64>,
    acked: Option<i64>,
}

impl Order {
    fn start(&mut self, at: i64, what: &str) {
        if let Some(started) = self.started {
            assert!(
                at <= started + 1,
                "{what}: started {at} after {started}: something was skipped"
            );
        }
        if let Some(acked) = self.acked {
            assert!(
                at > acked,
                "{what}: started {at} after {acked} was acknowledged: out of order"
            );
        }
        self.started = Some(self.started.map_or(at, |s| s.max(at)));
    }

    fn ack(&mut self, at: i64) {
        self.acked = Some(self.acked.map_or(at, |a| a.max(at)));
    }
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn per_key_order_holds_while_a_member_joins<R: Runtime>(prefix: &str) {
    let topic = Arc::new(Topic::create(prefix, QUEUES));
    let group = unique("orderly");
    let keys: Vec<String> = (0..KEYS).map(|k| format!("key{k}")).collect();
    let expected: BTreeSet<String> = keys
        .iter()
        .flat_map(|key| (0..PER_KEY).map(move |seq| format!("{key}/{seq}")))
        .collect();

    let log = Log::default();
    let (first, first_owned) = log.member::<R>(&topic, &group, 'a');
    let all: BTreeSet<i32> = (0..QUEUES).collect();
    wait_for::<R>("the first member owns every queue", || {
        first_owned.get() == all
    })
    .await;

    let producer = {
        let topic = Arc::clone(&topic);
        let keys = keys.clone();
        std::thread::spawn(move || {
            let mut client = topic.client();
            for seq in 0..PER_KEY {
                for key in &keys {
                    let body = format!("{}/{key}/{seq}", topic.name);
                    topic.send_to(&mut client, queue_of(key), &body, Some(key));
                    std::thread::sleep(SEND_GAP);
                }
            }
        })
    };
    let delivered = |log: &Log| {
        log.steps()
            .iter()
            .filter_map(|step| match step {
                Step::Ack { key, seq, .. } => Some(format!("{key}/{seq}")),
                Step::Start { .. } => None,
            })
            .collect::<BTreeSet<_>>()
    };
    wait_for::<R>(
        "a third of the messages before the second member joins",
        || delivered(&log).len() * 3 >= expected.len(),
    )
    .await;
    let (second, second_owned) = log.member::<R>(&topic, &group, 'b');
    wait_for::<R>("the members split the queues", || {
        let (a, b) = (first_owned.get(), second_owned.get());
        !b.is_empty() && a.is_disjoint(&b) && a.union(&b).eq(all.iter())
    })
    .await;

    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    while delivered(&log) != expected {
        assert!(
            runtime.now() < deadline,
            "not every message was acknowledged within {WAIT:?}; missing: {:?}",
            expected.difference(&delivered(&log)).collect::<Vec<_>>()
        );
        sleep::<R>(Duration::from_millis(200)).await;
    }
    producer.join().expect("the producer thread finished");
    for running in [first, second] {
        shutdown_committed(running).await;
    }

    let overlaps = log.overlaps.lock().map(|o| o.clone()).unwrap_or_default();
    assert!(overlaps.is_empty(), "handlers overlapped: {overlaps:?}");
    let steps = log.steps();
    let mut by_queue: BTreeMap<i32, Order> = BTreeMap::new();
    let mut by_key: BTreeMap<String, Order> = BTreeMap::new();
    for step in &steps {
        match step {
            Step::Start {
                queue,
                offset,
                key,
                seq,
                member,
            } => {
                assert_eq!(
                    *queue,
                    queue_of(key),
                    "{key} belongs to queue {}",
                    queue_of(key)
                );
                by_queue
                    .entry(*queue)
                    .or_default()
                    .start(*offset, &format!("queue {queue} (member {member})"));
                by_key
                    .entry(key.clone())
                    .or_default()
                    .start(i64::from(*seq), &format!("key {key} (member {member})"));
            }
            Step::Ack {
                queue,
                offset,
                key,
                seq,
            } => {
                by_queue.entry(*queue).or_default().ack(*offset);
                by_key.entry(key.clone()).or_default().ack(i64::from(*seq));
            }
        }
    }
    let members: BTreeSet<char> = steps
        .iter()
        .filter_map(|step| match step {
            Step::Start { member, .. } => Some(*member),
            Step::Ack { .. } => None,
        })
        .collect();
    assert_eq!(
        members,
        BTreeSet::from(['a', 'b']),
        "both members handled messages"
    );
}
