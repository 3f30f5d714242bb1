//! SIGTERM (a rolling deploy's stop) and SIGINT (Ctrl-C) end `rmq consume` gracefully: it
//! stops printing, commits what it printed and exits 0, and the group's next run prints
//! exactly the messages the stopped one did not print, none of them again. Before, a signal
//! killed it on the spot and the next run printed nearly everything again.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::{consume_from_first, consume_until_signal, position};

/// Messages produced for each run.
const MESSAGES: usize = 200;

/// Produces [`MESSAGES`], consumes part of them with a consumer stopped by `signal`, then
/// the rest with the next run of the same group.
fn stopped_by(signal: &str) {
    let (topic, group, mut first, printed) =
        consume_until_signal(&format!("rmq-sig{signal}"), 60, signal);
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
