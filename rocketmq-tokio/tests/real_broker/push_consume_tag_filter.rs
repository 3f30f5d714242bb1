//! Tag filtering on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/tag_filter.rs`.

use crate::scenario::tag_filter;
use crate::support;

#[test]
fn tokio_only_subscribed_tags_arrive() {
    support::block_on(tag_filter::only_subscribed_tags_arrive::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-tag_filter"));
}
