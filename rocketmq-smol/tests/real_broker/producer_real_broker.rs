//! The producer on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`):
//! sharded, batched and round-robin sends, read back in per-key order. The scenario is
//! `rocketmq-driver/tests/support/producer_order.rs`.

use crate::scenario::producer_order;

#[test]
fn smol_producer_keeps_per_key_order() {
    smol::block_on(producer_order::sharded_sends_keep_per_key_order::<
        rocketmq_smol::SmolRuntime,
    >("smol-producer"));
}
