//! A `PushConsumer` on tokio consumes every message of a new topic from the real local broker,
//! then commits its offsets on shutdown. Needs `scripts/broker start` and `NAMESRV_ADDR`.

use crate::scenario::real_broker;
use crate::support;

use rocketmq_tokio::TokioRuntime;

#[test]
fn tokio_push_consumer_consumes_everything_from_the_real_broker() {
    let produced = real_broker::produce("tokio-push");
    support::block_on(real_broker::consume_all::<TokioRuntime>(produced));
}
