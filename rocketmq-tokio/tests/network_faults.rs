//! Network faults between a tokio consumer and the real local cluster, through the fault
//! proxy; the scenario is `rocketmq-driver/tests/support/network_faults.rs`. Its own test
//! binary: the scenarios run one at a time (they share the redirect table) and must not slow
//! the others down.

mod support;

/// The scenario and the helpers it uses, from `rocketmq-driver/tests/support/`.
#[path = "../../rocketmq-driver/tests/support"]
mod scenario {
    pub(crate) mod broker_scenario;
    pub(crate) mod network_faults;
}

use rocketmq_tokio::TokioRuntime;
use scenario::network_faults::{Schedule, consumes_everything_through};

#[test]
fn tokio_consumes_everything_through_connection_resets() {
    support::block_on(consumes_everything_through::<TokioRuntime>(
        "tokio-resets",
        Schedule::Resets,
    ));
}

#[test]
fn tokio_consumes_everything_through_a_black_hole() {
    support::block_on(consumes_everything_through::<TokioRuntime>(
        "tokio-black-hole",
        Schedule::BlackHole,
    ));
}

#[test]
fn tokio_consumes_everything_through_a_stall() {
    support::block_on(consumes_everything_through::<TokioRuntime>(
        "tokio-stall",
        Schedule::Stall,
    ));
}

#[test]
fn tokio_consumes_everything_through_one_byte_writes() {
    support::block_on(consumes_everything_through::<TokioRuntime>(
        "tokio-trickle",
        Schedule::Trickle,
    ));
}

#[test]
fn tokio_consumes_on_while_the_name_server_is_unreachable() {
    support::block_on(consumes_everything_through::<TokioRuntime>(
        "tokio-namesrv-down",
        Schedule::NameServerDown,
    ));
}

#[test]
fn tokio_producer_replaces_a_dead_connection() {
    support::block_on(
        scenario::network_faults::producer_replaces_a_dead_connection::<TokioRuntime>(
            "tokio-producer-black-hole",
        ),
    );
}

#[test]
fn tokio_shutdown_commits_after_a_reset() {
    support::block_on(scenario::network_faults::shutdown_commits_after_a_reset::<
        TokioRuntime,
    >("tokio-reset-shutdown"));
}
