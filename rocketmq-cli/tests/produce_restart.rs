//! `rmq produce` rides through a broker restart, as `kcat` does (issue 29): the broker is
//! killed (SIGKILL) a second into a run and started again 2 s later, and the run still ends
//! with every message stored and none counted as an error; its summary says how many attempts
//! were retried. Before, it exited 1 with "no route for topic" at the first send after the kill.
//!
//! It stops the shared local broker (`scripts/broker kill|revive`), so it is a test binary of
//! its own, as the adapters' `broker_restart` scenarios are: cargo runs test binaries one at a
//! time, and this one has no other test.

#[allow(
    dead_code,
    reason = "the scenarios in cli.rs use the rest of the helpers"
)]
mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{create_topic, fresh_topic_and_group, rmq};

/// Messages produced: a run of a few seconds at full speed on this machine, so the kill
/// lands in the middle of it.
const COUNT: usize = 20_000;
/// Sends in flight at once: what the broker may have stored unanswered when it went, and so
/// the most messages the run may store twice.
const IN_FLIGHT: usize = 2;
/// How long the run may take in all before the test gives up on it.
const RUN_BOUND: Duration = Duration::from_secs(180);

/// Runs `scripts/broker <action> broker-a` and fails the test if it fails.
fn local_broker(action: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/broker");
    let status = Command::new(script)
        .args([action, "broker-a"])
        .status()
        .unwrap_or_else(|e| panic!("run {script} {action}: {e}"));
    assert!(status.success(), "{script} {action} broker-a: {status}");
}

#[test]
fn rmq_produce_rides_through_a_broker_restart() {
    let (topic, group) = fresh_topic_and_group("rmq-restart");
    create_topic(&topic, 4);
    let (count, in_flight) = (COUNT.to_string(), IN_FLIGHT.to_string());
    let mut run = Command::new(env!("CARGO_BIN_EXE_rmq"))
        .args(["produce", "--topic", &topic, "--count", &count])
        .args(["--in-flight", &in_flight, "--size", "64"])
        .args(["--delivery-timeout", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rmq starts");
    let started = Instant::now();

    std::thread::sleep(Duration::from_secs(1));
    assert!(
        run.try_wait().expect("rmq's status").is_none(),
        "rmq produce ended before the broker was killed: raise COUNT"
    );
    local_broker("kill");
    std::thread::sleep(Duration::from_secs(2));
    local_broker("revive");

    let status = loop {
        if let Some(status) = run.try_wait().expect("rmq's status") {
            break status;
        }
        if started.elapsed() > RUN_BOUND {
            let _ = run.kill();
            panic!("rmq produce still running after {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    run.stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut stderr)
        .expect("rmq's stderr reads");
    let summary = stderr.lines().last().unwrap_or_default();
    eprintln!("rmq produce through a broker restart: {summary}");
    assert!(status.success(), "rmq produce failed: {stderr}");
    assert!(
        summary.starts_with(&format!("sent {COUNT} messages")) && summary.ends_with(", 0 errors"),
        "every message stored, none an error: {stderr}"
    );

    // What the broker holds: every message, and at most the sends in flight at the kill twice
    // (stored, but the answer lost with the broker).
    let (ok, queues, stderr) = rmq(&["offsets", "--group", &group, "--topic", &topic]);
    assert!(ok, "offsets: {stderr}");
    let stored: i64 = queues
        .iter()
        .map(|q| q["max_offset"].as_i64().expect("max_offset"))
        .sum();
    let count = i64::try_from(COUNT).expect("COUNT fits an i64");
    let twice = i64::try_from(IN_FLIGHT).expect("IN_FLIGHT fits an i64");
    assert!(
        (count..=count + twice).contains(&stored),
        "{stored} messages stored for {COUNT} sent ({IN_FLIGHT} in flight): {queues:?}"
    );
}
