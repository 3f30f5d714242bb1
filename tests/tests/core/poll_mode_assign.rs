//! Poll mode's assign mode (Java's `DefaultLitePullConsumer.assign`): a consumer given queues
//! with `assign` consumes exactly those, whatever the group's membership, and no rebalance
//! ever changes them; queues nobody assigned are not consumed.

use std::time::Duration;

use consumer_core::{ConsumeMode, Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn assigned_queues_are_exactly_the_ones_consumed() {
    let mut config = quiet_config(119, 2);
    config.mode = ConsumeMode::Poll;
    let mut world = World::new(config);
    let a0 = MessageQueue::new(TOPIC, "broker-a", 0);
    let a1 = MessageQueue::new(TOPIC, "broker-a", 1);
    let b0 = MessageQueue::new(TOPIC, "broker-b", 0);
    let b1 = MessageQueue::new(TOPIC, "broker-b", 1);
    // Averagely would give node 0 a0 and a1, node 1 b0 and b1.
    let now = world.now;
    world.nodes[0]
        .consumer
        .assign(now, [a0.clone(), b0.clone()])
        .expect("valid queues");
    world.nodes[1]
        .consumer
        .assign(now, [a1.clone()])
        .expect("valid queues");
    for q in [&a0, &a1, &b0, &b1] {
        world.produce_to(q, 3);
    }

    let expect = [vec![a0.clone(), b0.clone()], vec![a1.clone()]];
    let check = |w: &World| {
        for (i, expected) in expect.iter().enumerate() {
            let owned: Vec<_> = w.nodes[i].consumer.assignment().collect();
            assert!(
                owned.iter().all(|q| expected.contains(q)),
                "node {i} owns {owned:?}, assigned {expected:?}"
            );
        }
    };
    // Past two rebalance periods (20 s), and a (subscribing) member joins in between, which
    // makes the brokers notify the group.
    world.run_until_with(world.epoch() + Duration::from_secs(25), check);
    let joined = world.add_consumer();
    world.run_until_with(world.epoch() + Duration::from_secs(45), check);
    assert!(
        world.nodes[joined].consumer.assignment().count() > 0,
        "the subscribing member rebalanced"
    );
    for (i, expected) in expect.iter().enumerate() {
        let owned: Vec<_> = world.nodes[i].consumer.assignment().collect();
        assert_eq!(&owned, expected, "node {i}");
        let assigned: Vec<MessageQueue> = world.nodes[i]
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::Assigned(qs) => Some(qs.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(
            &assigned, expected,
            "node {i} was assigned exactly once each"
        );
        assert!(
            world.nodes[i]
                .events
                .iter()
                .all(|(_, e)| !matches!(e, Event::Revoked(_))),
            "node {i} never lost a queue"
        );
    }

    for (i, expected) in expect.iter().enumerate() {
        let mut taken: Vec<(MessageQueue, i64)> = Vec::new();
        while let Some(polled) = world.poll(i, 32) {
            taken.extend(
                polled
                    .messages
                    .iter()
                    .map(|m| (polled.queue.clone(), m.queue_offset())),
            );
        }
        taken.sort();
        let wanted: Vec<(MessageQueue, i64)> = expected
            .iter()
            .flat_map(|q| (0..3).map(move |o| (q.clone(), o)))
            .collect();
        assert_eq!(taken, wanted, "node {i} takes exactly its queues' messages");
    }
    let stats = world.nodes[1].consumer.stats();
    assert!(
        stats.queues.iter().all(|q| q.queue != b1),
        "the queue nobody assigned is not pulled"
    );
}
