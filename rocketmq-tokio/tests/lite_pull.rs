//! The lite pull consumer (subscribe, pause, commit, assign, seek) on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/lite_pull.rs`.

#[path = "../../rocketmq-driver/tests/support/lite_pull.rs"]
mod lite_pull;
mod support;

#[test]
fn tokio_reads_pauses_commits_and_seeks() {
    support::block_on(lite_pull::reads_pauses_commits_and_seeks::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-lite_pull"));
}
