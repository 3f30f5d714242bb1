//! Pop through faults: dropped responses (pops, acks, renewals never answered) and a broker
//! restart (every connection lost, members re-register) while two members drain one queue.
//! Every message is still consumed (or dead-lettered), none is with two handlers at once, and
//! nothing stays invisible at the end.

use std::time::Duration;

use consumer_core::ConsumeOutcome;
use rocketmq_tests::sim::Fault;

use super::pop_support::{BROKER, GROUP, PopWorld};

#[test]
fn pop_drains_through_dropped_responses_and_a_restart() {
    let mut world = PopWorld::new(
        1,
        Box::new(|_, message| {
            // Some handlers outlast the 20 s invisibility and must renew through the faults.
            let slow = message.queue_offset() % 17 == 0;
            let took = if slow { 30_000 } else { 300 };
            (Duration::from_millis(took), ConsumeOutcome::Success)
        }),
    );
    for _ in 0..2 {
        let mut config = world.config();
        config.batch_size = 8;
        config.max_cached_messages = 16;
        world.add_member(config);
    }
    world.run_until(Duration::from_secs(5), |_| false);
    world.produce(60, 1);
    for round in 0..4 {
        world.cluster.inject(Fault::DropResponses { count: 3 });
        world.run_until(Duration::from_secs(7), |_| false);
        if round == 1 {
            let now = world.now;
            world.cluster.restart_broker(now, BROKER);
        }
    }
    let done = world.run_until(Duration::from_secs(300), PopWorld::all_consumed_or_dead);
    assert!(
        done,
        "consumed {} of {}",
        world.consumed.len(),
        world.produced.len()
    );
    // Messages whose pop answer was dropped come back after their invisibility and are
    // consumed again; then nothing is left invisible.
    let settled = world.run_until(Duration::from_secs(120), |w| {
        w.cluster.pop_state(BROKER, GROUP).0 == 0
    });
    assert!(
        settled,
        "still invisible: {:?}",
        world.cluster.pop_state(BROKER, GROUP)
    );
    let failures: u64 = (0..2).map(|i| world.stats(i).settle_failures).sum();
    let renewed: u64 = (0..2).map(|i| world.stats(i).renewed).sum();
    assert!(renewed > 0, "the slow handlers renewed");
    eprintln!(
        "pop through faults: {} deliveries of {} messages, {failures} failed settles, {renewed} renewals, shares {:?}",
        world.seen.len(),
        world.produced.len(),
        world.shares()
    );
}
