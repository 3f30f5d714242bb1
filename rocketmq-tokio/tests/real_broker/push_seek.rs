//! tokio: a running push consumer seeks a queue back on the real broker; the scenario is
//! `rocketmq-driver/tests/support/push_seek.rs`.

use crate::scenario::push_seek;
use crate::support;

#[test]
fn tokio_seeking_back_delivers_again() {
    support::block_on(push_seek::seeking_back_delivers_again::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}
