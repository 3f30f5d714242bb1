//! smol: topics join and leave a running push consumer, and a lite pull consumer is
//! re-assigned, on the real broker; the scenarios are
//! `rocketmq-driver/tests/support/subscribe_while_running.rs`.

use crate::scenario::subscribe_while_running as scenario;

#[test]
fn smol_topics_join_and_leave_a_running_consumer() {
    smol::block_on(scenario::topics_join_and_leave_a_running_consumer::<
        rocketmq_smol::SmolRuntime,
    >("smol"));
}

#[test]
fn smol_a_lite_pull_consumer_is_reassigned() {
    smol::block_on(scenario::a_lite_pull_consumer_is_reassigned::<
        rocketmq_smol::SmolRuntime,
    >("smol"));
}
