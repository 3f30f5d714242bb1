//! tokio: running consumers' stats agree with the real broker; the scenario is
//! `rocketmq-driver/tests/support/stats.rs`.

use crate::scenario::stats;
use crate::support;

#[test]
fn tokio_stats_agree_with_the_broker() {
    support::block_on(stats::stats_agree_with_the_broker::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}
