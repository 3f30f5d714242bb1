//! The `consume` example's broker connection is reset (the fault proxy in front of the broker,
//! reached with `--redirect`) while it long-polls, then mid-stream, with pull responses half
//! relayed: the example reconnects, and every message is consumed exactly once, its offsets
//! committed.

use std::time::Duration;

use rocketmq_tests::fault_proxy::{Fault, FaultProxy};
use rocketmq_tests::{any_broker, create_topic, namesrv, unique};

use crate::support::{assert_all_committed, assert_exactly_once, consume, produce};

/// Messages in each of the three rounds.
const ROUND: usize = 200;

/// How long a round may take to be consumed, reconnection included.
const ROUND_TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn a_reset_broker_connection_loses_nothing() {
    let namesrv = namesrv();
    let broker = any_broker(&namesrv);
    let topic = unique("EmbeddedBreak");
    create_topic(&namesrv, &broker, &topic, 4);
    let group = unique("embedded-break");
    let proxy = FaultProxy::start(&broker);
    let redirect = format!("{broker}={}", proxy.addr());

    let total = (3 * ROUND).to_string();
    let mut consumer = consume(
        &namesrv,
        &topic,
        &group,
        &["--count", &total, "--redirect", &redirect],
    );
    let mut produced = Vec::new();

    // 1. A round consumed as usual; then the connection goes while the consumer long-polls.
    produced.extend(produce(&namesrv, &topic, "first-", ROUND));
    consumer.wait_for_lines(ROUND, ROUND_TIMEOUT);
    assert!(
        proxy.reset_all() > 0,
        "the consumer's broker connection was relayed"
    );

    // 2. The next round trickles through the proxy (16 bytes every 2 ms: seconds for the
    //    round), and the connection goes once its first message is consumed, with pull
    //    responses half relayed.
    proxy.set(Fault::Trickle {
        chunk: 16,
        delay: Duration::from_millis(2),
    });
    produced.extend(produce(&namesrv, &topic, "second-", ROUND));
    consumer.wait_for_lines(ROUND + 1, ROUND_TIMEOUT);
    proxy.set(Fault::None);
    let reset = proxy.reset_all();
    let consumed_at_reset = consumer.seen.len();
    assert!(
        reset > 0,
        "the consumer had reconnected before the second break"
    );
    assert!(
        consumed_at_reset < 2 * ROUND,
        "the break came mid-round ({consumed_at_reset} of {} consumed)",
        2 * ROUND
    );
    consumer.wait_for_lines(2 * ROUND, ROUND_TIMEOUT);

    // 3. A last round, after which the consumer shuts down (`--count`) and commits.
    produced.extend(produce(&namesrv, &topic, "third-", ROUND));
    let (consumed, report) = consumer.finish_with_stderr();
    assert_exactly_once(&produced, &consumed);
    assert!(
        proxy.accepted() >= 3,
        "the consumer connected to the broker again after each break ({} connections)",
        proxy.accepted()
    );

    // The group's commits reached the broker: its next run starts after everything.
    assert_all_committed(&namesrv, &topic, &group, &report);
}
