//! tokio: a consumer's stats reach the installed `metrics` recorder, on the real broker; the
//! scenario is `rocketmq-driver/tests/support/metrics.rs`.

use crate::scenario::metrics;
use crate::support;

#[test]
fn tokio_stats_reach_the_recorder() {
    support::block_on(metrics::stats_reach_the_recorder::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}
