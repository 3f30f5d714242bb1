//! The smol adapter driven from async-std's executor: `async_std::task::block_on` waits while
//! the consumer's tasks run on smol's global executor. Needs the real local broker.

use crate::scenario::real_broker;

use rocketmq_smol::SmolRuntime;

#[test]
fn smol_adapter_runs_under_async_std() {
    let produced = real_broker::produce("async-std-push");
    async_std::task::block_on(async move {
        real_broker::consume_all::<SmolRuntime>(produced).await;
    });
}
