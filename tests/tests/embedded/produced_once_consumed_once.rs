//! Messages the `produce` example sends are consumed exactly once by the `consume` example,
//! which commits its offsets when it shuts down: a second run of the same group receives
//! nothing.

use rocketmq_tests::{any_broker, create_topic, namesrv, unique};

use crate::support::{Running, assert_exactly_once, produce};

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
    let consume = |extra: &[&str]| {
        let mut args = vec![
            "--namesrv",
            &namesrv,
            "--topic",
            &topic,
            "--group",
            &group,
            "--from",
            "first",
        ];
        args.extend_from_slice(extra);
        Running::start("consume", &args).finish_with_stderr()
    };
    let (consumed, report) = consume(&["--count", &count]);
    assert_exactly_once(&produced, &consumed);

    // The same group again: everything was committed, nothing comes (it would within the
    // first second of an assignment; five are waited).
    let (again, _) = consume(&["--count", "1", "--idle-exit", "5"]);
    assert!(
        again.is_empty(),
        "the group's offsets were committed, yet a second run received {again:?}; the first \
         run's stderr:\n{report}"
    );
}
