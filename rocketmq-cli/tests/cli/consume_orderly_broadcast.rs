//! `rmq consume --orderly --broadcast` against the real local broker: each queue's messages are
//! printed in offset order, the broadcasting offsets land in the local file under `$HOME`, and a
//! second run of the same group resumes from that file and prints nothing again.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{consume_from_first, create_topic, fresh_topic_and_group, rmq};
use serde_json::Value;

/// Runs `rmq consume --orderly --broadcast` of `topic` as `group` from the first offset, with
/// `HOME` pointing at `home`, so the offset file is the test's own; fails the test when it
/// fails. Returns the JSON lines it printed.
fn consume(home: &Path, group: &str, topic: &str, more: &[&str]) -> Vec<Value> {
    let args = [&["--orderly", "--broadcast"], more].concat();
    let (ok, lines, stderr) =
        consume_from_first(group, topic, &args, &[("HOME", home.as_os_str())]);
    assert!(ok, "consume failed: {stderr}");
    lines
}

#[test]
fn orderly_broadcast_consumes_in_order_and_resumes_from_the_local_file() {
    let (topic, group) = fresh_topic_and_group("rmq-orderly");
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&[
        "produce", "--topic", &topic, "--count", "20", "--body", "m {i}",
    ]);
    assert!(ok, "produce failed: {stderr}");
    let home = std::env::temp_dir().join(format!("rmq-home-{group}"));
    std::fs::create_dir_all(&home).expect("a temporary HOME");

    let messages = consume(
        &home,
        &group,
        &topic,
        &["--count", "20", "--idle-exit", "30"],
    );
    assert_eq!(messages.len(), 20, "{messages:?}");
    let mut last: BTreeMap<i64, i64> = BTreeMap::new();
    for m in &messages {
        let queue = m["queue_id"].as_i64().expect("queue_id");
        let offset = m["queue_offset"].as_i64().expect("queue_offset");
        let previous = last.insert(queue, offset);
        assert!(
            previous.is_none_or(|p| p < offset),
            "queue {queue}: offset {offset} printed after {previous:?}"
        );
        assert_eq!(m["broker_name"], "broker-a", "{m}");
    }
    // `<ip>@DEFAULT/<group>/offsets.json`: Java's key, with the instance name a broadcasting
    // consumer keeps.
    let offsets = home.join(".rocketmq_offsets");
    let clients: Vec<_> = std::fs::read_dir(&offsets)
        .unwrap_or_else(|e| panic!("the offset directory {} exists: {e}", offsets.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    assert_eq!(clients.len(), 1, "one client directory: {clients:?}");
    assert!(
        clients[0].to_string_lossy().ends_with("@DEFAULT"),
        "keyed as Java keys it: {clients:?}"
    );
    let file = clients[0].join(&group).join("offsets.json");
    let stored = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("the offset file {} was written: {e}", file.display()));
    assert!(stored.contains(&topic), "{stored}");

    let again = consume(&home, &group, &topic, &["--idle-exit", "3"]);
    assert!(
        again.is_empty(),
        "resumed from the file, yet printed {again:?}"
    );
    let _ = std::fs::remove_dir_all(&home);
}
