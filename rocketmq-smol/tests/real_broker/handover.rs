//! Quiet hand-overs on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`):
//! the scenario is `rocketmq-driver/tests/support/handover.rs`.

use crate::scenario::handover;

#[test]
fn smol_graceful_changes_consume_nothing_twice() {
    smol::block_on(handover::graceful_changes_consume_nothing_twice::<
        rocketmq_smol::SmolRuntime,
    >("smol-handover"));
}
