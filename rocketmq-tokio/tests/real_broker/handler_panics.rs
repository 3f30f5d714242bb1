//! Panicking handlers on tokio against the real local broker (`scripts/broker start`,
//! `NAMESRV_ADDR`); the scenario is `rocketmq-driver/tests/support/handler_panics.rs`.

use crate::scenario::handler_panics;
use crate::support;

#[test]
fn tokio_panicking_handlers_get_their_messages_again() {
    support::block_on(
        handler_panics::panicking_handlers_get_their_messages_again::<rocketmq_tokio::TokioRuntime>(
            "tokio-panics",
        ),
    );
}
