//! Network faults between a smol consumer and the real local cluster, through the fault
//! proxy; the scenario is `rocketmq-driver/tests/support/network_faults.rs`. The liveness
//! schedules (a connection that dies without a FIN, a stall longer than the request timeout)
//! run here too, and the producer's dead connection; tokio's binary runs every schedule.

/// The scenario and the helpers it uses, from `rocketmq-driver/tests/support/`.
#[path = "../../rocketmq-driver/tests/support"]
mod scenario {
    pub(crate) mod broker_scenario;
    pub(crate) mod network_faults;
}

use rocketmq_smol::SmolRuntime;
use scenario::network_faults::{Schedule, consumes_everything_through};

#[test]
fn smol_consumes_everything_through_a_black_hole() {
    smol::block_on(consumes_everything_through::<SmolRuntime>(
        "smol-black-hole",
        Schedule::BlackHole,
    ));
}

#[test]
fn smol_consumes_everything_through_a_stall() {
    smol::block_on(consumes_everything_through::<SmolRuntime>(
        "smol-stall",
        Schedule::Stall,
    ));
}

#[test]
fn smol_producer_replaces_a_dead_connection() {
    smol::block_on(
        scenario::network_faults::producer_replaces_a_dead_connection::<SmolRuntime>(
            "smol-producer-black-hole",
        ),
    );
}

#[test]
fn smol_shutdown_commits_after_a_reset() {
    smol::block_on(scenario::network_faults::shutdown_commits_after_a_reset::<
        SmolRuntime,
    >("smol-reset-shutdown"));
}
