//! Quiet hand-overs: over seeded schedules of graceful group changes only (members joining,
//! members shutting down, rolling restarts; no failures of any kind) in a concurrent clustering
//! group of three over a steady stream ([`WorldConfig::graceful`]), no message is consumed twice:
//! a queue's new owner starts only once its old owner has drained it, committed it and had the
//! commit answered (`consumer::handover`). The world fails the run the moment a message is
//! consumed a second time. Without the hand-over (`handover_timeout` zero, Java's behaviour),
//! the same schedules consume messages twice, so the invariant can fail.
//!
//! `SIM_SEEDS=N` runs N seeds (default 100); `SIM_SEED=s` runs only seed `s`.

use std::time::Duration;

use rocketmq_tests::world::{World, WorldConfig};

/// The seeds to run: `SIM_SEED`, or the first `SIM_SEEDS` (default 100).
fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("SIM_SEED") {
        return vec![seed.parse().expect("SIM_SEED is a number")];
    }
    let n = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    (0..n).collect()
}

#[test]
fn graceful_group_changes_consume_nothing_twice() {
    let mut handovers = 0;
    for seed in seeds() {
        let mut world = World::new(WorldConfig::graceful(seed));
        world.run();
        world.shutdown_all();
        handovers += world
            .nodes
            .iter()
            .map(|n| n.consumer.stats().handovers)
            .sum::<u64>();
    }
    assert!(handovers > 0, "the group changes handed queues over");
}

#[test]
fn without_the_hand_over_the_same_changes_consume_messages_twice() {
    let mut twice = 0;
    for seed in 0..10 {
        let mut config = WorldConfig::graceful(seed);
        config.forbid_duplicates = false;
        config.consumer_config = |mut c| {
            c.handover_timeout = Duration::ZERO;
            c
        };
        let mut world = World::new(config);
        world.run();
        world.shutdown_all();
        let (messages, extra) = world.duplicates();
        println!(
            "seed {seed} without the hand-over: {messages} messages consumed twice ({extra} extra consumptions)"
        );
        twice += messages;
    }
    assert!(twice > 0, "Java's hand-over consumes messages twice");
}
