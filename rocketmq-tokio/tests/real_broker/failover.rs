//! A tokio consumer reading on from the slave when its master dies, on the failover cluster
//! (`FAILOVER_NAMESRV_ADDR`, started by `scripts/test`); the scenario is
//! `rocketmq-driver/tests/support/failover.rs`.

use crate::scenario::failover;
use crate::support;

#[test]
fn tokio_reads_from_the_slave_when_the_master_dies() {
    support::block_on(failover::reads_from_the_slave_when_the_master_dies::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-failover"));
}
