//! The broker killed and restarted under a tokio consumer (`scripts/broker kill|revive`); the
//! scenario is `rocketmq-driver/tests/support/broker_restart.rs`.

#[path = "../../rocketmq-driver/tests/support/broker_restart.rs"]
mod broker_restart;
mod support;

#[test]
fn tokio_nothing_lost_when_the_broker_is_killed() {
    support::block_on(broker_restart::nothing_lost_when_the_broker_is_killed::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-restart"));
}
