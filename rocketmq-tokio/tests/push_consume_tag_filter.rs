//! Tag filtering on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/tag_filter.rs`.

#[path = "../../rocketmq-driver/tests/support/tag_filter.rs"]
mod tag_filter;

#[test]
fn tokio_only_subscribed_tags_arrive() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(tag_filter::only_subscribed_tags_arrive::<
            rocketmq_tokio::TokioRuntime,
        >("tokio-tag_filter"));
}
