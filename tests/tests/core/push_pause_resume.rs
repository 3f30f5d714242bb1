//! A push consumer's paused queue delivers nothing, while the other queues flow, including
//! across a rebalance that keeps the queue (a member joining and leaving); on resume what was
//! cached, and what was stored meanwhile, is delivered in order.

use std::time::Duration;

use consumer_core::MessageQueue;
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_paused_queue_waits_while_the_others_flow() {
    let mut world = World::new(quiet_config(307, 1));
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 0);
    world.run_until(world.epoch() + Duration::from_secs(2));
    world.nodes[0].consumer.pause(&a);
    world.produce_to(&a, 4);
    world.produce_to(&b, 4);
    world.run_until(world.now + Duration::from_secs(3));
    assert_eq!(offsets_of(&world.nodes[0].delivered, &b), vec![0, 1, 2, 3]);
    assert!(
        offsets_of(&world.nodes[0].delivered, &a).is_empty(),
        "nothing of the paused queue is delivered"
    );

    // A member joins and leaves: node 0 keeps (or gets back) queue a, still paused.
    let joined = world.add_consumer();
    world.run_until(world.now + Duration::from_secs(25));
    world.shutdown_one(joined);
    world.run_until(world.now + Duration::from_secs(25));
    assert!(
        world.nodes[0].consumer.assignment().any(|q| q == a),
        "node 0 owns queue a again"
    );
    world.produce_to(&a, 2);
    world.run_until(world.now + Duration::from_secs(3));
    assert!(
        offsets_of(&world.nodes[0].delivered, &a).is_empty(),
        "the pause outlasts the rebalance"
    );

    let now = world.now;
    world.nodes[0].consumer.resume(now, &a);
    world.run_until(world.now + Duration::from_secs(3));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &a),
        (0..6).collect::<Vec<_>>(),
        "on resume the queue is delivered from where it stood"
    );
}
