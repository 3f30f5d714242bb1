//! Panicking handlers on smol against the real local broker (`scripts/broker start`,
//! `NAMESRV_ADDR`); the scenario is `rocketmq-driver/tests/support/handler_panics.rs`.

use crate::scenario::handler_panics;

#[test]
fn smol_panicking_handlers_get_their_messages_again() {
    smol::block_on(
        handler_panics::panicking_handlers_get_their_messages_again::<rocketmq_smol::SmolRuntime>(
            "smol-panics",
        ),
    );
}
