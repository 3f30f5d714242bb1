//! Tag filtering on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/tag_filter.rs`.

use crate::scenario::tag_filter;

#[test]
fn smol_only_subscribed_tags_arrive() {
    smol::block_on(tag_filter::only_subscribed_tags_arrive::<
        rocketmq_smol::SmolRuntime,
    >("smol-tag_filter"));
}
