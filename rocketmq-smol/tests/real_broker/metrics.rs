//! smol: a consumer's stats reach the installed `metrics` recorder, on the real broker; the
//! scenario is `rocketmq-driver/tests/support/metrics.rs`.

use crate::scenario::metrics;

#[test]
fn smol_stats_reach_the_recorder() {
    smol::block_on(metrics::stats_reach_the_recorder::<
        rocketmq_smol::SmolRuntime,
    >("smol"));
}
