//! Restart resumes from committed offsets on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/resume_committed.rs`.

use crate::scenario::resume_committed;

#[test]
fn smol_restart_resumes_from_committed_offsets() {
    smol::block_on(resume_committed::restart_resumes_from_committed_offsets::<
        rocketmq_smol::SmolRuntime,
    >("smol-resume_committed"));
}
