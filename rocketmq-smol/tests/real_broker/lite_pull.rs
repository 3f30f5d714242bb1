//! The lite pull consumer (subscribe, pause, commit, assign, seek, mid-batch commit and shutdown) on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/lite_pull.rs`.

use crate::scenario::lite_pull;

#[test]
fn smol_reads_pauses_commits_and_seeks() {
    smol::block_on(lite_pull::reads_pauses_commits_and_seeks::<
        rocketmq_smol::SmolRuntime,
    >("smol-lite_pull"));
}

#[test]
fn smol_commits_and_shuts_down_mid_batch() {
    smol::block_on(lite_pull::commit_and_shutdown_mid_batch::<
        rocketmq_smol::SmolRuntime,
    >("smol-lite_mid"));
}
