//! Flow control bounds the cache: with a backlog of 500 messages, `max_cached_messages_per_queue`
//! of 50 and a handler that does not complete, the queue stops being pulled once more than 50
//! messages are cached (Java's `pullThresholdForQueue` check before each pull,
//! `remoting-protocol.md` §7.9), so its cache never exceeds the limit plus one pull batch (32);
//! the paused pull is re-checked every 50 ms (`stats().flow_control_pauses` keeps growing);
//! and once the handler completes again the whole backlog is consumed and committed.

use std::time::Duration;

use consumer_core::MessageQueue;
use rocketmq_tests::scenario::{GROUP, TOPIC, assert_caches_within, queue_stats, quiet_config};
use rocketmq_tests::world::World;

const LIMIT: usize = 50;
const BATCH: usize = 32;

#[test]
fn a_stuck_handler_pauses_pulls_at_the_limit_and_the_backlog_drains_after() {
    let mut config = quiet_config(51, 1);
    config.consumer_config = |mut c| {
        c.max_cached_messages_per_queue = LIMIT;
        c
    };
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(1));
    assert!(world.nodes[0].consumer.assignment().any(|q| q == queue));

    world.produce_to(&queue, 500);
    let mut peak = 0;
    let check = |w: &World, peak: &mut usize| {
        for q in assert_caches_within(w, 0, LIMIT + BATCH) {
            if q.queue == queue {
                *peak = (*peak).max(q.cached_messages);
            }
        }
    };
    world.run_until_with(world.now + Duration::from_secs(2), |w| check(w, &mut peak));
    let pauses_early = world.nodes[0].consumer.stats().flow_control_pauses;
    world.run_until_with(world.now + Duration::from_secs(3), |w| check(w, &mut peak));
    let stats = world.nodes[0].consumer.stats();
    assert!(
        peak > LIMIT,
        "pulls go on until the limit is passed: peak {peak}"
    );
    assert!(pauses_early > 0, "the pull was held back");
    assert!(
        stats.flow_control_pauses >= pauses_early + 50,
        "re-checked every 50 ms while paused: {pauses_early} then {}",
        stats.flow_control_pauses
    );
    let q = queue_stats(&world, 0, &queue);
    assert_eq!(q.cached_messages, peak, "nothing was pulled while paused");
    assert_eq!(q.committable_offset, 0);
    assert_eq!(q.lag, 500);

    // The handler works again: everything is consumed, in bounded steps.
    world.nodes[0].hold = false;
    world.release_held(0, world.now);
    world.run_until_with(world.now + Duration::from_secs(30), |w| check(w, &mut peak));
    assert_eq!(world.acknowledged(&queue).len(), 500);
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(500));
    let q = queue_stats(&world, 0, &queue);
    assert_eq!((q.cached_messages, q.lag), (0, 0));
}
