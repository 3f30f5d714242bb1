//! Reconsume-later, retry topic and dead-letter queue on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/reconsume.rs`.

use crate::scenario::reconsume;

#[test]
fn smol_failed_messages_retry_then_reach_the_dead_letter_queue() {
    smol::block_on(
        reconsume::failed_messages_retry_then_reach_the_dead_letter_queue::<
            rocketmq_smol::SmolRuntime,
        >("smol-reconsume"),
    );
}
