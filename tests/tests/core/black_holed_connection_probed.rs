//! A broker connection that goes dead without a FIN while its pulls long-poll (a firewall that
//! dropped its state: the socket stays open and carries nothing, for ever) is found out by the
//! liveness probe, not by waiting for the pulls' own timeout: once it has heard nothing for
//! `probe_after` (10 s) with requests in flight, the consumer heartbeats on it, and when that
//! goes unanswered for `request_timeout` (3 s) the connection is closed, its pulls fail at once,
//! and they go out again on a new connection, which works. Measured from the black hole, the
//! new connection opens within `probe_after` plus the probe check's period (`probe_after / 2`)
//! plus `request_timeout`, well before `pull_timeout` (30 s), and every message produced during
//! the black hole is consumed. Periodic commits, heartbeats and rebalances are off here, so
//! nothing else times out on the connection (three timeouts in a row close it too).

use std::time::Duration;

use consumer_core::MessageQueue;
use rocketmq_tests::scenario::{TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_black_holed_connection_is_probed_and_replaced() {
    let mut config = quiet_config(142, 1);
    // No periodic commits, heartbeats or rebalances: three of their timeouts in a row would
    // close the connection too, and this pins the probe.
    config.consumer_config = |mut c| {
        c.persist_interval = Duration::from_secs(600);
        c.heartbeat_interval = Duration::from_secs(600);
        c.rebalance_interval = Duration::from_secs(600);
        c
    };
    let mut world = World::new(config);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let addr = world.cluster.broker_addr("broker-a");
    // Past the start-up's route lookups, heartbeats and rebalances.
    world.run_until(world.epoch() + Duration::from_secs(10));
    world.produce_to(&a, 5);
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(world.acknowledged(&a).len(), 5);
    assert_eq!(world.connections_opened(&addr), 1);

    // Pulls are now suspended at the broker, waiting for messages; the connection dies.
    world.cluster.black_hole_connections("broker-a");
    let holed_at = world.now;
    world.produce_to(&a, 5);
    let bound = Duration::from_secs(10 + 5 + 3 + 1);
    let mut replaced_after = None;
    for _ in 0..40 {
        world.run_until(world.now + Duration::from_millis(500));
        if world.connections_opened(&addr) > 1 {
            replaced_after = Some(world.now - holed_at);
            break;
        }
    }
    let replaced_after =
        replaced_after.expect("a new connection to broker-a within 20 s of the black hole");
    eprintln!("black-holed connection replaced after {replaced_after:?}");
    assert!(
        replaced_after <= bound,
        "replaced after {replaced_after:?}, later than the probe allows ({bound:?}); the pulls' \
         own timeout is 30 s"
    );

    world.run_until(world.now + Duration::from_secs(10));
    assert_eq!(
        world.acknowledged(&a).len(),
        10,
        "the messages stored during the black hole are consumed on the new connection"
    );
    assert_eq!(
        world.connections_opened(&addr),
        2,
        "one replacement: the new connection is healthy and is not probed away"
    );
}
