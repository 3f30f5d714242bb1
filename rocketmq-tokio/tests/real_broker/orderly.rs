//! Orderly consumption keeping per-key order while a member joins on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/orderly.rs`.

use crate::scenario::orderly;
use crate::support;

#[test]
fn tokio_per_key_order_holds_while_a_member_joins() {
    support::block_on(orderly::per_key_order_holds_while_a_member_joins::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-orderly"));
}
