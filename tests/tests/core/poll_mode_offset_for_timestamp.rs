//! `offset_for_timestamp` (Java's `DefaultLitePullConsumer.offsetForTimestamp`,
//! `SEARCH_OFFSET_BY_TIMESTAMP`, `remoting-protocol.md` §3.8) answers asynchronously with
//! `Event::OffsetForTimestamp` carrying the number the call returned: the first offset stored
//! at or after the time, which an application can then `seek` to.

use std::time::Duration;

use consumer_core::{ConsumeMode, Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, events_where, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn the_offset_for_a_time_comes_back_as_an_event() {
    let mut config = quiet_config(120, 1);
    config.mode = ConsumeMode::Poll;
    let mut world = World::new(config);
    let queue = MessageQueue::new(TOPIC, "broker-b", 1);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue, 2);
    world.run_until(world.epoch() + Duration::from_secs(10));
    world.produce_to(&queue, 3);
    world.run_until(world.now + Duration::from_millis(100));
    while world.poll(0, 32).is_some() {}

    let now = world.now;
    let between = world
        .cluster
        .wall_millis(world.epoch() + Duration::from_secs(5));
    let before = world.cluster.wall_millis(world.epoch());
    let first = world.nodes[0]
        .consumer
        .offset_for_timestamp(now, &queue, between);
    let second = world.nodes[0]
        .consumer
        .offset_for_timestamp(now, &queue, before);
    assert_ne!(first, second, "each call has its own number");
    world.run_until(now + Duration::from_millis(200));
    let answers = events_where(&world, 0, |e| matches!(e, Event::OffsetForTimestamp { .. }));
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(
        answers.contains(&Event::OffsetForTimestamp {
            request: first,
            queue: queue.clone(),
            offset: Ok(2),
        }),
        "the first message stored after 5 s is offset 2: {answers:?}"
    );
    assert!(
        answers.contains(&Event::OffsetForTimestamp {
            request: second,
            queue: queue.clone(),
            offset: Ok(0),
        }),
        "{answers:?}"
    );

    // The answer is a position to seek to.
    let now = world.now;
    world.nodes[0]
        .consumer
        .seek(now, &queue, 2)
        .expect("an owned queue");
    world.run_until(now + Duration::from_millis(100));
    let polled = world.poll(0, 32).expect("taken again from offset 2");
    let offsets: Vec<i64> = polled.messages.iter().map(|m| m.queue_offset()).collect();
    assert_eq!(offsets, vec![2, 3, 4]);
}
