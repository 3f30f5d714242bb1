//! Messages the `produce` example sends are consumed exactly once by the `consume` example,
//! which commits its offsets when it shuts down: a second run of the same group receives
//! nothing.

use rocketmq_tests::{any_broker, create_topic, namesrv, unique};

use crate::support::{assert_all_committed, assert_exactly_once, consume, produce};

const MESSAGES: usize = 300;

#[test]
fn produced_messages_are_consumed_once_and_committed() {
    let namesrv = namesrv();
    let topic = unique("Embedded");
    create_topic(&namesrv, &any_broker(&namesrv), &topic, 4);
    let group = unique("embedded");

    let produced = produce(&namesrv, &topic, "once-", MESSAGES);
    assert_eq!(produced.len(), MESSAGES, "a receipt for every message");

    let count = MESSAGES.to_string();
    let (consumed, report) =
        consume(&namesrv, &topic, &group, &["--count", &count]).finish_with_stderr();
    assert_exactly_once(&produced, &consumed);

    // The group's commits reached the broker: its next run starts after everything.
    assert_all_committed(&namesrv, &topic, &group, &report);
}
