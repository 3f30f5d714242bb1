//! The push-consume scenario against the real local broker, written once and run by each
//! adapter's tests (they include this file with `#[path]`): produce [`MESSAGES`] messages to a
//! new topic with the blocking client, consume them all with a `PushConsumer` on the adapter's
//! runtime, shut down, and check the bodies and the committed offsets.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::broker_scenario::{Topic, body_of, builder, start_forwarding};
use driver::prelude::*;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::unique;

/// Messages produced and expected back.
pub(crate) const MESSAGES: usize = 200;
/// Queues of the test topic.
const QUEUES: i32 = 4;
/// How long consuming them all may take.
const CONSUME_TIMEOUT: Duration = Duration::from_secs(60);

/// A topic filled with messages.
pub(crate) struct Produced {
    topic: Topic,
    bodies: BTreeSet<String>,
}

/// Creates a unique topic and sends [`MESSAGES`] messages to it, spread over its queues.
/// Fails the test when the cluster is not running (see `rocketmq_tests::namesrv`).
pub(crate) fn produce(prefix: &str) -> Produced {
    let topic = Topic::create(prefix, QUEUES);
    let bodies = topic.send("push", MESSAGES, None);
    Produced { topic, bodies }
}

/// Consumes `produced` from the first offset with a new group on runtime `R`, shuts down, and
/// checks that every body arrived and that the final commit covers every message.
pub(crate) async fn consume_all<R: Runtime>(produced: Produced) {
    let Produced { topic, bodies } = produced;
    let started = Instant::now();
    let consumer = builder::<R>(&topic, &unique("push-consume"), "*", ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid");
    let (running, mut rx) = start_forwarding(consumer, body_of);

    let runtime = R::default();
    let mut deadline = runtime.sleep_until(runtime.now() + CONSUME_TIMEOUT);
    let mut received = BTreeSet::new();
    let mut deliveries = 0usize;
    while received.len() < bodies.len() {
        match future::select(rx.next(), deadline.as_mut()).await {
            Either::Left((Some(body), _)) => {
                deliveries += 1;
                received.insert(body);
            }
            Either::Left((None, _)) => panic!("the handler was dropped while consuming"),
            Either::Right(((), _)) => panic!(
                "only {} of {} messages arrived within {CONSUME_TIMEOUT:?} (first missing: {:?})",
                received.len(),
                bodies.len(),
                bodies.difference(&received).next()
            ),
        }
    }
    let consumed = started.elapsed();
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    let total = started.elapsed();
    eprintln!(
        "consumed {} messages ({deliveries} deliveries) in {consumed:?}; shut down after \
         {total:?}; report: {report:?}",
        received.len()
    );

    assert_eq!(received, bodies, "the bodies consumed are the bodies sent");
    let committed: Vec<_> = report
        .committed
        .iter()
        .filter(|(queue, _)| queue.topic() == topic.name)
        .collect();
    assert!(!committed.is_empty(), "no offsets committed: {report:?}");
    let covered: i64 = committed.iter().map(|(_, offset)| offset).sum();
    assert_eq!(
        covered,
        i64::try_from(MESSAGES).unwrap_or(i64::MAX),
        "the committed offsets cover every message: {report:?}"
    );
    assert!(
        report.uncommitted.is_empty(),
        "queues left uncommitted: {report:?}"
    );
}
