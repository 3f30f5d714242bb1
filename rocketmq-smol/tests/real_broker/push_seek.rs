//! smol: a running push consumer seeks a queue back on the real broker; the scenario is
//! `rocketmq-driver/tests/support/push_seek.rs`.

use crate::scenario::push_seek;

#[test]
fn smol_seeking_back_delivers_again() {
    smol::block_on(push_seek::seeking_back_delivers_again::<
        rocketmq_smol::SmolRuntime,
    >("smol"));
}
