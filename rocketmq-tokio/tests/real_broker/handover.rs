//! Quiet hand-overs on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`):
//! the scenario is `rocketmq-driver/tests/support/handover.rs`.

use crate::scenario::handover;
use crate::support;

#[test]
fn tokio_graceful_changes_consume_nothing_twice() {
    support::block_on(handover::graceful_changes_consume_nothing_twice::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-handover"));
}
