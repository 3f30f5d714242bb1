//! smol consumers and producer on the cluster with TLS (`TLS_NAMESRV_ADDR`, started by
//! `scripts/test`); the scenarios are `rocketmq-driver/tests/support/tls.rs`.

use crate::scenario::tls;

#[test]
fn smol_produce_and_consume_over_tls() {
    smol::block_on(tls::produce_and_consume_over_tls::<
        rocketmq_smol::SmolRuntime,
    >("smol"));
}

#[test]
fn smol_bad_certificates_and_plain_servers_fail_with_reasons() {
    smol::block_on(tls::bad_certificates_and_plain_servers_fail_with_reasons::<
        rocketmq_smol::SmolRuntime,
    >());
}
