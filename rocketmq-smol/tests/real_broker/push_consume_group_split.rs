//! Two consumers of one group on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/group_split.rs`.

use crate::scenario::group_split;

#[test]
fn smol_two_members_split_then_one_takes_over() {
    smol::block_on(group_split::two_members_split_then_one_takes_over::<
        rocketmq_smol::SmolRuntime,
    >("smol-group_split"));
}
