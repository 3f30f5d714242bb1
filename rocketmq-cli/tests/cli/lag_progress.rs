//! `rmq lag` against the real local broker: after a group read part of a topic, each queue's
//! line shows the broker's max offset, the group's committed offset (the same `rmq offsets`
//! reads), their difference, the last consumed message's store time and (5.x) what is in
//! flight; the totals line sums them. A group that never ran, and a topic nobody created, fail with one line saying so.

use crate::support::{consume_from_first, create_topic, fresh_topic_and_group, rmq};

#[test]
fn lag_shows_each_queue_and_the_totals() {
    let (topic, group) = fresh_topic_and_group("rmq-lag");
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&["produce", "--topic", &topic, "--count", "20"]);
    assert!(ok, "produce failed: {stderr}");
    let (ok, read, stderr) =
        consume_from_first(&group, &topic, &["--count", "12", "--idle-exit", "30"], &[]);
    assert!(ok, "consume failed: {stderr}");
    assert_eq!(read.len(), 12);

    let (ok, lines, stderr) = rmq(&["lag", "--group", &group, "--topic", &topic]);
    assert!(ok, "lag failed: {stderr}");
    let (totals, queues) = lines.split_last().expect("a totals line");
    assert_eq!(queues.len(), 2, "one line per queue: {lines:?}");
    let (ok, offsets, stderr) = rmq(&["offsets", "--group", &group, "--topic", &topic]);
    assert!(ok, "offsets failed: {stderr}");
    let mut committed_total = 0;
    for queue in queues {
        assert_eq!(queue["topic"], topic.as_str(), "{queue}");
        assert_eq!(queue["broker_name"], "broker-a", "{queue}");
        let same = offsets
            .iter()
            .find(|o| o["queue_id"] == queue["queue_id"])
            .expect("the same queue in rmq offsets");
        assert_eq!(queue["broker_offset"], same["max_offset"], "{queue} {same}");
        assert_eq!(
            queue["consumer_offset"], same["committed_offset"],
            "{queue} {same}"
        );
        let (broker, consumer) = (
            queue["broker_offset"].as_i64().expect("broker offset"),
            queue["consumer_offset"].as_i64().expect("consumer offset"),
        );
        assert_eq!(queue["lag"], broker - consumer, "{queue}");
        // A queue read from knows when its last consumed message was stored.
        assert_eq!(consumer > 0, queue["last_timestamp"].is_i64(), "{queue}");
        // 5.x reports where the pulls stand (what was read is pulled, perhaps more); 4.9 does not.
        let inflight = &queue["inflight"];
        assert!(
            inflight.is_null() || inflight.as_i64().is_some_and(|n| n >= 0),
            "{queue}"
        );
        committed_total += consumer;
    }
    // Only printed messages are acknowledged, and offsets commit up to the first unread one.
    assert!(committed_total > 0 && committed_total <= 12, "{lines:?}");
    assert_eq!(totals["group"], group.as_str(), "{totals}");
    assert_eq!(totals["queues"], 2, "{totals}");
    assert_eq!(totals["total_lag"], 20 - committed_total, "{totals}");
    assert!(totals["consume_tps"].is_f64(), "{totals}");
    assert_eq!(
        totals["total_inflight"].is_null(),
        queues[0]["inflight"].is_null(),
        "{totals}"
    );

    // Without --topic the group's topics come from the brokers: this one is among them.
    let (ok, all, stderr) = rmq(&["lag", "--group", &group]);
    assert!(ok, "lag without a topic failed: {stderr}");
    assert!(
        all.iter().filter(|l| l["topic"] == topic.as_str()).count() == 2,
        "{all:?}"
    );

    let (ok, none, stderr) = rmq(&["lag", "--group", &format!("{group}-never")]);
    assert!(!ok && none.is_empty(), "{none:?}");
    assert!(
        stderr
            .trim_end()
            .ends_with("(no member of it ever ran on this cluster)")
            && stderr.contains("not found"),
        "{stderr}"
    );
    let (ok, _, stderr) = rmq(&["lag", "--group", &group, "--topic", "rmq-lag-no-such-topic"]);
    assert!(
        !ok && stderr.contains("topic rmq-lag-no-such-topic not found"),
        "{stderr}"
    );
}
