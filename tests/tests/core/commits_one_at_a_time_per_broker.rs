//! Confirmed commits (`Consumer::commit`, and the final commit at shutdown) go to each broker
//! one at a time: the next `UPDATE_CONSUMER_OFFSET` to a broker leaves only once the one before
//! it was answered. Apache 4.9's `ConsumerOffsetManager.commitOffset` builds a group's per-topic
//! offset map with a get-then-put, so first commits of one topic handled at once by two broker
//! threads can lose one queue's offset; seen with a lite pull consumer's four pipelined commits.
//! Here with four queues per broker and 50-60 ms links, the confirmations of one broker's queues
//! come a round trip apart, and every queue is committed.

use std::time::Duration;

use consumer_core::{ConsumeMode, Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn commits_to_one_broker_wait_for_each_other() {
    let mut config = quiet_config(121, 1);
    config.mode = ConsumeMode::Poll;
    config.queues_per_broker = 4;
    config.latency = (Duration::from_millis(50), Duration::from_millis(60));
    config.consumer_config = |mut c| {
        c.auto_commit = false;
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(2));
    let queues: Vec<MessageQueue> = (0..4)
        .map(|id| MessageQueue::new(TOPIC, "broker-a", id))
        .collect();
    for queue in &queues {
        world.produce_to(queue, 3);
    }
    world.run_until(world.now + Duration::from_millis(500));
    while world.poll(0, 32).is_some() {}

    let asked = world.now;
    let events_before = world.nodes[0].events.len();
    world.nodes[0].consumer.commit(asked);
    world.run_until(asked + Duration::from_secs(2));
    let mut confirmed: Vec<_> = world.nodes[0].events[events_before..]
        .iter()
        .filter_map(|(at, e)| match e {
            Event::Committed(table) => Some(
                table
                    .iter()
                    .filter(|(q, _)| q.broker_name() == "broker-a")
                    .map(|(q, offset)| (*at, q.clone(), *offset))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    confirmed.sort();
    assert_eq!(confirmed.len(), 4, "every queue of broker-a: {confirmed:?}");
    for pair in confirmed.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(
            gap >= Duration::from_millis(100),
            "the next commit waited for the answer before it (a round trip): {gap:?} in {confirmed:?}"
        );
    }
    for queue in &queues {
        assert_eq!(
            world.cluster.committed_offset(GROUP, queue),
            Some(3),
            "{queue:?}"
        );
    }
}
