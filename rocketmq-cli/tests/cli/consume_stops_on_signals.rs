//! SIGTERM (a rolling deploy's stop) and SIGINT (Ctrl-C) end `rmq consume` gracefully: it
//! stops printing, commits what it printed and exits 0, and the group's next run prints
//! exactly the messages the stopped one did not print, none of them again. Before, a signal
//! killed it on the spot and the next run printed nearly everything again.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::support::{Background, consume_from_first, create_topic, fresh_topic_and_group, rmq};

/// Messages produced for each run.
const MESSAGES: usize = 200;

/// A message's position, `(queue_id, queue_offset)`.
fn position(line: &Value) -> (i64, i64) {
    let field = |name: &str| {
        line[name]
            .as_i64()
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    (field("queue_id"), field("queue_offset"))
}

/// Produces [`MESSAGES`], consumes part of them with a consumer stopped by `signal`, then
/// the rest with the next run of the same group.
fn stopped_by(signal: &str) {
    let (topic, group) = fresh_topic_and_group(&format!("rmq-sig{signal}"));
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&["produce", "--topic", &topic, "--count", "200"]);
    assert!(ok, "produce failed: {stderr}");

    // 50 a second: the signal comes in the middle of the stream.
    let mut first = Background::rmq(&[
        "consume", "--group", &group, "--topic", &topic, "--from", "first", "--rate", "50",
    ]);
    let mut printed = Vec::new();
    while printed.len() < 60 {
        let line = first
            .next_line(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("only {} lines before the signal", printed.len()));
        printed.push(position(&line));
    }
    first.signal(signal);
    // What was already on its way to stdout still comes.
    while let Some(line) = first.next_line(Duration::from_secs(10)) {
        printed.push(position(&line));
    }
    let status = first
        .exit_within(Duration::from_secs(20))
        .expect("rmq consume exits after the signal");
    assert!(status.success(), "a graceful stop exits 0: {status}");
    assert!(
        printed.len() < MESSAGES,
        "the signal stopped the run before the end: {} printed",
        printed.len()
    );

    let (ok, rest, stderr) = consume_from_first(&group, &topic, &["--idle-exit", "5"], &[]);
    assert!(ok, "the next run failed: {stderr}");
    let first_run: BTreeSet<(i64, i64)> = printed.iter().copied().collect();
    let next_run: Vec<(i64, i64)> = rest.iter().map(position).collect();
    let again: Vec<_> = next_run.iter().filter(|p| first_run.contains(p)).collect();
    assert!(
        again.is_empty(),
        "the next run printed {} messages the stopped one had printed: {again:?}",
        again.len()
    );
    assert_eq!(
        first_run.len() + next_run.len(),
        MESSAGES,
        "the two runs printed every message once ({} + {})",
        first_run.len(),
        next_run.len()
    );
}

#[test]
fn sigterm_stops_consume_gracefully() {
    stopped_by("TERM");
}

#[test]
fn sigint_stops_consume_gracefully() {
    stopped_by("INT");
}
