//! The lite pull consumer (subscribe, pause, commit, assign, seek, mid-batch commit and shutdown) on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/lite_pull.rs`.

use crate::scenario::lite_pull;
use crate::support;

#[test]
fn tokio_reads_pauses_commits_and_seeks() {
    support::block_on(lite_pull::reads_pauses_commits_and_seeks::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-lite_pull"));
}

#[test]
fn tokio_commits_and_shuts_down_mid_batch() {
    support::block_on(lite_pull::commit_and_shutdown_mid_batch::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-lite_mid"));
}
