//! A broker that hangs with its connections open (a stopped process, a half-open link) is not
//! waited on for ever: once `close_after_timeouts` (3) requests in a row time out on the
//! connection, with no answer between them, the consumer closes it and opens a new one, so the
//! broker is back in use as soon as it answers again, and nothing is lost meanwhile.

use std::time::Duration;

use consumer_core::MessageQueue;
use rocketmq_tests::scenario::{TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_connection_that_stopped_answering_is_replaced() {
    let mut world = World::new(quiet_config(141, 1));
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let addr = world.cluster.broker_addr("broker-a");
    world.run_until(world.epoch() + Duration::from_secs(2));
    world.produce_to(&a, 5);
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(world.acknowledged(&a).len(), 5);
    let opened = world.connections_opened(&addr);
    assert_eq!(opened, 1, "one connection to broker-a so far");

    world.cluster.set_broker_silent("broker-a", true);
    // Every request on the connection now times out (heartbeats, consumer lists and locks
    // after 3 s, pulls after 30 s), and each connection opened after it goes the same way.
    world.run_until(world.now + Duration::from_secs(20));
    let replaced = world.connections_opened(&addr) - opened;
    assert!(
        replaced >= 1,
        "replaced once three requests in a row timed out"
    );
    world.run_until(world.now + Duration::from_secs(40));
    let churn = world.connections_opened(&addr) - opened;
    // Three timeouts of 3 s at the quickest, then the reconnect backoff: at most one new
    // connection every 4 s or so while the broker stays silent.
    assert!(
        churn <= 15,
        "{churn} connections in 60 s: bounded by the timeouts it takes to give one up"
    );

    world.cluster.set_broker_silent("broker-a", false);
    world.produce_to(&a, 5);
    world.run_until(world.now + Duration::from_secs(40));
    assert_eq!(
        world.acknowledged(&a).len(),
        10,
        "broker-a is consumed again once it answers"
    );
}
