//! A consumption rate limit holds over a 20 s backlog, within one burst (100 ms of the rate)
//! and one batch: a push consumer's consumer-wide limit, and a poll-mode topic limit in
//! messages and in body bytes. The cache stays small meanwhile (a queue caching one second
//! of its limit stops pulling),
//! and nothing is dropped: once the backlog is through, every message arrived, in order.

use std::time::Duration;

use consumer_core::rate::RateLimit;
use consumer_core::{ConsumeMode, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

const RUN: Duration = Duration::from_secs(20);

fn queues() -> Vec<MessageQueue> {
    ["broker-a", "broker-b"]
        .into_iter()
        .flat_map(|b| (0..2).map(move |id| MessageQueue::new(TOPIC, b, id)))
        .collect()
}

#[test]
fn a_push_consumer_is_held_to_its_rate() {
    let mut config = quiet_config(313, 1);
    config.consumer_config = |mut c| {
        c.rate_limit = Some(RateLimit::messages(50));
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(2));
    for q in queues() {
        world.produce_to(&q, 500);
    }
    let start = world.now;
    let mut most_cached = 0;
    world.run_until_with(start + RUN, |w| {
        most_cached = most_cached.max(w.nodes[0].consumer.stats().cached_messages);
    });
    let delivered = world.nodes[0].delivered.len();
    // One message a delivery: 50/s for 20 s, one burst of 5 over at most.
    assert!(
        (995..=1006).contains(&delivered),
        "{delivered} delivered in 20 s at 50/s"
    );
    // Each queue stops pulling once it caches one second of the limit (50), and has at most
    // one more batch (32) on its way then.
    assert!(
        most_cached <= 4 * (50 + 32),
        "the cache stays small: {most_cached}"
    );
    let stats = world.nodes[0].consumer.stats();
    assert!(
        stats.rate_limited > 0 && stats.rate_limit_pull_pauses > 0,
        "{stats:?}"
    );

    world.run_until(world.now + Duration::from_secs(25));
    for q in queues() {
        assert_eq!(
            offsets_of(&world.nodes[0].delivered, &q),
            (0..500).collect::<Vec<_>>(),
            "every message of {q:?}, in order"
        );
    }
}

#[test]
fn a_poll_mode_topic_limit_holds_messages_and_bytes() {
    let mut config = quiet_config(317, 1);
    config.mode = ConsumeMode::Poll;
    config.consumer_config = |mut c| {
        c.topic_rate_limits.insert(
            TOPIC.to_owned(),
            RateLimit::messages(30).with_bytes(1_000_000),
        );
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(2));
    for q in queues() {
        world.produce_to(&q, 300);
    }
    let (messages, bytes) = take_for(&mut world, RUN);
    // 30/s for 20 s, one burst (3) and one take (8) over at most.
    assert!(
        (595..=611).contains(&messages),
        "{messages} taken in 20 s at 30/s"
    );
    assert!(bytes > 0);

    // The same with the byte limit the tighter one: about 20 messages' bodies a second.
    let size = bytes / messages;
    let mut config = quiet_config(331, 1);
    config.mode = ConsumeMode::Poll;
    config.consumer_config = |mut c| {
        c.topic_rate_limits
            .insert(TOPIC.to_owned(), RateLimit::messages(1_000).with_bytes(200));
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(2));
    for q in queues() {
        world.produce_to(&q, 300);
    }
    let (_, bytes) = take_for(&mut world, RUN);
    // 200 bytes/s for 20 s, one burst (20 bytes) and one take (at most 8 messages) over.
    assert!(
        (4_000 - 8 * size..=4_020 + 8 * size).contains(&bytes),
        "{bytes} body bytes in 20 s at 200/s ({size} a message)"
    );
}

/// Takes what the consumer lets go, 8 at a time, every 10 ms for `run`; returns the messages
/// and body bytes taken.
fn take_for(world: &mut World, run: Duration) -> (u64, u64) {
    let end = world.now + run;
    let (mut messages, mut bytes) = (0, 0);
    while world.now < end {
        while let Some(polled) = world.poll(0, 8) {
            messages += polled.messages.len() as u64;
            bytes += polled
                .messages
                .iter()
                .map(|m| m.body().len() as u64)
                .sum::<u64>();
        }
        world.run_until(world.now + Duration::from_millis(10));
    }
    (messages, bytes)
}
