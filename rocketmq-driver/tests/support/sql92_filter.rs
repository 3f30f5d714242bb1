//! SQL92 subscriptions against the real broker (which `scripts/broker` starts with
//! `enablePropertyFilter = true`): the subscription is accepted (`CHECK_CLIENT_CONFIG`),
//! registered with its expression type, and the broker evaluates it on every pull: a group
//! subscribed with `TRUE` receives every message exactly once, a group subscribed with `FALSE`
//! none while the first drains the topic.
//!
//! Then an expression over a message property, `seq >= 10`: Apache's brokers (4.9 and 5.x)
//! deliver exactly the messages that match; rocketmq-broker-rust 1.0.0 does not see producer
//! properties when it evaluates SQL92 on pulled messages, so there the group gets nothing, which
//! this pins as that broker's deviation (README, Compatibility).

use super::broker_scenario::{QUIET, Topic, builder, start_built};
use driver::prelude::*;
use rocketmq_tests::{broker_impl, unique};

/// Messages sent.
const COUNT: usize = 20;

/// Sends [`COUNT`] messages with a property to a new topic, then consumes it from the first
/// offset with `TRUE` and with `FALSE` in two groups on runtime `R`.
pub(crate) async fn the_broker_evaluates_sql92<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 4);
    let all = topic.send_with("sql", COUNT, |i, message| {
        message.set_property("seq", i.to_string());
    });

    let sql = |expression: &str| {
        builder::<R>(&topic, &unique("sql92"), "*", ConsumeFrom::First)
            // Replaces the tag subscription the scenario builder made.
            .subscribe_sql92(topic.name.clone(), expression)
    };
    let mut some = start_built(&topic, sql("seq >= 10"));
    let mut nothing = start_built(&topic, sql("FALSE"));
    let mut everything = start_built(&topic, sql("TRUE"));
    everything
        .exactly::<R>(&all, "subscribed with SQL92 TRUE")
        .await;
    let leaked = nothing.during::<R>(QUIET).await;
    assert!(
        leaked.is_empty(),
        "subscribed with SQL92 FALSE, yet received {leaked:?}"
    );
    let matching: std::collections::BTreeSet<String> = if broker_impl().is_java() {
        (10..COUNT)
            .map(|i| format!("{}/sql/{i}", topic.name))
            .collect()
    } else {
        std::collections::BTreeSet::new()
    };
    if matching.is_empty() {
        let got = some.during::<R>(QUIET).await;
        assert!(
            got.is_empty(),
            "the Rust broker matched properties: {got:?}"
        );
    } else {
        some.exactly::<R>(&matching, "subscribed with SQL92 seq >= 10")
            .await;
    }
    some.shutdown().await;
    everything.shutdown().await;
    let report = nothing.shutdown().await;
    // FALSE still moves through the queues: the broker skipped every message, and the group's
    // offsets end past them all (the messages went round robin over the 4 queues).
    let offsets: Vec<i64> = report
        .committed
        .iter()
        .filter(|(mq, _)| mq.topic() == topic.name)
        .map(|(_, offset)| *offset)
        .collect();
    assert_eq!(
        offsets,
        vec![COUNT as i64 / 4; 4],
        "the FALSE group's committed offsets: {report:?}"
    );
}
