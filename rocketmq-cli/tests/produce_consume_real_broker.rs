//! `rmq produce` then `rmq consume` against the real local broker: every body produced is
//! printed once, offsets are committed on exit, and a second run of the same group gets nothing.

use std::process::Command;

use serde_json::Value;

fn rmq(args: &[&str]) -> (bool, Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rmq"))
        .args(args)
        .output()
        .expect("rmq runs");
    let lines = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    (
        out.status.success(),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn produced_messages_are_consumed_once() {
    assert!(
        std::env::var("NAMESRV_ADDR").is_ok(),
        "NAMESRV_ADDR is not set: start the local cluster with `scripts/broker start` (scripts/test does)"
    );
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_micros();
    let topic = format!("rmq-cli-{stamp}");
    let group = format!("rmq-cli-group-{stamp}");
    let (ok, _, stderr) = rmq(&["topic", "create", &topic, "--queues", "2"]);
    assert!(ok, "topic create failed: {stderr}");
    let (ok, _, stderr) = rmq(&[
        "produce", "--topic", &topic, "--count", "30", "--tag", "t", "--body", "body {i}",
    ]);
    assert!(ok, "produce failed: {stderr}");
    assert!(stderr.contains("sent 30 messages"), "{stderr}");

    let (ok, before, stderr) = rmq(&["offsets", "--group", &group, "--topic", &topic]);
    assert!(ok, "offsets failed: {stderr}");
    assert_eq!(before.len(), 2, "one line per queue: {before:?}");
    assert!(
        before.iter().all(|q| q["committed_offset"].is_null()),
        "{before:?}"
    );
    let backlog: i64 = before.iter().map(|q| q["lag"].as_i64().expect("lag")).sum();
    assert_eq!(backlog, 30, "{before:?}");

    let args = [
        "consume",
        "--group",
        &group,
        "--topic",
        &topic,
        "--from",
        "first",
        "--count",
        "30",
        "--idle-exit",
        "30",
    ];
    let (ok, messages, stderr) = rmq(&args);
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
        messages
            .iter()
            .all(|m| m["tags"] == "t" && m["topic"] == topic.as_str())
    );

    let (ok, again, stderr) = rmq(&[
        "consume",
        "--group",
        &group,
        "--topic",
        &topic,
        "--from",
        "first",
        "--idle-exit",
        "3",
    ]);
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
