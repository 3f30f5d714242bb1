//! `rmq consume --pop` against a RocketMQ 5.x broker (the java5 matrix of `scripts/test` runs
//! this module with the filter `pop_consume::`; a 4.9 run skips it): three processes pop one
//! topic of ONE queue in one group, each prints a share of the messages as the usual JSON lines,
//! no message is printed twice, every message is printed, and each process ends with its acks
//! counted on stderr. A classic consumer group would give the one queue to one process.
//!
//! The processes are long-polling before anything is sent, and the messages come in bursts
//! a moment apart: the broker wakes one waiting pop per arrival, oldest first
//! (`PopLongPollingService`), so the bursts go round the processes. A backlog sent before
//! they start would go to whichever process popped first (it takes a whole backlog in two
//! pops of 32), which says nothing about sharing.

use std::collections::BTreeMap;

use crate::support::{create_topic, fresh_topic_and_group, rmq};

/// Messages sent, in bursts of `BURST`, and processes popping them.
const MESSAGES: usize = 60;
const BURST: usize = 10;
const MEMBERS: usize = 3;
/// Time for every process to find the route and start its first long poll, and between
/// bursts for the woken process to pop, print, ack and poll again. `--idle-exit` is longer
/// than the whole sending, so no process leaves before the last burst.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(3);
const BETWEEN_BURSTS: std::time::Duration = std::time::Duration::from_millis(300);

#[test]
fn three_pop_processes_share_one_queue() {
    let (topic, group) = fresh_topic_and_group("cli-pop");
    create_topic(&topic, 1);
    let runs: Vec<_> = (0..MEMBERS)
        .map(|_| {
            let (topic, group) = (topic.clone(), group.clone());
            std::thread::spawn(move || {
                rmq(&[
                    "consume",
                    "--pop",
                    "--invisible-time",
                    "30",
                    "--group",
                    &group,
                    "--topic",
                    &topic,
                    "--idle-exit",
                    "10",
                ])
            })
        })
        .collect();
    std::thread::sleep(SETTLE);
    let count = BURST.to_string();
    for burst in 0..MESSAGES / BURST {
        let body = format!("pop {burst}-{{i}}");
        let (ok, _, stderr) = rmq(&[
            "produce", "--topic", &topic, "--count", &count, "--body", &body,
        ]);
        assert!(ok, "produce failed: {stderr}");
        std::thread::sleep(BETWEEN_BURSTS);
    }
    let mut printed: BTreeMap<String, usize> = BTreeMap::new();
    let mut shares = Vec::new();
    for run in runs {
        let (ok, lines, stderr) = run.join().expect("the rmq thread ends");
        assert!(ok, "rmq consume --pop failed: {stderr}");
        for line in &lines {
            assert_eq!(line["topic"], topic.as_str(), "{line}");
            assert_eq!(line["queue_id"], 0, "one queue: {line}");
            assert_eq!(line["broker_name"], "broker-a", "{line}");
            let body = line["body"].as_str().expect("a text body").to_owned();
            *printed.entry(body).or_default() += 1;
        }
        assert!(
            stderr.contains(&format!("acked {} messages", lines.len())),
            "each printed message was acked: {stderr}"
        );
        shares.push(lines.len());
    }
    eprintln!("shares of the {MESSAGES} messages: {shares:?}");
    let twice: Vec<_> = printed.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "printed more than once: {twice:?}");
    assert_eq!(
        printed.len(),
        MESSAGES,
        "every message printed once: shares {shares:?}"
    );
    assert!(
        shares.iter().filter(|share| **share > 0).count() >= 2,
        "the one queue's messages are shared between processes: {shares:?}"
    );
}
