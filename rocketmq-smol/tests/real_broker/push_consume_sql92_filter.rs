//! SQL92 filtering on smol against the real local broker (`scripts/broker start`,
//! `NAMESRV_ADDR`); the scenario is `rocketmq-driver/tests/support/sql92_filter.rs`.

use crate::scenario::sql92_filter;

#[test]
fn smol_the_broker_evaluates_sql92() {
    smol::block_on(sql92_filter::the_broker_evaluates_sql92::<
        rocketmq_smol::SmolRuntime,
    >("smol-sql92"));
}
