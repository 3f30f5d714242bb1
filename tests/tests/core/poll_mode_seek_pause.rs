//! Poll-mode position controls (Java's `DefaultLitePullConsumer.seek/pause/resume`): `seek`
//! moves a queue back to an offset, so messages from there are taken again
//! (`Event::OffsetReset`); `pause` stops a queue, neither handing out nor pulling it, while
//! other queues go on; `resume` restarts it where it stopped.

use std::time::Duration;

use consumer_core::{ConsumeMode, Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, queue_stats, quiet_config};
use rocketmq_tests::world::World;

fn take_all(world: &mut World, queue: &MessageQueue) -> Vec<i64> {
    let mut taken = Vec::new();
    while let Some(polled) = world.poll(0, 32) {
        assert_eq!(polled.queue, *queue, "only {queue:?} has messages");
        taken.extend(polled.messages.iter().map(|m| m.queue_offset()));
    }
    taken
}

/// Node 0's cached messages of `queue` and the offset its next pull asks for.
fn cache_and_next_pull(world: &World, queue: &MessageQueue) -> (usize, i64) {
    let q = queue_stats(world, 0, queue);
    (q.cached_messages, q.next_pull_offset)
}

/// Has node 0 seek `queue` to `offset` now, then runs 100 ms.
fn seek(world: &mut World, queue: &MessageQueue, offset: i64) {
    let now = world.now;
    world.nodes[0]
        .consumer
        .seek(now, queue, offset)
        .expect("an owned, started queue");
    world.run_until(world.now + Duration::from_millis(100));
}

/// One poll-mode consumer, started.
fn poll_world(seed: u64) -> World {
    let mut config = quiet_config(seed, 1);
    config.mode = ConsumeMode::Poll;
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world
}

#[test]
fn seek_takes_messages_again_from_the_offset() {
    let mut world = poll_world(116);
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);
    world.produce_to(&queue, 5);
    world.run_until(world.now + Duration::from_millis(100));
    assert_eq!(take_all(&mut world, &queue), vec![0, 1, 2, 3, 4]);

    seek(&mut world, &queue, 2);
    assert!(
        world.nodes[0].events.iter().any(|(_, e)| *e
            == Event::OffsetReset {
                queue: queue.clone(),
                offset: 2
            }),
        "the seek is reported"
    );
    assert_eq!(
        take_all(&mut world, &queue),
        vec![2, 3, 4],
        "taken again from the offset sought"
    );

    // Taking goes on after the messages taken again, and a queue can be sought again.
    world.produce_to(&queue, 5);
    world.run_until(world.now + Duration::from_millis(100));
    assert_eq!(take_all(&mut world, &queue), vec![5, 6, 7, 8, 9]);
    seek(&mut world, &queue, 7);
    assert_eq!(take_all(&mut world, &queue), vec![7, 8, 9]);

    let unknown = MessageQueue::new("OtherTopic", "broker-a", 0);
    let now = world.now;
    assert!(
        world.nodes[0].consumer.seek(now, &unknown, 0).is_err(),
        "a queue not owned cannot be sought"
    );
}

#[test]
fn a_paused_queue_is_neither_handed_out_nor_pulled_until_resumed() {
    let mut world = poll_world(117);
    let paused = MessageQueue::new(TOPIC, "broker-a", 0);
    let other = MessageQueue::new(TOPIC, "broker-b", 1);
    world.produce_to(&paused, 3);
    world.run_until(world.now + Duration::from_millis(100));
    assert_eq!(take_all(&mut world, &paused), vec![0, 1, 2]);

    world.nodes[0].consumer.pause(&paused);
    // A pull of the paused queue may still be held at the broker: whatever it brings stays
    // in the cache; after it no pull of the queue goes out.
    world.produce_to(&paused, 2);
    world.produce_to(&other, 2);
    world.run_until(world.now + Duration::from_millis(200));
    let (cached, next_pull) = cache_and_next_pull(&world, &paused);
    assert!(
        world.poll(0, 32).is_some_and(|p| p.queue == other),
        "the other queue goes on"
    );
    assert!(world.poll(0, 32).is_none(), "nothing of the paused queue");

    world.produce_to(&paused, 3);
    // Longer than a long poll (15 s): a pull would have come back and gone out again.
    world.run_until(world.now + Duration::from_secs(20));
    assert!(
        world.poll(0, 32).is_none(),
        "still nothing of the paused queue"
    );
    assert_eq!(
        cache_and_next_pull(&world, &paused),
        (cached, next_pull),
        "no pull of the paused queue went out"
    );

    let now = world.now;
    world.nodes[0].consumer.resume(now, &paused);
    world.run_until(world.now + Duration::from_millis(200));
    assert_eq!(
        take_all(&mut world, &paused),
        vec![3, 4, 5, 6, 7],
        "resumed where it stopped"
    );
}
