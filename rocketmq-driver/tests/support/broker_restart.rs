//! The broker is killed (SIGKILL) and started again in the middle of a stream, while a push
//! consumer consumes and a producer sends: the consumer reconnects on its own, every message the
//! broker acknowledged is consumed, and no queue delivers more than one pull batch (32) of its
//! messages twice.
//!
//! The last bound is the point (issue 11): a crashed Apache broker comes back with the committed
//! offsets it last wrote to disk (every 5 s), while the consumer, which had revoked the broker's
//! queues when the broker left the route, had consumed further. Started from the broker's
//! offsets, the queues delivered everything since again (55 to 65 messages per queue in a run
//! of 3,000); they now resume where they stood (`Event::OffsetRestored`).
//!
//! It stops the shared local broker for a few seconds, so it lives in a test binary of its own
//! (`tests/broker_restart.rs` of each adapter; cargo runs test binaries one at a time), not in
//! the adapter's `real_broker` binary beside the scenarios that need the broker up.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::broker_scenario::{
    QUIET, Topic, WAIT, body_of, build_tracked, builder, read_until, sleep, start_forwarding,
};
use driver::prelude::*;
use futures_channel::mpsc::UnboundedReceiver;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::unique;

/// Messages the producer streams, one after the other.
const STREAM: usize = 1_600;
/// The broker is killed once this many messages have been consumed.
const KILL_AFTER: usize = 400;
/// The most messages of one queue that may be delivered twice: one pull batch (Java's
/// `pullBatchSize`, ours too), what was in flight when the broker went.
const PULL_BATCH: usize = 32;

/// Runs `scripts/broker <action> broker-a` and fails the test if it fails.
fn broker(action: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/broker");
    let status = std::process::Command::new(script)
        .args([action, "broker-a"])
        .status()
        .unwrap_or_else(|e| panic!("run {script} {action}: {e}"));
    assert!(
        status.success(),
        "{script} {action} broker-a failed: {status}"
    );
}

/// Sends `body`, retrying while the broker is away; `Err(body)` when it never stored it.
async fn send_until_stored<R: Runtime>(
    producer: &driver::Producer<R>,
    topic: &str,
    body: String,
) -> Result<(), String> {
    let runtime = R::default();
    for _ in 0..60 {
        if producer.send(topic, body.clone()).await.is_ok() {
            return Ok(());
        }
        runtime
            .sleep_until(runtime.now() + Duration::from_millis(500))
            .await;
    }
    Err(body)
}

/// A delivery: the queue, the message's offset in it, and its body.
type Delivery = (i32, i64, String);

/// Adds the next delivery to `seen`, panicking after [`WAIT`] without one.
async fn next_delivery<R: Runtime>(
    deliveries: &mut UnboundedReceiver<Delivery>,
    seen: &mut Vec<Delivery>,
) {
    let runtime = R::default();
    let deadline = runtime.sleep_until(runtime.now() + WAIT);
    match future::select(deliveries.next(), deadline).await {
        Either::Left((Some(delivery), _)) => seen.push(delivery),
        Either::Left((None, _)) => panic!("the handler was dropped while consuming"),
        Either::Right(((), _)) => panic!(
            "no delivery within {WAIT:?}, after {} ({} distinct)",
            seen.len(),
            seen.iter().map(|d| &d.2).collect::<BTreeSet<_>>().len()
        ),
    }
}

/// The scenario on runtime `R`.
pub(crate) async fn nothing_lost_when_the_broker_is_killed<R: Runtime>(prefix: &str) {
    let runtime = R::default();
    let topic = Topic::create(prefix, 4);
    let producer = driver::Producer::<R>::builder(unique("restart-producer"))
        .name_server(topic.namesrv.clone())
        .build()
        .expect("a valid producer configuration");
    let (consumer, _owned) = build_tracked(
        &topic,
        builder::<R>(&topic, &unique("restart"), "*", ConsumeFrom::First),
    );
    let restored = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&restored);
    let consumer = consumer.on_event(move |event| {
        if matches!(event, Event::OffsetRestored { .. }) {
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    let (running, mut deliveries) = start_forwarding(consumer, |m: &Message| -> Delivery {
        (m.queue_id(), m.queue_offset(), body_of(m))
    });

    // The stream, on a task of its own, so it goes on through the crash.
    let (stored_tx, stored) = futures_channel::oneshot::channel();
    let name = topic.name.clone();
    runtime.spawn(Box::pin(async move {
        let mut bodies = BTreeSet::new();
        let mut result = Ok(());
        for i in 0..STREAM {
            let body = format!("{name}/{i}");
            if let Err(body) = send_until_stored(&producer, &name, body.clone()).await {
                result = Err(body);
                break;
            }
            bodies.insert(body);
        }
        let _ = stored_tx.send(result.map(|()| bodies));
    }));

    let mut seen: Vec<Delivery> = Vec::new();
    while seen.len() < KILL_AFTER {
        next_delivery::<R>(&mut deliveries, &mut seen).await;
    }
    broker("kill");
    // While it is down sends and pulls fail, and the name server drops it from the route.
    sleep::<R>(Duration::from_secs(2)).await;
    broker("revive");

    let stored = match stored.await {
        Ok(Ok(bodies)) => bodies,
        Ok(Err(body)) => panic!("the broker never stored {body}"),
        Err(_) => panic!("the producer task ended without a result"),
    };
    loop {
        let consumed: BTreeSet<&String> = seen.iter().map(|d| &d.2).collect();
        if stored.iter().all(|b| consumed.contains(b)) {
            break;
        }
        next_delivery::<R>(&mut deliveries, &mut seen).await;
    }
    // Late duplicates too.
    seen.extend(read_until::<R, Delivery>(&mut deliveries, QUIET, |_| false).await);
    let shutdown = running.shutdown().await;
    assert!(shutdown.is_ok(), "the consumer shuts down: {shutdown:?}");

    // A stored message delivered twice has the same queue and offset both times (a producer's
    // retry of a send the broker stored would be a second message, at another offset).
    let mut times: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for (queue, offset, _) in &seen {
        *times.entry((*queue, *offset)).or_default() += 1;
    }
    let mut twice: BTreeMap<i32, usize> = BTreeMap::new();
    for ((queue, _), n) in &times {
        *twice.entry(*queue).or_default() += n - 1;
    }
    eprintln!(
        "broker restart: {} messages stored, {} deliveries; delivered twice per queue: {twice:?}; \
         queues resumed where they stood: {}",
        stored.len(),
        seen.len(),
        restored.load(Ordering::Relaxed)
    );
    for (queue, n) in &twice {
        assert!(
            *n <= PULL_BATCH,
            "queue {queue} delivered {n} messages twice after the broker's restart \
             (at most one pull batch, {PULL_BATCH}, may be): {twice:?}"
        );
    }
}
