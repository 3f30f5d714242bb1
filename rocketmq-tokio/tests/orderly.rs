//! Orderly consumption keeping per-key order while a member joins on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/orderly.rs`.

#[path = "../../rocketmq-driver/tests/support/orderly.rs"]
mod orderly;

#[test]
fn tokio_per_key_order_holds_while_a_member_joins() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(orderly::per_key_order_holds_while_a_member_joins::<
            rocketmq_tokio::TokioRuntime,
        >("tokio-orderly"));
}
