//! `rmq produce --sharding-key` puts every message on the key's queue in order, and
//! `rmq consume --runtime smol` reads them back; with stderr not a terminal, neither draws
//! progress (no carriage returns), and produce ends with its count/rate/errors line. Needs the
//! real local broker (`scripts/broker start`, `NAMESRV_ADDR`).

use crate::support::{consume_from_first, create_topic, fresh_topic_and_group, rmq};

#[test]
fn sharded_produce_keeps_one_queue_in_order_and_smol_consumes_it() {
    let (topic, group) = fresh_topic_and_group("rmq-cli-sharded");
    create_topic(&topic, 4);

    let (ok, _, stderr) = rmq(&[
        "produce",
        "--topic",
        &topic,
        "--count",
        "40",
        "--sharding-key",
        "order-7",
        "--keys",
        "k1 k2",
        "--body",
        "step {i}",
    ]);
    assert!(ok, "produce failed: {stderr}");
    assert!(
        !stderr.contains('\r'),
        "progress drawn off a terminal: {stderr:?}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("sent 40 messages in ")
            && last.contains("msg/s")
            && last.ends_with(", 0 errors"),
        "final line: {stderr}"
    );

    let (ok, messages, stderr) = consume_from_first(
        &group,
        &topic,
        &["--runtime", "smol", "--count", "40", "--idle-exit", "30"],
        &[],
    );
    assert!(ok, "consume failed: {stderr}");
    assert!(
        !stderr.contains('\r'),
        "live line drawn off a terminal: {stderr:?}"
    );
    assert_eq!(messages.len(), 40, "{stderr}");
    let queues: std::collections::BTreeSet<i64> = messages
        .iter()
        .map(|m| m["queue_id"].as_i64().expect("queue id"))
        .collect();
    assert_eq!(queues.len(), 1, "one sharding key, one queue: {queues:?}");
    let mut by_offset: Vec<(i64, String)> = messages
        .iter()
        .map(|m| {
            (
                m["queue_offset"].as_i64().expect("offset"),
                m["body"].as_str().expect("text body").to_owned(),
            )
        })
        .collect();
    by_offset.sort();
    let bodies: Vec<String> = by_offset.into_iter().map(|(_, body)| body).collect();
    let sent: Vec<String> = (0..40).map(|i| format!("step {i}")).collect();
    assert_eq!(
        bodies, sent,
        "the queue holds the messages in the order sent"
    );
    assert!(
        messages.iter().all(|m| m["keys"] == "k1 k2"),
        "{messages:?}"
    );

    let (ok, _, stderr) = rmq(&[
        "produce",
        "--topic",
        &format!("{topic}-new"),
        "--count",
        "3",
    ]);
    // The broker creates a topic on its first send (autoCreateTopicEnable, as scripts/broker
    // starts every implementation), through the default topic's route, as with Java's producer.
    assert!(ok, "producing to a new topic creates it: {stderr}");
    assert!(stderr.contains("sent 3 messages"), "{stderr}");
}
