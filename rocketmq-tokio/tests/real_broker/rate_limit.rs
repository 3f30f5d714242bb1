//! tokio: a push consumer's rate limit holds on the real broker; the scenario is
//! `rocketmq-driver/tests/support/rate_limit.rs`.

use crate::scenario::rate_limit;
use crate::support;

#[test]
fn tokio_the_handler_gets_the_limits_rate() {
    support::block_on(rate_limit::the_handler_gets_the_limits_rate::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}
