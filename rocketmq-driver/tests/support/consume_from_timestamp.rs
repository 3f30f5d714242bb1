//! `ConsumeFrom::Timestamp` against the real broker: a new group starting from a time taken
//! between two batches (sent 1.5 s apart, the time in the middle) receives exactly the later
//! batch.

#[path = "broker_scenario.rs"]
mod broker_scenario;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use broker_scenario::{Topic, sleep, start};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Messages stored before the timestamp.
const BEFORE: usize = 30;
/// Messages stored after it.
const AFTER: usize = 30;

/// Runs the scenario on runtime `R`.
pub(crate) async fn starts_at_the_first_message_stored_after_the_timestamp<R: Runtime>(
    prefix: &str,
) {
    let topic = Topic::create(prefix, 4);
    topic.send("before", BEFORE, None);
    sleep::<R>(Duration::from_millis(750)).await;
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis();
    sleep::<R>(Duration::from_millis(750)).await;
    let after = topic.send("after", AFTER, None);

    let since = i64::try_from(since).expect("the time fits in i64");
    let mut consumer = start::<R>(
        &topic,
        &unique("from-timestamp"),
        "*",
        ConsumeFrom::Timestamp(since),
    );
    consumer
        .exactly::<R>(&after, &format!("consuming from timestamp {since}"))
        .await;
    consumer.shutdown().await;
}
