//! SQL92 filtering on tokio against the real local broker (`scripts/broker start`,
//! `NAMESRV_ADDR`); the scenario is `rocketmq-driver/tests/support/sql92_filter.rs`.

use crate::scenario::sql92_filter;
use crate::support;

#[test]
fn tokio_the_broker_evaluates_sql92() {
    support::block_on(sql92_filter::the_broker_evaluates_sql92::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-sql92"));
}
