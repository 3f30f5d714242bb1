//! A member killed on the spot (SIGKILL) keeps its queues' broker locks until the broker's 60 s
//! expiry, but leaves the group at once (its connections close). A member that then finds
//! itself alone in the group (a crashed single-instance service restarted, an `rmq consume`
//! run again) starts every queue at once: nobody will release those locks, so there is
//! nothing to wait for. Without this it stood every queue still for `handover_timeout` (6 s).
//! It still consumes from the committed offsets, so only what the killed member consumed
//! after its last commit comes again.

use std::time::Duration;

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};

#[test]
fn a_member_alone_after_a_crash_starts_every_queue_at_once() {
    let mut world = rocketmq_tests::world::World::new(quiet_config(31, 1));
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);
    world.run_until(world.epoch() + Duration::from_secs(5));
    world.produce_to(&queue, 3);
    // Consumed and committed (`ack_commit_interval`, 200 ms).
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(offsets_of(&world.nodes[0].delivered, &queue), vec![0, 1, 2]);

    world.kill(0);
    let joined = world.now;
    let next = world.add_consumer();
    world.run_until(joined + Duration::from_secs(1));
    let started: Vec<MessageQueue> = world.nodes[next]
        .events
        .iter()
        .filter_map(|(_, event)| match event {
            Event::QueueStarted { queue, .. } => Some(queue.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        started.len(),
        6,
        "the 4 topic and 2 retry queues started within 1 s of the join, not after \
         handover_timeout: {started:?}\n{}",
        world.trace_tail(40)
    );
    let stats = world.nodes[next].consumer.stats();
    assert_eq!(
        stats.handover_timeouts, 0,
        "no wait ran out: none was needed"
    );

    world.produce_to(&queue, 2);
    world.run_until(world.now + Duration::from_secs(2));
    assert_eq!(
        offsets_of(&world.nodes[next].delivered, &queue),
        vec![3, 4],
        "it starts at the killed member's commit"
    );
}
