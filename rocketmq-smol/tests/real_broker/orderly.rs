//! Orderly consumption keeping per-key order while a member joins on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/orderly.rs`.

use crate::scenario::orderly;

#[test]
fn smol_per_key_order_holds_while_a_member_joins() {
    smol::block_on(orderly::per_key_order_holds_while_a_member_joins::<
        rocketmq_smol::SmolRuntime,
    >("smol-orderly"));
}
