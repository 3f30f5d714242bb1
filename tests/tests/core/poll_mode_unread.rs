//! Poll mode hands unread messages back: a reader that took a batch and read only part of it
//! returns the rest with `Consumer::unread`. They go back to the front of the queue's cache and
//! are taken again first, without another pull, and the committable offset moves back to the
//! first of them, so a commit stores exactly what was read. Handing back after the queue was
//! moved (`seek`) is refused and changes nothing: the new position stands.

use std::time::Duration;

use consumer_core::{ConsumeMode, MessageQueue};
use proto::message::Message;
use rocketmq_tests::scenario::{GROUP, TOPIC, queue_stats, quiet_config};
use rocketmq_tests::world::World;

/// One poll-mode consumer that commits only when asked, started, with five messages of
/// `queue` cached.
fn world_with_five(seed: u64, queue: &MessageQueue) -> World {
    let mut config = quiet_config(seed, 1);
    config.mode = ConsumeMode::Poll;
    config.consumer_config = |mut c| {
        c.auto_commit = false;
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(queue, 5);
    world.run_until(world.now + Duration::from_millis(100));
    world
}

fn offsets(messages: &[Message]) -> Vec<i64> {
    messages.iter().map(|m| m.queue_offset()).collect()
}

fn commit(world: &mut World) {
    let now = world.now;
    world.nodes[0].consumer.commit(now);
    world.run_until(now + Duration::from_millis(100));
}

#[test]
fn unread_messages_are_taken_again_from_the_cache_and_not_committed() {
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    let mut world = world_with_five(131, &queue);
    let mut polled = world.poll(0, 32).expect("five messages are cached");
    assert_eq!(offsets(&polled.messages), vec![0, 1, 2, 3, 4]);
    let next_pull = queue_stats(&world, 0, &queue).next_pull_offset;

    // The reader got to offsets 0 and 1 only.
    let unread = polled.messages.split_off(2);
    polled.messages = unread;
    assert!(world.unread(0, polled), "the tail of the last take");
    let stats = queue_stats(&world, 0, &queue);
    assert_eq!(stats.cached_messages, 3);
    assert_eq!(
        stats.next_pull_offset, next_pull,
        "nothing is pulled again: the messages are back in the cache"
    );

    commit(&mut world);
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue),
        Some(2),
        "the commit stops at the first unread message"
    );

    // Taken again at once, from the cache, in order.
    let again = world
        .poll(0, 32)
        .expect("the handed-back messages are ready");
    assert_eq!(again.queue, queue);
    assert_eq!(offsets(&again.messages), vec![2, 3, 4]);
    commit(&mut world);
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(5));
}

#[test]
fn handing_back_after_a_seek_is_refused_and_the_seek_stands() {
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);
    let mut world = world_with_five(132, &queue);
    let mut polled = world.poll(0, 32).expect("five messages are cached");
    polled.messages = polled.messages.split_off(3);

    let now = world.now;
    world.nodes[0]
        .consumer
        .seek(now, &queue, 1)
        .expect("an owned, started queue");
    world.run_until(world.now + Duration::from_millis(100));
    assert!(
        !world.unread(0, polled),
        "the queue moved since the messages were taken"
    );

    let mut taken = Vec::new();
    while let Some(polled) = world.poll(0, 32) {
        taken.extend(offsets(&polled.messages));
    }
    assert_eq!(taken, vec![1, 2, 3, 4], "from the sought offset, once each");
}

#[test]
fn takes_go_back_latest_first_and_only_below_everything_cached() {
    let queue = MessageQueue::new(TOPIC, "broker-a", 1);
    let two_takes = |seed| {
        let mut world = world_with_five(seed, &queue);
        let first = world.poll(0, 2).expect("five messages are cached");
        let second = world.poll(0, 2).expect("three messages are still cached");
        assert_eq!(offsets(&first.messages), vec![0, 1]);
        assert_eq!(offsets(&second.messages), vec![2, 3]);
        (world, first, second)
    };

    // Latest first: both fit, and everything is taken again in order.
    let (mut world, first, second) = two_takes(133);
    assert!(world.unread(0, second));
    assert!(world.unread(0, first));
    commit(&mut world);
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(0));
    let again = world.poll(0, 32).expect("all five are ready");
    assert_eq!(offsets(&again.messages), vec![0, 1, 2, 3, 4]);

    // Oldest first: 2 and 3 would go back above 0, which is cached again; refused, so they
    // stay taken (consumed) and the cache holds 0, 1 and 4.
    let (mut world, first, second) = two_takes(134);
    assert!(world.unread(0, first));
    assert!(!world.unread(0, second));
    let again = world.poll(0, 32).expect("three are ready");
    assert_eq!(offsets(&again.messages), vec![0, 1, 4]);
}
