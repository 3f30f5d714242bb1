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
//! It also measures the recovery (issue 29): from the broker's registration with the name server
//! (watched from a thread of the test) to the first message the producer gets stored and to
//! the first delivery of a message stored after the crash, each asserted within
//! [`RECOVERY_BOUND`], and printed for the README's Reliability section. The producer's sends
//! ride the restart on their own send timeout, as an application's would: a send started
//! while the broker is down asks the name server again until the broker is back.
//!
//! It stops the shared local broker for a few seconds, so it lives in a test binary of its own
//! (`tests/broker_restart.rs` of each adapter; cargo runs test binaries one at a time), not in
//! the adapter's `real_broker` binary beside the scenarios that need the broker up.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::broker_scenario::{
    QUIET, Topic, WAIT, body_of, build_tracked, builder, read_until, sleep, start_forwarding,
};
use super::restart_readers;
use driver::prelude::*;
use futures_channel::mpsc::UnboundedReceiver;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::{try_route, unique};

/// Messages the producer streams, one after the other.
const STREAM: usize = 1_600;
/// The broker is killed once this many messages have been consumed.
const KILL_AFTER: usize = 400;
/// The most messages of one queue that may be delivered twice: one pull batch (Java's
/// `pullBatchSize`, ours too), what was in flight when the broker went.
const PULL_BATCH: usize = 32;
/// The producer's send timeout: longer than the restart, so a send started while the broker
/// is down is stored once it is back (a 4.9 broker starts in 3 to 10 s here).
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the stream may take in all, retries included: a bound on the test, far past any
/// restart seen (sends that fail are retried, and counted).
const STREAM_BOUND: Duration = Duration::from_secs(180);
/// The longest the first stored send and the first delivery may come after the broker's
/// registration: the name server is asked again every 200 ms by a send without a route, and
/// the consumer's pulls resume as soon as its route lookup finds the broker.
const RECOVERY_BOUND: Duration = Duration::from_secs(5);
/// How often the watcher asks the name server for the topic's route.
const WATCH_EVERY: Duration = Duration::from_millis(20);

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

/// Sends `body` until it is stored or `deadline` passes (`Err(body)`), counting the sends that
/// failed in `failed`.
async fn send_until_stored<R: Runtime>(
    producer: &driver::Producer<R>,
    topic: &str,
    body: String,
    deadline: Instant,
    failed: &mut Vec<String>,
) -> Result<(), String> {
    let runtime = R::default();
    while Instant::now() < deadline {
        match producer.send(topic, body.clone()).await {
            Ok(_) => return Ok(()),
            Err(e) => failed.push(format!("{body}: {e}")),
        }
        runtime
            .sleep_until(runtime.now() + Duration::from_millis(100))
            .await;
    }
    Err(body)
}

/// When the name server stopped and started again listing a route for `topic`.
#[derive(Debug, Default)]
struct Registration {
    /// It dropped the killed broker's route (`None`: not within 10 s of the kill).
    gone: Option<Instant>,
    /// It listed the route again: the restarted broker registered.
    back: Option<Instant>,
}

/// Watches the name server at `namesrv` from a thread of its own, from just after the kill:
/// when the route of `topic` is gone, then back (each poll bounded by the helpers' request
/// timeout, the whole watch by two minutes).
fn watch_registration(namesrv: String, topic: String) -> std::thread::JoinHandle<Registration> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut seen = Registration::default();
        while start.elapsed() < Duration::from_secs(120) {
            // When it was asked, not when it answered: a name server busy with the restart
            // may answer late, and what it answers held when the request came.
            let now = Instant::now();
            // A request that failed says nothing either way: asked again next time.
            let Ok(found) = try_route(&namesrv, &topic) else {
                std::thread::sleep(WATCH_EVERY);
                continue;
            };
            let listed = found.is_some_and(|r| !r.queue_datas.is_empty());
            match (listed, seen.gone) {
                (false, None) => seen.gone = Some(now),
                (true, Some(_)) => {
                    seen.back = Some(now);
                    break;
                }
                // Never dropped within 10 s: the route is back as soon as it was never gone.
                (true, None) if start.elapsed() > Duration::from_secs(10) => break,
                _ => {}
            }
            std::thread::sleep(WATCH_EVERY);
        }
        seen
    })
}

