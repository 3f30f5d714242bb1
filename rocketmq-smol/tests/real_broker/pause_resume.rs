//! smol: a running push consumer's paused queue waits until resumed, on the real broker;
//! the scenario is `rocketmq-driver/tests/support/pause_resume.rs`.

use crate::scenario::pause_resume;

#[test]
fn smol_a_paused_queue_waits_until_resumed() {
    smol::block_on(pause_resume::a_paused_queue_waits_until_resumed::<
        rocketmq_smol::SmolRuntime,
    >("smol"));
}
