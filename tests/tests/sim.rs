//! The simulated cluster itself (`rocketmq_tests::sim`): the brokers and name server answering as
//! the real ones do, driven by hand (`broker_*`), and the seeded worlds with real consumers
//! (`consume_all`, `seeds`), one module each, all in one test binary. No broker needed.

#[path = "sim/broker_faults.rs"]
mod broker_faults;
#[path = "sim/broker_locks.rs"]
mod broker_locks;
#[path = "sim/broker_long_poll.rs"]
mod broker_long_poll;
#[path = "sim/broker_membership.rs"]
mod broker_membership;
#[path = "sim/broker_offsets.rs"]
mod broker_offsets;
#[path = "sim/broker_pull.rs"]
mod broker_pull;
#[path = "sim/broker_retry.rs"]
mod broker_retry;
#[path = "sim/broker_robustness.rs"]
mod broker_robustness;
#[path = "sim/broker_route.rs"]
mod broker_route;
#[path = "sim/broker_slave.rs"]
mod broker_slave;
#[path = "sim/consume_all.rs"]
mod consume_all;
#[path = "sim/graceful_handover.rs"]
mod graceful_handover;
#[path = "sim/seeds.rs"]
mod seeds;
