//! A pull response for an earlier life of a queue changes nothing: node 0 owns a queue with a
//! long poll parked at the broker, loses the queue to a member that joins, and gets it back
//! (a new assignment epoch, a new parked pull) when that member leaves. A message then wakes
//! both parked pulls; the answer to the old one is dropped and counted in
//! `stats().stale_responses`, and the message is delivered once, from the new pull.

use std::time::Duration;

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, offsets_of, queue_stats, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn answer_to_a_pull_of_a_revoked_and_reassigned_queue_is_dropped() {
    let mut world = World::new(quiet_config(71, 1));
    // Node 0's alone; the newcomer's while it is there (ids sort #0 < #1, AVG).
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);
    world.run_until(world.epoch() + Duration::from_secs(2));
    let assigned = |w: &World| {
        w.nodes[0]
            .events
            .iter()
            .filter(|(_, e)| matches!(e, Event::Assigned(q) if q.contains(&queue)))
            .count()
    };
    assert_eq!(assigned(&world), 1);

    let newcomer = world.add_consumer();
    world.run_until(world.now + Duration::from_secs(2));
    assert!(world.nodes[0].consumer.assignment().all(|q| q != queue));
    assert!(
        world.nodes[0]
            .events
            .iter()
            .any(|(_, e)| *e == Event::Revoked(vec![queue.clone()]))
    );

    world.shutdown_one(newcomer);
    world.run_until(world.now + Duration::from_secs(2));
    assert!(world.nodes[newcomer].consumer.is_closed());
    assert!(world.nodes[0].consumer.assignment().any(|q| q == queue));
    assert_eq!(assigned(&world), 2, "assigned again, in a new epoch");
    // Both of node 0's pulls of the queue are parked: the first life's (its 15 s suspend has
    // not run out) and the second's.
    let stale_before = world.nodes[0].consumer.stats().stale_responses;

    let offsets = world.produce_to(&queue, 3);
    world.run_until(world.now + Duration::from_secs(1));
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(
        stats.stale_responses,
        stale_before + 1,
        "the first life's pull answered with the messages, and was dropped\n{}",
        world.trace_tail(30)
    );
    let delivered = offsets_of(&world.nodes[0].delivered, &queue);
    assert_eq!(delivered, offsets, "each message once, in order");
    let q = queue_stats(&world, 0, &queue);
    assert_eq!((q.next_pull_offset, q.committable_offset), (3, 3));

    // Nothing else turns up later either.
    world.run_until(world.now + Duration::from_secs(30));
    let again = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue == queue)
        .count();
    assert_eq!(again, 3);
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(3));
}
