//! SQL92 filtering on tokio against the real local broker (`scripts/broker start`,
//! `NAMESRV_ADDR`); the scenario is `rocketmq-driver/tests/support/sql92_filter.rs`.

#[path = "../../rocketmq-driver/tests/support/sql92_filter.rs"]
mod sql92_filter;

#[test]
fn tokio_the_broker_evaluates_sql92() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(sql92_filter::the_broker_evaluates_sql92::<
            rocketmq_tokio::TokioRuntime,
        >("tokio-sql92"));
}
