//! tokio consumers and producer on the cluster with TLS (`TLS_NAMESRV_ADDR`, started by
//! `scripts/test`); the scenarios are `rocketmq-driver/tests/support/tls.rs`.

use crate::scenario::tls;
use crate::support;

#[test]
fn tokio_produce_and_consume_over_tls() {
    support::block_on(tls::produce_and_consume_over_tls::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}

#[test]
fn tokio_bad_certificates_and_plain_servers_fail_with_reasons() {
    support::block_on(tls::bad_certificates_and_plain_servers_fail_with_reasons::<
        rocketmq_tokio::TokioRuntime,
    >());
}
