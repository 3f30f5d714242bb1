//! The consumer-wide cache limit holds pulls back without idling the consumer: with
//! `max_cached_messages_total` of 40 over 4 queues of 500 messages each and quick handlers, the
//! pulls the limit holds back go out again as soon as the cache has room for them (see
//! `consumer/cache_room.rs`), not `flow_control_backoff` (50 ms) later: the 2 000 messages
//! take less than one backoff of the world's time (10 ms; 207 ms when every held-back pull
//! waited out the backoff), and the cache never holds more than the limit plus a pull batch per
//! queue.

use std::time::Duration;

use consumer_core::{ConsumeMode, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, quiet_config};
use rocketmq_tests::world::{World, WorldConfig};

const LIMIT: usize = 40;
const BATCH: usize = 32;
const PER_QUEUE: usize = 500;

#[test]
fn held_back_pulls_go_out_once_the_cache_has_room() {
    let mut config = quiet_config(52, 1);
    config.handler_time = (Duration::from_micros(50), Duration::from_micros(100));
    let (mut world, queues) = four_full_queues(config);
    let produced = world.now;
    let mut peak = 0;
    let mut drained_at = None;
    world.run_until_with(world.now + Duration::from_secs(3), |w| {
        peak = peak.max(w.nodes[0].consumer.stats().cached_messages);
        if drained_at.is_none() && queues.iter().all(|q| w.acknowledged(q).len() == PER_QUEUE) {
            drained_at = Some(w.now);
        }
    });
    let stats = world.nodes[0].consumer.stats();
    assert!(stats.flow_control_pauses > 0, "the limit held pulls back");
    assert!(
        peak <= LIMIT + queues.len() * BATCH,
        "cached {peak}: at most the limit plus a pull batch per queue"
    );
    let took = drained_at.map(|at| at.saturating_duration_since(produced));
    assert!(
        took.is_some_and(|t| t < Duration::from_millis(50)),
        "2 000 messages consumed in {took:?}: held-back pulls waited out the backoff"
    );
}

/// The same in poll mode, where the application's takes free the room: 8 ms of the world's
/// time to take the 2 000 messages, 52 ms when held-back pulls waited out the backoff.
#[test]
fn poll_mode_takes_make_room_at_once() {
    let mut config = quiet_config(53, 1);
    config.mode = ConsumeMode::Poll;
    let (mut world, queues) = four_full_queues(config);
    let produced = world.now;
    let mut taken = 0;
    while taken < queues.len() * PER_QUEUE && world.now < produced + Duration::from_secs(3) {
        match world.poll(0, BATCH) {
            Some(polled) => taken += polled.messages.len(),
            None => world.run_until(world.now + Duration::from_micros(100)),
        }
    }
    let took = world.now.saturating_duration_since(produced);
    assert_eq!(
        taken,
        queues.len() * PER_QUEUE,
        "everything taken within 3 s"
    );
    assert!(
        world.nodes[0].consumer.stats().flow_control_pauses > 0,
        "the limit held pulls back"
    );
    assert!(
        took < Duration::from_millis(25),
        "2 000 messages taken in {took:?}: held-back pulls waited"
    );
}

/// A world of `config` whose one consumer, under the consumer-wide limit of [`LIMIT`], owns the
/// topic's 4 queues, each just given [`PER_QUEUE`] messages.
fn four_full_queues(mut config: WorldConfig) -> (World, Vec<MessageQueue>) {
    config.latency = (Duration::from_micros(100), Duration::from_micros(300));
    config.consumer_config = |mut c| {
        c.max_cached_messages_total = LIMIT;
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(1));
    let queues: Vec<MessageQueue> = ["broker-a", "broker-b"]
        .into_iter()
        .flat_map(|broker| (0..2).map(move |id| MessageQueue::new(TOPIC, broker, id)))
        .collect();
    assert_eq!(world.nodes[0].consumer.assignment().count(), queues.len());
    for queue in &queues {
        world.produce_to(queue, PER_QUEUE);
    }
    (world, queues)
}
