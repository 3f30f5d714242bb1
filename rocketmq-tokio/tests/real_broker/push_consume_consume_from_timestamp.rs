//! `ConsumeFrom::Timestamp` on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/consume_from_timestamp.rs`.

use crate::scenario::consume_from_timestamp;
use crate::support;

#[test]
fn tokio_starts_at_the_first_message_stored_after_the_timestamp() {
    support::block_on(
        consume_from_timestamp::starts_at_the_first_message_stored_after_the_timestamp::<
            rocketmq_tokio::TokioRuntime,
        >("tokio-consume_from_timestamp"),
    );
}
