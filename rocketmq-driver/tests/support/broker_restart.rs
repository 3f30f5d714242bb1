//! The broker is killed (SIGKILL) and started again while a push consumer consumes and a
//! producer sends: the consumer reconnects on its own, and every message the broker
//! acknowledged is consumed (at least once: offsets committed just before the crash may be
//! lost with it, so some messages may come twice; none may be missing).
//!
//! It stops the shared local broker for a few seconds, so it lives in a test binary of its own
//! (`tests/broker_restart.rs` of each adapter; cargo runs test binaries one at a time), not in
//! the adapter's `real_broker` binary beside the scenarios that need the broker up.

use std::collections::BTreeSet;
use std::time::Duration;

use super::broker_scenario::{Topic, sleep, start};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Messages sent before the crash, and after it.
const PER_PHASE: usize = 40;

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

/// Sends `body`, retrying while the broker is away; returns once the broker stored it.
async fn send_until_stored<R: Runtime>(producer: &driver::Producer<R>, topic: &str, body: String) {
    let runtime = R::default();
    for _ in 0..60 {
        if producer.send(topic, body.clone()).await.is_ok() {
            return;
        }
        runtime
            .sleep_until(runtime.now() + Duration::from_millis(500))
            .await;
    }
    panic!("the broker never stored {body}");
}

/// Sends [`PER_PHASE`] messages with bodies `{topic}/{phase}/{i}`, one after the other, each
/// until the broker stored it; returns their bodies.
async fn send_phase<R: Runtime>(
    producer: &driver::Producer<R>,
    topic: &Topic,
    phase: &str,
) -> BTreeSet<String> {
    let mut bodies = BTreeSet::new();
    for i in 0..PER_PHASE {
        let body = format!("{}/{phase}/{i}", topic.name);
        send_until_stored(producer, &topic.name, body.clone()).await;
        bodies.insert(body);
    }
    bodies
}

/// The scenario on runtime `R`.
pub(crate) async fn nothing_lost_when_the_broker_is_killed<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 4);
    let producer = driver::Producer::<R>::builder(unique("restart-producer"))
        .name_server(topic.namesrv.clone())
        .build()
        .expect("a valid producer configuration");
    let mut consuming = start::<R>(&topic, &unique("restart"), "*", ConsumeFrom::First);
    let before = send_phase(&producer, &topic, "before").await;
    consuming.until::<R>(&before).await;

    broker("kill");
    // While it is down: sends fail and pulls fail; nothing here may be lost later.
    sleep::<R>(Duration::from_secs(2)).await;
    broker("revive");

    let after = send_phase(&producer, &topic, "after").await;
    // Panics with the missing bodies if any never arrives.
    consuming.until::<R>(&after).await;
    consuming.shutdown().await;
}
