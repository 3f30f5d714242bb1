//! tokio: topics join and leave a running push consumer, and a lite pull consumer is
//! re-assigned, on the real broker; the scenarios are
//! `rocketmq-driver/tests/support/subscribe_while_running.rs`.

use crate::scenario::subscribe_while_running as scenario;
use crate::support;

#[test]
fn tokio_topics_join_and_leave_a_running_consumer() {
    support::block_on(scenario::topics_join_and_leave_a_running_consumer::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}

#[test]
fn tokio_a_lite_pull_consumer_is_reassigned() {
    support::block_on(scenario::a_lite_pull_consumer_is_reassigned::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}
