//! Tag filtering against the real broker: of messages tagged `TagA`, `TagB` and `TagC`, a push
//! consumer subscribed to `TagA || TagC` receives every `TagA` and `TagC` body, each once, and
//! no `TagB` body (it keeps listening a few seconds after the last expected one).

use super::broker_scenario::{Topic, start};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Messages sent with each tag.
const PER_TAG: usize = 20;

/// Sends [`PER_TAG`] messages with each of the three tags to a new topic, then consumes it from
/// the first offset with `TagA || TagC` on runtime `R`.
pub(crate) async fn only_subscribed_tags_arrive<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 4);
    let mut expected = topic.send("TagA", PER_TAG, Some("TagA"));
    let filtered_out = topic.send("TagB", PER_TAG, Some("TagB"));
    expected.extend(topic.send("TagC", PER_TAG, Some("TagC")));
    assert!(expected.is_disjoint(&filtered_out));

    let mut consumer = start::<R>(
        &topic,
        &unique("tag-filter"),
        "TagA || TagC",
        ConsumeFrom::First,
    );
    consumer
        .exactly::<R>(&expected, "subscribed to TagA || TagC")
        .await;
    consumer.shutdown().await;
}
