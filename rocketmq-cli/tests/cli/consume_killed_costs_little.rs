//! A member killed on the spot (SIGKILL: a crash, the OOM killer) loses nothing, and the
//! group's next run prints again only what the killed one printed after its last commit.
//! Commits follow acknowledgements within `ack_commit_interval` (200 ms), so that is less than
//! one pull batch (32 messages) at 50 messages a second; with the periodic persist alone
//! (every 5 s, Java's only commit) it was everything the killed run had printed.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::{consume_from_first, consume_until_signal, position};

/// Messages produced.
const MESSAGES: usize = 200;

/// At most this many messages printed by both runs: one pull batch.
const BOUND: usize = 32;

#[test]
fn a_killed_member_costs_less_than_a_pull_batch() {
    // The kill comes 1.6 s into the stream of 50 a second.
    let (topic, group, mut first, printed) = consume_until_signal("rmq-kill", 80, "KILL");
    let status = first
        .exit_within(Duration::from_secs(10))
        .expect("rmq consume dies with SIGKILL");
    assert!(!status.success(), "killed, not exited: {status}");

    let (ok, rest, stderr) = consume_from_first(&group, &topic, &["--idle-exit", "5"], &[]);
    assert!(ok, "the next run failed: {stderr}");
    let killed_run: BTreeSet<(i64, i64)> = printed.iter().copied().collect();
    let next_run: BTreeSet<(i64, i64)> = rest.iter().map(position).collect();
    let again = killed_run.intersection(&next_run).count();
    let all = killed_run.union(&next_run).count();
    assert_eq!(all, MESSAGES, "nothing lost: {all} of {MESSAGES} printed");
    assert!(
        again <= BOUND,
        "the next run printed {again} of the {} messages the killed one had printed; at most \
         {BOUND}",
        killed_run.len()
    );
    println!(
        "killed after {} messages: {again} printed again, 0 lost",
        killed_run.len()
    );
}
