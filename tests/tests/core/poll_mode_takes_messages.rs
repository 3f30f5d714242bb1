//! Poll mode (Java's lite pull consumer): nothing is pushed (`Output::Deliver` never appears);
//! the application takes messages with `poll_messages(now, max)`, which returns at most `max`
//! messages of one queue, in offset order, queues taking turns; taken messages count as
//! consumed, so with `auto_commit` their offsets are committed by the persist timer.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::{ConsumeMode, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn poll_returns_at_most_max_messages_of_one_queue_in_order() {
    let mut config = quiet_config(114, 1);
    config.mode = ConsumeMode::Poll;
    let mut world = World::new(config);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 1);
    world.produce_to(&a, 10);
    world.produce_to(&b, 7);
    world.run_until(world.epoch() + Duration::from_secs(2));
    assert!(
        world.nodes[0].delivered.is_empty(),
        "poll mode delivers nothing by itself"
    );
    let owned: Vec<_> = world.nodes[0].consumer.assignment().collect();
    assert_eq!(
        owned.len(),
        4,
        "the topic's 4 queues, and no retry topic: {owned:?}"
    );

    let mut taken: BTreeMap<MessageQueue, Vec<i64>> = BTreeMap::new();
    let mut order = Vec::new();
    while let Some(polled) = world.poll(0, 4) {
        assert!(
            (1..=4).contains(&polled.messages.len()),
            "{} messages for max 4",
            polled.messages.len()
        );
        for m in &polled.messages {
            assert_eq!(m.topic(), polled.queue.topic());
            assert_eq!(m.queue_id(), polled.queue.queue_id());
        }
        order.push(polled.queue.clone());
        taken
            .entry(polled.queue.clone())
            .or_default()
            .extend(polled.messages.iter().map(|m| m.queue_offset()));
    }
    assert_eq!(
        taken.get(&a),
        Some(&(0..10).collect::<Vec<_>>()),
        "in order, each once"
    );
    assert_eq!(taken.get(&b), Some(&(0..7).collect::<Vec<_>>()));
    assert_eq!(taken.len(), 2);
    assert_ne!(order[0], order[1], "queues take turns: {order:?}");
    assert_eq!(
        order.len(),
        5,
        "3 polls of a (4+4+2), 2 of b (4+3): {order:?}"
    );
    assert!(world.poll(0, 4).is_none(), "nothing left");
    assert!(world.poll(0, 0).is_none());

    // Later messages are pulled and can be taken too.
    world.produce_to(&a, 2);
    world.run_until(world.now + Duration::from_millis(100));
    let polled = world.poll(0, 32).expect("the new messages");
    assert_eq!(polled.queue, a);
    let offsets: Vec<i64> = polled.messages.iter().map(|m| m.queue_offset()).collect();
    assert_eq!(offsets, vec![10, 11]);

    world.run_until(world.now + Duration::from_secs(6));
    assert!(world.nodes[0].delivered.is_empty());
    assert_eq!(
        world.cluster.committed_offset(GROUP, &a),
        Some(12),
        "auto-commit stores what was taken"
    );
    assert_eq!(world.cluster.committed_offset(GROUP, &b), Some(7));
}
