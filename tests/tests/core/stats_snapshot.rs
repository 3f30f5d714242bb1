//! `Consumer::stats` tells the truth about a consumer that drained a backlog: per queue the
//! committed and max offsets agree once it is consumed, lag and cache are zero, the pause and
//! the last pull show; the pull latency counts only the pulls the broker answered at once
//! (none of the long polls), and the consume latency is the handlers' time.

use std::time::Duration;

use consumer_core::MessageQueue;
use consumer_core::stats::ConnectionState;
use rocketmq_tests::scenario::{TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn stats_after_draining_a_backlog() {
    let mut config = quiet_config(311, 1);
    config.latency = (Duration::from_millis(1), Duration::from_millis(1));
    config.handler_time = (Duration::from_millis(10), Duration::from_millis(10));
    let mut world = World::new(config);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 0);
    world.run_until(world.epoch() + Duration::from_secs(2));
    let idle = world.nodes[0].consumer.stats();
    assert_eq!(
        idle.pull_latency.samples, 0,
        "every pull so far was a long poll of an empty queue"
    );

    // More than one pull batch (32) waits, so later pulls find messages there at once.
    world.produce_to(&a, 100);
    world.nodes[0].consumer.pause(&b);
    world.run_until(world.now + Duration::from_secs(12));
    let stats = world.nodes[0].consumer.stats();

    let qa = stats
        .queues
        .iter()
        .find(|q| q.queue == a)
        .expect("node 0 owns queue a");
    assert_eq!(qa.max_offset, 100);
    assert_eq!(qa.committable_offset, 100);
    assert_eq!(
        qa.committed_offset,
        Some(100),
        "the periodic persist sent the end"
    );
    assert_eq!((qa.lag, qa.cached_messages, qa.in_flight), (0, 0, 0));
    assert!(!qa.paused);
    assert!(qa.last_pull.is_some_and(|at| at <= world.now));
    let qb = stats
        .queues
        .iter()
        .find(|q| q.queue == b)
        .expect("node 0 owns queue b");
    assert!(qb.paused, "the pause shows");
    assert_ne!(qa.epoch, qb.epoch, "each queue life has its own epoch");
    assert_eq!((stats.lag, stats.cached_messages), (0, 0));

    // 100 messages in batches of 32: the pulls at 32, 64 and 96 found messages waiting.
    assert_eq!(stats.pull_latency.samples, 3, "{:?}", stats.pull_latency);
    assert!(
        stats.pull_latency.p99 < Duration::from_millis(10),
        "no long poll among them: {:?}",
        stats.pull_latency
    );
    assert_eq!(stats.delivered, 100);
    assert_eq!(stats.consume_latency.samples, 100);
    let handler = Duration::from_millis(10);
    assert!(
        stats.consume_latency.p50.abs_diff(handler) <= handler / 32,
        "{:?}",
        stats.consume_latency
    );
    assert!(
        stats
            .connections
            .iter()
            .all(|c| c.state == ConnectionState::Connected),
        "{:?}",
        stats.connections
    );
    assert!(
        stats.connections.len() >= 3,
        "the name server and both brokers"
    );
}
