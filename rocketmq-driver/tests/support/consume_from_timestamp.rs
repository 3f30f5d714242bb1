//! `ConsumeFrom::Timestamp` against the real broker: a new group starting from a time taken
//! between two batches (sent 1.5 s apart, the time in the middle) receives exactly the later
//! batch where the broker has no offset for the group (the Rust broker).
//!
//! Apache's 4.9 broker answers a new group's offset query with 0 while the queue still starts at
//! offset 0 and its first message is in memory (`ConsumerManageProcessor.queryConsumerOffset`),
//! so a new group on a young topic starts at the first message whatever it asked for: Java's
//! `RebalancePushImpl.computePullFromWhere` takes that 0 as the stored offset, and so does this
//! consumer. There the scenario pins that both batches arrive, once. Apache 5.5 answers that
//! the group has no offset, like the Rust broker, and the timestamp decides.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::broker_scenario::{Topic, sleep, start};
use driver::prelude::*;
use rocketmq_tests::{BrokerImpl, broker_impl, unique};

/// Messages stored before the timestamp.
const BEFORE: usize = 30;
/// Messages stored after it.
const AFTER: usize = 30;

/// Runs the scenario on runtime `R`.
pub(crate) async fn starts_at_the_first_message_stored_after_the_timestamp<R: Runtime>(
    prefix: &str,
) {
    let topic = Topic::create(prefix, 4);
    let before = topic.send("before", BEFORE, None);
    sleep::<R>(Duration::from_millis(750)).await;
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis();
    sleep::<R>(Duration::from_millis(750)).await;
    let after = topic.send("after", AFTER, None);
    let expected = if broker_impl() == BrokerImpl::Java4 {
        before.union(&after).cloned().collect()
    } else {
        after
    };

    let since = i64::try_from(since).expect("the time fits in i64");
    let mut consumer = start::<R>(
        &topic,
        &unique("from-timestamp"),
        "*",
        ConsumeFrom::Timestamp(since),
    );
    consumer
        .exactly::<R>(&expected, &format!("consuming from timestamp {since}"))
        .await;
    consumer.shutdown().await;
}
