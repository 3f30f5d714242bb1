//! Reconsume-later, retry topic and dead-letter queue on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/reconsume.rs`.

#[path = "../../rocketmq-driver/tests/support/reconsume.rs"]
mod reconsume;

#[test]
fn tokio_failed_messages_retry_then_reach_the_dead_letter_queue() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(
            reconsume::failed_messages_retry_then_reach_the_dead_letter_queue::<
                rocketmq_tokio::TokioRuntime,
            >("tokio-reconsume"),
        );
}
