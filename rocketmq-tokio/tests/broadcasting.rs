//! Broadcasting with local offset files on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/broadcasting.rs`.

#[path = "../../rocketmq-driver/tests/support/broadcasting.rs"]
mod broadcasting;

#[test]
fn tokio_every_member_gets_everything_and_resumes_from_its_file() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(
            broadcasting::every_member_gets_everything_and_resumes_from_its_file::<
                rocketmq_tokio::TokioRuntime,
            >("tokio-broadcasting"),
        );
}
