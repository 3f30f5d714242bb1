//! An orderly consumer does not consume a broker's queues while only its slave is up, even
//! though the slave holds their messages: queue locks are asked of the master and no other
//! node (Java's `RebalanceImpl.lock` asks `findBrokerAddressInSubscribe(name, MASTER_ID,
//! true)`), because a slave's lock table is its own (4.9's `lockBatchMQ` checks no role) and a
//! lock taken there would not stop the master, once back, locking the queue for another member.
//! The other broker's queues flow meanwhile; once the master is back its queues are locked
//! there and consumed in order, each message once.

use std::time::Duration;

use consumer_core::{ConsumeMode, MessageQueue};
use proto::RequestCode;
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn an_orderly_queue_waits_for_its_master_while_the_slave_serves() {
    let mut config = quiet_config(13, 1);
    config.mode = ConsumeMode::Orderly;
    config.slaves = Some(Duration::from_millis(100));
    let mut world = World::new(config);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 0);
    let slave = world
        .cluster
        .slave_addr("broker-a")
        .expect("broker-a has a slave");
    world.run_until(world.epoch() + Duration::from_secs(35));
    assert!(world.nodes[0].consumer.assignment().any(|q| q == a));

    // Stored and copied to the slave, but not pulled (the queue is paused until its long poll
    // came back empty); then the master is lost.
    world.nodes[0].consumer.pause(&a);
    world.run_until(world.now + Duration::from_secs(21));
    world.produce_to(&a, 10);
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(world.cluster.slave_max_offset(&a), 10);
    world.cluster.set_broker_down("broker-a", true);
    let now = world.now;
    world.nodes[0].consumer.resume(now, &a);

    world.run_until(world.now + Duration::from_secs(10));
    world.produce_to(&b, 5);
    world.run_until(world.now + Duration::from_secs(90));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &b),
        (0..5).collect::<Vec<_>>(),
        "the other broker's queue flows"
    );
    assert!(
        offsets_of(&world.nodes[0].delivered, &a).is_empty(),
        "nothing of broker-a while only its slave is up: {}",
        world.trace_tail(20)
    );
    assert_eq!(
        world.requests_sent(&slave, RequestCode::LOCK_BATCH_MQ),
        0,
        "no lock is asked of the slave"
    );

    world.cluster.set_broker_down("broker-a", false);
    world.run_until(world.now + Duration::from_secs(60));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &a),
        (0..10).collect::<Vec<_>>(),
        "in order, each once, under the master's lock"
    );
}
