//! A clustering consumer commits a queue within `ack_commit_interval` (200 ms) of the
//! acknowledgements that moved it, not only at the next periodic persist (every 5 s, Java's
//! only commit): a member that crashes leaves about that much of its consumption to be
//! consumed again by the queue's next owner. A steady stream is committed as it is consumed,
//! never more than one commit of a queue at a time; with the interval zero, the broker learns
//! of the stream at the periodic persist only.

use std::time::Duration;

use consumer_core::{ConsumerConfig, MessageQueue};
use proto::RequestCode;
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

/// Streams 50 messages a second into one queue for 2 s, starting 1 s after the consumer (so
/// well before its first periodic persist, at 5 s), and returns the world, the queue, and
/// the broker's committed offset of it every 100 ms with the messages acknowledged by then.
fn stream(configure: fn(ConsumerConfig) -> ConsumerConfig) -> (World, Vec<(Option<i64>, usize)>) {
    let mut config = quiet_config(111, 1);
    config.consumer_config = configure;
    let mut world = World::new(config);
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(1));
    let mut samples = Vec::new();
    for tick in 0..25 {
        if tick < 20 {
            world.produce_to(&queue, 5);
        }
        world.run_until(world.now + Duration::from_millis(100));
        samples.push((
            world.cluster.committed_offset(GROUP, &queue),
            world.acknowledged(&queue).len(),
        ));
    }
    (world, samples)
}

#[test]
fn the_broker_follows_the_stream() {
    let (world, samples) = stream(|c| c);
    for (i, (committed, _)) in samples.iter().enumerate() {
        // What was acknowledged 300 ms ago (the interval plus a round trip and a tick) is
        // committed now.
        let then = i.checked_sub(3).map_or(0, |j| samples[j].1);
        let committed = committed.unwrap_or(0);
        assert!(
            committed >= i64::try_from(then).unwrap_or(i64::MAX),
            "at tick {i}: committed {committed}, but {then} were acknowledged 300 ms before\n{}",
            world.trace_tail(30)
        );
    }
    assert_eq!(
        samples.last().map(|s| s.0),
        Some(Some(100)),
        "all 100 committed"
    );
    let commits = world.requests_sent("broker-a:10911", RequestCode::UPDATE_CONSUMER_OFFSET);
    assert!(
        (5..=15).contains(&commits),
        "about one commit per 200 ms while the stream ran (2 s), not one per message (100): \
         {commits}"
    );
}

#[test]
fn without_it_the_broker_learns_at_the_periodic_persist() {
    let (_, samples) = stream(|mut c| {
        c.ack_commit_interval = Duration::ZERO;
        c
    });
    assert!(
        samples
            .iter()
            .all(|(committed, _)| committed.unwrap_or(0) == 0),
        "nothing committed before the first persist, 5 s in: {samples:?}"
    );
}
