//! Two consumers of one group on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/group_split.rs`.

use crate::scenario::group_split;
use crate::support;

#[test]
fn tokio_two_members_split_then_one_takes_over() {
    support::block_on(group_split::two_members_split_then_one_takes_over::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-group_split"));
}
