//! The broker killed and restarted under a tokio consumer (`scripts/broker kill|revive`); the
//! scenario is `rocketmq-driver/tests/support/broker_restart.rs`. It stops the shared broker, so
//! it has this test binary to itself (the other scenarios are in `real_broker.rs`).

mod support;

/// The scenario and the helpers it uses, from `rocketmq-driver/tests/support/`.
#[path = "../../rocketmq-driver/tests/support"]
mod scenario {
    pub(crate) mod broker_restart;
    pub(crate) mod broker_scenario;
    pub(crate) mod restart_readers;
}

use scenario::broker_restart;

#[test]
fn tokio_nothing_lost_when_the_broker_is_killed() {
    support::block_on(broker_restart::nothing_lost_when_the_broker_is_killed::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-restart"));
}
