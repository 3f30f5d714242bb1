//! Broadcasting with local offset files on smol against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/broadcasting.rs`.

use crate::scenario::broadcasting;

#[test]
fn smol_every_member_gets_everything_and_resumes_from_its_file() {
    smol::block_on(
        broadcasting::every_member_gets_everything_and_resumes_from_its_file::<
            rocketmq_smol::SmolRuntime,
        >("smol-broadcasting"),
    );
}
