//! The broker killed and restarted under a smol consumer (`scripts/broker kill|revive`); the
//! scenario is `rocketmq-driver/tests/support/broker_restart.rs`.

#[path = "../../rocketmq-driver/tests/support/broker_restart.rs"]
mod broker_restart;

#[test]
fn smol_nothing_lost_when_the_broker_is_killed() {
    smol::block_on(broker_restart::nothing_lost_when_the_broker_is_killed::<
        rocketmq_smol::SmolRuntime,
    >("smol-restart"));
}
