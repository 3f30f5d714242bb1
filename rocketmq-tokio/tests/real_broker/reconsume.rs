//! Reconsume-later, retry topic and dead-letter queue on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/reconsume.rs`.

use crate::scenario::reconsume;
use crate::support;

#[test]
fn tokio_failed_messages_retry_then_reach_the_dead_letter_queue() {
    support::block_on(
        reconsume::failed_messages_retry_then_reach_the_dead_letter_queue::<
            rocketmq_tokio::TokioRuntime,
        >("tokio-reconsume"),
    );
}
