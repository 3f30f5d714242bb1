//! `rmq reset-offset` against the real local broker, with a running `rmq consume` member that
//! has read everything and waits in a long poll: `--to first` goes through the broker, which
//! tells the member (4.9 pushes `RESET_CONSUMER_CLIENT_OFFSET`; 5.x answers its next pull with
//! `PULL_OFFSET_MOVED`), and the member delivers the same messages again; `--to last` moves
//! every offset to the queue's end. With the member gone, the broker reports it offline and the
//! command commits the offsets itself, as mqadmin does, so the next run reads from there. The
//! time from starting the reset to the first message delivered again is printed (`--nocapture`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Background, consume_from_first, create_topic, fresh_topic_and_group, rmq};

const MESSAGES: usize = 10;

fn bodies(lines: &[Value]) -> BTreeSet<String> {
    lines
        .iter()
        .map(|m| m["body"].as_str().expect("a text body").to_owned())
        .collect()
}

/// Runs `rmq reset-offset` until the broker takes it (at most 40 times, 500 ms apart): a 4.9
/// broker refuses it until the member committed every queue once, which it does within 5 s.
fn reset_when_accepted(group: &str, topic: &str, to: &str) -> (Vec<Value>, Instant) {
    let mut last = String::new();
    for _ in 0..40 {
        let started = Instant::now();
        let (ok, lines, stderr) = rmq(&[
            "reset-offset",
            "--group",
            group,
            "--topic",
            topic,
            "--to",
            to,
        ]);
        if ok {
            return (lines, started);
        }
        assert!(
            stderr.contains("not exist"),
            "an unexpected refusal: {stderr}"
        );
        last = stderr;
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("the reset was never accepted: {last}");
}

#[test]
fn a_reset_reaches_the_running_member_and_an_offline_group() {
    let (topic, group) = fresh_topic_and_group("rmq-reset");
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&[
        "produce", "--topic", &topic, "--count", "10", "--body", "m {i}",
    ]);
    assert!(ok, "produce failed: {stderr}");
    let expected: BTreeSet<String> = (0..MESSAGES).map(|i| format!("m {i}")).collect();

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
    let read = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| {
                member
                    .next_line(Duration::from_secs(30))
                    .unwrap_or_else(|| panic!("message {i} of {n} never came"))
            })
            .collect()
    };
    assert_eq!(bodies(&read(MESSAGES)), expected);

    let (reset, started) = reset_when_accepted(&group, &topic, "first");
    assert_eq!(reset.len(), 2, "{reset:?}");
    assert!(
        reset
            .iter()
            .all(|q| q["offset"] == 0 && q["via"] == "broker" && q["topic"] == topic.as_str()),
        "{reset:?}"
    );
    let first = member
        .next_line(Duration::from_secs(30))
        .expect("the member never restarted at the first message");
    let reached = started.elapsed();
    let mut again = vec![first];
    again.extend(read(MESSAGES - 1));
    assert_eq!(bodies(&again), expected, "the same messages again");
    eprintln!(
        "reset --to first reached the running member in {reached:?} (from the command's start)"
    );

    let (last, _) = reset_when_accepted(&group, &topic, "last");
    let (ok, offsets, stderr) = rmq(&["offsets", "--group", &group, "--topic", &topic]);
    assert!(ok, "offsets failed: {stderr}");
    for queue in &last {
        let same = offsets
            .iter()
            .find(|o| o["queue_id"] == queue["queue_id"])
            .expect("the same queue in rmq offsets");
        assert_eq!(queue["offset"], same["max_offset"], "{queue} {same}");
    }
    assert!(
        member.next_line(Duration::from_secs(2)).is_none(),
        "nothing is delivered after a reset to the end"
    );
    drop(member);

    // Offline: the broker answers CONSUMER_NOT_ONLINE (4.9) or resets in its store (5.x).
    let mut offline = Vec::new();
    for _ in 0..40 {
        let (ok, lines, stderr) = rmq(&[
            "reset-offset",
            "--group",
            &group,
            "--topic",
            &topic,
            "--timestamp",
            "0",
        ]);
        assert!(ok, "the offline reset failed: {stderr}");
        if lines.iter().all(|q| q["offset"] == 0) {
            offline = lines;
            break;
        }
        // The broker still counted the killed member as online (its connection not yet seen
        // closed): the push went nowhere. Again.
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(offline.len(), 2, "{offline:?}");
    eprintln!(
        "offline reset went {:?}",
        offline.iter().map(|q| q["via"].clone()).collect::<Vec<_>>()
    );
    let (ok, third, stderr) = consume_from_first(
        &group,
        &topic,
        &["--count", &MESSAGES.to_string(), "--idle-exit", "30"],
        &[],
    );
    assert!(ok, "consume after the offline reset failed: {stderr}");
    assert_eq!(
        bodies(&third),
        expected,
        "the next run starts at the reset offsets"
    );
}
