//! `rmq query` against the real local broker: `--key` finds every message of the topic with
//! that key in the brokers' index (and no message with another key), printed as `rmq consume`
//! prints them; `--id` finds one message by its offset message id (`VIEW_MESSAGE_BY_ID` to the
//! broker the id names) and, with `--topic`, by its unique key; ids nobody stored fail with one
//! line saying so.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::support::{create_topic, fresh_topic_and_group, rmq};

/// `rmq query --topic T --key K` until it finds `n` messages (the broker indexes a message
/// shortly after storing it): at most 40 tries, 250 ms apart.
fn query_key(topic: &str, key: &str, n: usize) -> Vec<Value> {
    let mut last = String::new();
    for _ in 0..40 {
        let (ok, lines, stderr) = rmq(&["query", "--topic", topic, "--key", key]);
        if ok && lines.len() == n {
            return lines;
        }
        last = format!("{lines:?} {stderr}");
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("{key}: never {n} messages: {last}");
}

#[test]
fn messages_are_found_by_key_and_by_id() {
    let (topic, _) = fresh_topic_and_group("rmq-query");
    create_topic(&topic, 2);
    for (count, keys, body) in [("3", "order-A shared", "a {i}"), ("2", "order-B", "b {i}")] {
        let (ok, _, stderr) = rmq(&[
            "produce", "--topic", &topic, "--count", count, "--keys", keys, "--body", body,
        ]);
        assert!(ok, "produce failed: {stderr}");
    }

    let a = query_key(&topic, "order-A", 3);
    let bodies: BTreeSet<&str> = a.iter().filter_map(|m| m["body"].as_str()).collect();
    assert_eq!(bodies, BTreeSet::from(["a 0", "a 1", "a 2"]), "{a:?}");
    assert!(
        a.iter().all(|m| m["topic"] == topic.as_str()
            && m["keys"] == "order-A shared"
            && m["broker_name"] == "broker-a"),
        "{a:?}"
    );
    assert_eq!(query_key(&topic, "shared", 3).len(), 3);
    let b = query_key(&topic, "order-B", 2);

    let wanted = &b[1];
    let offset_id = wanted["offset_msg_id"]
        .as_str()
        .expect("an offset message id");
    let (ok, by_offset, stderr) = rmq(&["query", "--id", offset_id]);
    assert!(ok, "query by offset id failed: {stderr}");
    assert_eq!(by_offset.as_slice(), std::slice::from_ref(wanted));

    let unique = wanted["msg_id"].as_str().expect("a unique key");
    assert_ne!(unique, offset_id, "our producer sets UNIQ_KEY");
    let (ok, by_unique, stderr) = rmq(&["query", "--id", unique, "--topic", &topic]);
    assert!(ok, "query by unique key failed: {stderr}");
    assert_eq!(by_unique.as_slice(), std::slice::from_ref(wanted));

    let (ok, none, stderr) = rmq(&["query", "--topic", &topic, "--key", "order-C"]);
    assert!(!ok && none.is_empty(), "{none:?}");
    assert!(stderr.contains("has key order-C"), "{stderr}");
    let (ok, _, stderr) = rmq(&["query", "--id", unique]);
    assert!(
        !ok && stderr.contains("--topic"),
        "a unique key without a topic: {stderr}"
    );
    // The same broker, an offset far past anything a test cluster stores.
    let far = format!("{}00000000FFFFFFFF", &offset_id[..16]);
    let (ok, _, stderr) = rmq(&["query", "--id", &far]);
    assert!(!ok && stderr.contains("no message with id"), "{stderr}");
}
