//! The smol adapter against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`):
//! all messages of a new topic arrive, and shutdown commits the offsets.

use crate::scenario::real_broker;

#[test]
fn smol_push_consumer_consumes_everything_from_the_real_broker() {
    let produced = real_broker::produce("smol-push");
    smol::block_on(real_broker::consume_all::<rocketmq_smol::SmolRuntime>(
        produced,
    ));
}
