//! smol: running consumers' stats agree with the real broker; the scenario is
//! `rocketmq-driver/tests/support/stats.rs`.

use crate::scenario::stats;

#[test]
fn smol_stats_agree_with_the_broker() {
    smol::block_on(stats::stats_agree_with_the_broker::<
        rocketmq_smol::SmolRuntime,
    >("smol"));
}
