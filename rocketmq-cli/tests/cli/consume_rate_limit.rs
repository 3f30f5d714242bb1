//! `rmq consume --rate N` holds the consumer to N messages a second on the real broker: 60
//! messages at 20/s take about three seconds (the first 100 ms of the rate pass at once),
//! every message arrives, and a rate of zero is refused before anything connects.

use std::time::{Duration, Instant};

use crate::support::{consume_from_first, create_topic, fresh_topic_and_group, rmq};

#[test]
fn consume_is_held_to_its_rate() {
    let (topic, group) = fresh_topic_and_group("rmq-rate");
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&["produce", "--topic", &topic, "--count", "60"]);
    assert!(ok, "produce failed: {stderr}");
    let started = Instant::now();
    let (ok, read, stderr) = consume_from_first(
        &group,
        &topic,
        &["--count", "60", "--idle-exit", "30", "--rate", "20"],
        &[],
    );
    let took = started.elapsed();
    assert!(ok, "consume failed: {stderr}");
    assert_eq!(read.len(), 60, "every message arrives");
    // 58 of the 60 wait for the limit: 2.9 s at 20/s, after the consumer's start.
    assert!(
        took >= Duration::from_millis(2_800),
        "60 messages at 20/s took only {took:?}"
    );

    let (ok, _, stderr) = rmq(&[
        "consume", "--group", &group, "--topic", &topic, "--rate", "0",
    ]);
    assert!(!ok && stderr.contains("--rate"), "{stderr}");
}
