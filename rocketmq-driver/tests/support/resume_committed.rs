//! Restarting resumes from the committed offsets, against the real broker: a consumer takes
//! every message of a topic and shuts down (committing); after more messages are sent, a new
//! consumer of the same group, though configured with `ConsumeFrom::First`, receives exactly the
//! new ones and none of the first again.

use super::broker_scenario::{Topic, start};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Messages consumed before the restart.
const BEFORE: usize = 40;
/// Messages sent while no consumer runs.
const AFTER: usize = 30;

/// Runs the scenario on runtime `R`.
pub(crate) async fn restart_resumes_from_committed_offsets<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 4);
    let group = unique("resume");
    let before = topic.send("before", BEFORE, None);
    let mut consumer = start::<R>(&topic, &group, "*", ConsumeFrom::First);
    consumer.exactly::<R>(&before, "before the restart").await;
    let report = consumer.shutdown().await;
    let committed: i64 = report
        .committed
        .iter()
        .filter(|(queue, _)| queue.topic() == topic.name)
        .map(|(_, offset)| offset)
        .sum();
    assert_eq!(
        committed,
        i64::try_from(BEFORE).unwrap_or(i64::MAX),
        "the committed offsets cover every message consumed: {report:?}"
    );

    let after = topic.send("after", AFTER, None);
    let mut restarted = start::<R>(&topic, &group, "*", ConsumeFrom::First);
    restarted.exactly::<R>(&after, "after the restart").await;
    restarted.shutdown().await;
}
