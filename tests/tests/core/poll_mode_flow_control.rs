//! Poll mode is bounded like push mode: pulled messages wait in the per-queue cache until
//! taken, so an application that stops polling stops the pulls once
//! `max_cached_messages_per_queue` is reached (Java's lite pull `pullThresholdForQueue`);
//! the paused pull is re-checked (`stats().flow_control_pauses` grows) and resumes as soon as
//! polling makes room, with nothing lost or reordered.

use std::time::Duration;

use consumer_core::{ConsumeMode, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, assert_caches_within, queue_stats, quiet_config};
use rocketmq_tests::world::World;

const LIMIT: usize = 50;
const BATCH: usize = 32;

#[test]
fn not_polling_pauses_pulls_at_the_cache_limit() {
    let mut config = quiet_config(115, 1);
    config.mode = ConsumeMode::Poll;
    config.consumer_config = |mut c| {
        c.max_cached_messages_per_queue = LIMIT;
        c
    };
    let mut world = World::new(config);
    let queue = MessageQueue::new(TOPIC, "broker-a", 1);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue, 300);
    let bounded = |w: &World| {
        assert_caches_within(w, 0, LIMIT + BATCH);
    };
    world.run_until_with(world.now + Duration::from_secs(2), bounded);
    let q = queue_stats(&world, 0, &queue);
    let (cached, next_pull) = (q.cached_messages, q.next_pull_offset);
    assert!(cached >= LIMIT, "pulled up to the limit: {cached}");
    let pauses = world.nodes[0].consumer.stats().flow_control_pauses;
    assert!(pauses > 0, "the pull was held back");

    world.run_until_with(world.now + Duration::from_secs(2), bounded);
    let stats = world.nodes[0].consumer.stats();
    let q = queue_stats(&world, 0, &queue);
    assert_eq!(
        q.cached_messages, cached,
        "nothing pulled while nobody polls"
    );
    assert_eq!(q.next_pull_offset, next_pull);
    assert!(
        stats.flow_control_pauses >= pauses + 30,
        "re-checked every 50 ms: {pauses} then {}",
        stats.flow_control_pauses
    );

    // Polling makes room: the whole backlog comes through, in order.
    let mut taken = Vec::new();
    let end = world.now + Duration::from_secs(10);
    while world.now < end && taken.len() < 300 {
        while let Some(polled) = world.poll(0, 10) {
            assert_eq!(polled.queue, queue);
            taken.extend(polled.messages.iter().map(|m| m.queue_offset()));
        }
        world.run_until_with(world.now + Duration::from_millis(50), bounded);
    }
    assert_eq!(taken, (0..300).collect::<Vec<_>>());
}
