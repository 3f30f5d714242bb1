//! `rmq produce` then `rmq consume` against the real local broker: every body produced is
//! printed once, offsets are committed on exit, and a second run of the same group gets nothing.

use crate::support::{consume_from_first, create_topic, fresh_topic_and_group, rmq};

#[test]
fn produced_messages_are_consumed_once() {
    let (topic, group) = fresh_topic_and_group("rmq-cli");
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&[
        "produce", "--topic", &topic, "--count", "30", "--tag", "t", "--body", "body {i}",
    ]);
    assert!(ok, "produce failed: {stderr}");
    assert!(stderr.contains("sent 30 messages"), "{stderr}");

    let (ok, before, stderr) = rmq(&["offsets", "--group", &group, "--topic", &topic]);
    assert!(ok, "offsets failed: {stderr}");
    assert_eq!(before.len(), 2, "one line per queue: {before:?}");
    // Nothing committed: the Rust broker says so (no offset); Apache's brokers answer 0 while
    // the queue starts at 0 in memory (ConsumerManageProcessor.queryConsumerOffset).
    assert!(
        before
            .iter()
            .all(|q| q["committed_offset"].is_null() || q["committed_offset"] == 0),
        "{before:?}"
    );
    let backlog: i64 = before.iter().map(|q| q["lag"].as_i64().expect("lag")).sum();
    assert_eq!(backlog, 30, "{before:?}");

    let (ok, messages, stderr) =
        consume_from_first(&group, &topic, &["--count", "30", "--idle-exit", "30"], &[]);
    assert!(ok, "consume failed: {stderr}");
    let mut bodies: Vec<String> = messages
        .iter()
        .map(|m| m["body"].as_str().expect("text body").to_owned())
        .collect();
    bodies.sort();
    let mut expected: Vec<String> = (0..30).map(|i| format!("body {i}")).collect();
    expected.sort();
    assert_eq!(bodies, expected);
    assert!(
        messages.iter().all(|m| m["tags"] == "t"
            && m["topic"] == topic.as_str()
            && m["broker_name"] == "broker-a"),
        "{messages:?}"
    );

    let (ok, again, stderr) = consume_from_first(&group, &topic, &["--idle-exit", "3"], &[]);
    assert!(ok, "second consume failed: {stderr}");
    let (ok, after, stderr) = rmq(&["offsets", "--group", &group, "--topic", &topic]);
    assert!(ok, "offsets failed: {stderr}");
    for queue in &after {
        assert_eq!(queue["committed_offset"], queue["max_offset"], "{after:?}");
        assert_eq!(queue["lag"], 0, "{after:?}");
    }
    assert!(
        again.is_empty(),
        "committed offsets were not honoured: {} redelivered",
        again.len()
    );
}
