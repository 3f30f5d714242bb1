//! A broker that answers the `consume` example's pull with bytes that are no frame (junk, a
//! length prefix of 2 GiB, a header longer than its frame) gets a clear error, not a crash or
//! a 2 GiB buffer: the example reports the connection lost with the decoder's reason, the core
//! connects again, and the example still shuts down on time (whether its final commit got
//! through depends on when the bad answer came; the exit status says which). The hostile peers
//! of `rocketmq_tests::hostile`: a fake name server routing the topic to a fake broker.

use std::time::Duration;

use rocketmq_tests::hostile::{Mode, Pair};
use rocketmq_tests::unique;

use crate::support::consume;

/// Runs the example against a broker answering pulls in `mode`; returns its standard error.
fn consume_from_hostile_broker(mode: Mode) -> String {
    let topic = unique("Hostile");
    let Pair {
        name_server,
        broker,
    } = Pair::start(&topic, Mode::Honest, mode);
    let (_, lines, stderr, took) = consume(
        &name_server.addr(),
        &topic,
        &unique("hostile"),
        &["--idle-exit", "4"],
    )
    .exit_timed();
    // 4 s idle, then the shutdown: its final commit waits a request timeout (3 s) at most. The
    // time is the process's own: a fresh machine's first test also builds the examples (20 s).
    assert!(
        took < Duration::from_secs(15),
        "{mode:?}: the example took {took:?} to stop; stderr:\n{stderr}"
    );
    assert!(lines.is_empty(), "{mode:?}: no message to print: {lines:?}");
    let lost: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("connection") && l.contains("lost: bad frame: "))
        .collect();
    assert!(
        !lost.is_empty(),
        "{mode:?}: the bad answer is reported as a lost connection with the decoder's reason; \
         stderr:\n{stderr}"
    );
    assert!(
        broker.connections().len() >= 2,
        "{mode:?}: the consumer connected again after the bad frame ({} connections); \
         stderr:\n{stderr}",
        broker.connections().len()
    );
    stderr
}

#[test]
fn junk_instead_of_a_frame() {
    let stderr = consume_from_hostile_broker(Mode::Garbage);
    assert!(stderr.contains("bad JSON header"), "{stderr}");
}

#[test]
fn a_two_gib_length_prefix() {
    let stderr = consume_from_hostile_broker(Mode::HugeLength);
    assert!(
        stderr.contains("is negative") || stderr.contains("exceeds the maximum"),
        "{stderr}"
    );
}

#[test]
fn a_header_longer_than_its_frame() {
    let stderr = consume_from_hostile_broker(Mode::HeaderBeyondFrame);
    assert!(stderr.contains("header length"), "{stderr}");
}