/// A delivery: the queue, the message's offset in it, its body, and when the handler had it.
type Delivery = (i32, i64, String, Instant);

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
        .send_timeout(SEND_TIMEOUT)
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
        (m.queue_id(), m.queue_offset(), body_of(m), Instant::now())
    });
    let readers = restart_readers::start::<R>(&topic);

    // The stream, on a task of its own, so it goes on through the crash; when each body was
    // stored, and the sends that failed.
    let (stored_tx, stored) = futures_channel::oneshot::channel();
    let name = topic.name.clone();
    runtime.spawn(Box::pin(async move {
        let deadline = Instant::now() + STREAM_BOUND;
        let mut bodies = BTreeMap::new();
        let mut failed = Vec::new();
        let mut result = Ok(());
        for i in 0..STREAM {
            let body = format!("{name}/{i}");
            let sent = send_until_stored(&producer, &name, body.clone(), deadline, &mut failed);
            if let Err(body) = sent.await {
                result = Err((body, failed.clone()));
                break;
            }
            bodies.insert(body, Instant::now());
        }
        let _ = stored_tx.send(result.map(|()| (bodies, failed)));
    }));

    let mut seen: Vec<Delivery> = Vec::new();
    while seen.len() < KILL_AFTER {
        next_delivery::<R>(&mut deliveries, &mut seen).await;
    }
    broker("kill");
    let killed = Instant::now();
    let watch = watch_registration(topic.namesrv.clone(), topic.name.clone());
    // While it is down sends and pulls fail, and the name server drops it from the route.
    sleep::<R>(Duration::from_secs(2)).await;
    let revived = Instant::now();
    broker("revive");
    let revive_returned = Instant::now();

    let (stored, failed) = match stored.await {
        Ok(Ok(stored)) => stored,
        Ok(Err((body, failed))) => panic!(
            "the broker never stored {body} within {STREAM_BOUND:?}; {} sends failed, the \
             last: {:?}",
            failed.len(),
            failed.last()
        ),
        Err(_) => panic!("the producer task ended without a result"),
    };
    loop {
        let consumed: BTreeSet<&String> = seen.iter().map(|d| &d.2).collect();
        if stored.keys().all(|b| consumed.contains(b)) {
            break;
        }
        next_delivery::<R>(&mut deliveries, &mut seen).await;
    }
    // Late duplicates too.
    seen.extend(read_until::<R, Delivery>(&mut deliveries, QUIET, |_| false).await);
    let shutdown = running.shutdown().await;
    assert!(shutdown.is_ok(), "the consumer shuts down: {shutdown:?}");

    // When each kind of consumer first had a message stored after the crash.
    let all: BTreeSet<&String> = stored.keys().collect();
    let after_crash: BTreeSet<&String> = stored
        .iter()
        .filter(|(_, at)| **at > killed)
        .map(|(body, _)| body)
        .collect();
    let push_first = seen
        .iter()
        .filter(|d| after_crash.contains(&d.2))
        .map(|d| d.3)
        .min()
        .expect("messages stored after the crash were delivered");
    let mut firsts = vec![("push", push_first)];
    for reader in &readers {
        firsts.push((
            reader.kind,
            reader.first_after_crash(&all, &after_crash).await,
        ));
    }
    for reader in readers {
        reader.shutdown().await;
    }

    // A stored message delivered twice has the same queue and offset both times (a producer's
    // retry of a send the broker stored would be a second message, at another offset).
    let mut times: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for (queue, offset, _, _) in &seen {
        *times.entry((*queue, *offset)).or_default() += 1;
    }
    let mut twice: BTreeMap<i32, usize> = BTreeMap::new();
    for ((queue, _), n) in &times {
        *twice.entry(*queue).or_default() += n - 1;
    }
    eprintln!(
        "broker restart: {} messages stored, {} deliveries; delivered twice per queue: {twice:?}; \
         queues resumed where they stood: {}; sends that failed: {}",
        stored.len(),
        seen.len(),
        restored.load(Ordering::Relaxed),
        failed.len()
    );
    check_recovery(
        prefix,
        killed,
        revived,
        revive_returned,
        watch
            .join()
            .expect("the registration watcher does not panic"),
        &stored,
        &firsts,
    );
    for (queue, n) in &twice {
        assert!(
            *n <= PULL_BATCH,
            "queue {queue} delivered {n} messages twice after the broker's restart \
             (at most one pull batch, {PULL_BATCH}, may be): {twice:?}"
        );
    }
}

/// Prints the recovery times and asserts the first stored send and each consumer's first
/// delivery of a message stored after the crash (`firsts`, by kind) come within
/// [`RECOVERY_BOUND`] of the registration.
fn check_recovery(
    runtime: &str,
    killed: Instant,
    revived: Instant,
    revive_returned: Instant,
    registration: Registration,
    stored: &BTreeMap<String, Instant>,
    firsts: &[(&str, Instant)],
) {
    // Without a route that was seen to go (a name server that kept the dead broker listed),
    // the registration is when `scripts/broker revive` saw it, up to 0.1 s late.
    let registered = registration.back.unwrap_or(revive_returned);
    let first_stored = stored
        .values()
        .filter(|at| **at > killed)
        .min()
        .copied()
        .expect("messages were stored after the crash (the stream outlasts it)");
    let since = |at: Instant| at.saturating_duration_since(registered);
    let deliveries: Vec<String> = firsts
        .iter()
        .map(|(kind, at)| format!("{kind} {:?}", since(*at)))
        .collect();
    eprintln!(
        "broker restart recovery ({runtime}): route gone {:?} after the kill; broker started \
         {:?} after the kill, registered {:?} after its start; from the registration: first \
         stored send {:?}; first delivery of a message stored after the crash: {}",
        registration
            .gone
            .map(|at| at.saturating_duration_since(killed)),
        revived.saturating_duration_since(killed),
        registered.saturating_duration_since(revived),
        since(first_stored),
        deliveries.join(", "),
    );
    assert!(
        since(first_stored) <= RECOVERY_BOUND,
        "the first send stored {:?} after the broker registered again (at most \
         {RECOVERY_BOUND:?})",
        since(first_stored)
    );
    for (kind, at) in firsts {
        assert!(
            since(*at) <= RECOVERY_BOUND,
            "the {kind} consumer's first message stored after the crash came {:?} after the \
             broker registered again (at most {RECOVERY_BOUND:?})",
            since(*at)
        );
    }
}
