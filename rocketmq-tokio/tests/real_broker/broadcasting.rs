//! Broadcasting with local offset files on tokio against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`); the
//! scenario is `rocketmq-driver/tests/support/broadcasting.rs`.

use crate::scenario::broadcasting;
use crate::support;

#[test]
fn tokio_every_member_gets_everything_and_resumes_from_its_file() {
    support::block_on(
        broadcasting::every_member_gets_everything_and_resumes_from_its_file::<
            rocketmq_tokio::TokioRuntime,
        >("tokio-broadcasting"),
    );
}
