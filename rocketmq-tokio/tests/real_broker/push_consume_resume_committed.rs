//! Restart resumes from committed offsets on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/resume_committed.rs`.

use crate::scenario::resume_committed;
use crate::support;

#[test]
fn tokio_restart_resumes_from_committed_offsets() {
    support::block_on(resume_committed::restart_resumes_from_committed_offsets::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-resume_committed"));
}
