//! `rmq consumer-status` against the real local broker: a running member of the group, ours
//! (`rmq consume`) and Java's (`scripts/java-peer consume`), answers the broker-relayed
//! `GET_CONSUMER_RUNNING_INFO` with its properties, subscriptions and owned queues, printed as
//! one JSON line per member; a group whose members all left, and one that never ran, fail
//! with one line saying so.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Background, create_topic, fresh_topic_and_group, rmq};

/// Asks `rmq consumer-status` every 500 ms (at most 60 times) until a member owns `queues`
/// queues of `topic`; returns that member's line.
fn member_owning(group: &str, topic: &str, queues: usize) -> Value {
    let mut last = String::new();
    for _ in 0..60 {
        let (ok, lines, stderr) = rmq(&["consumer-status", "--group", group]);
        if let Some(line) = lines.iter().find(|l| owned(l, topic) == queues)
            && ok
        {
            return line.clone();
        }
        last = format!("{lines:?} {stderr}");
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("no member of {group} owned {queues} queues of {topic}: {last}");
}

fn owned(line: &Value, topic: &str) -> usize {
    line["running_info"]["mqTable"]
        .as_array()
        .map_or(0, |t| t.iter().filter(|q| q["topic"] == topic).count())
}

fn subscribes(line: &Value, topic: &str) -> bool {
    line["running_info"]["subscriptionSet"]
        .as_array()
        .is_some_and(|s| s.iter().any(|sub| sub["topic"] == topic))
}

#[test]
fn our_running_consumer_reports_its_state() {
    let (topic, group) = fresh_topic_and_group("rmq-status");
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&["produce", "--topic", &topic, "--count", "4"]);
    assert!(ok, "produce failed: {stderr}");
    let member = Background::rmq(&[
        "consume",
        "--group",
        &group,
        "--topic",
        &topic,
        "--from",
        "first",
        "--idle-exit",
        "60",
    ]);
    assert!(
        member.next_line(Duration::from_secs(30)).is_some(),
        "the member consumed nothing"
    );

    let line = member_owning(&group, &topic, 2);
    let id = line["client_id"].as_str().expect("a client id");
    assert!(id.contains('@'), "{line}");
    let info = &line["running_info"];
    assert_eq!(
        info["properties"]["PROP_CONSUME_TYPE"], "CONSUME_PASSIVELY",
        "{line}"
    );
    assert_eq!(info["properties"]["PROP_CONSUMEORDERLY"], "false", "{line}");
    assert_eq!(
        info["properties"]["consumerGroup"],
        group.as_str(),
        "{line}"
    );
    assert!(subscribes(&line, &topic), "{line}");
    assert!(subscribes(&line, &format!("%RETRY%{group}")), "{line}");
    for queue in info["mqTable"].as_array().expect("mqTable") {
        assert_eq!(queue["brokerName"], "broker-a", "{queue}");
        assert!(
            queue["queueId"].is_i64() && queue["commitOffset"].is_i64(),
            "{queue}"
        );
    }
    assert!(info["statusTable"][&topic].is_object(), "{line}");

    drop(member);
    // Killed, the member stops heartbeating: the broker drops it when its connection closes.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, lines, stderr) = rmq(&["consumer-status", "--group", &group]);
        if !ok {
            assert!(lines.is_empty(), "{lines:?}");
            assert!(
                stderr.contains(&format!("consumer group {group} has no live member")),
                "{stderr}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the member never left: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    let (ok, _, stderr) = rmq(&["consumer-status", "--group", &format!("{group}-never")]);
    assert!(!ok && stderr.contains("not found"), "{stderr}");
}

#[test]
fn a_java_member_reports_its_state() {
    let (topic, group) = fresh_topic_and_group("rmq-status-java");
    create_topic(&topic, 2);
    let peer = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/java-peer");
    let _member = Background::start(std::process::Command::new(peer).args([
        "consume",
        "--group",
        &group,
        "--topic",
        &topic,
        "--from",
        "first",
        "--duration-s",
        "60",
    ]));
    let line = member_owning(&group, &topic, 2);
    let info = &line["running_info"];
    assert!(
        info["properties"]["PROP_CLIENT_VERSION"]
            .as_str()
            .is_some_and(|v| v.starts_with("V4_9")),
        "{line}"
    );
    assert_eq!(
        info["properties"]["PROP_CONSUME_TYPE"], "CONSUME_PASSIVELY",
        "{line}"
    );
    assert!(subscribes(&line, &topic), "{line}");
}
