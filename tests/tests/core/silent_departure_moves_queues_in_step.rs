//! A member that leaves a group through a broker that announces no departure (the Rust broker
//! sends `NOTIFY_CONSUMER_IDS_CHANGED` on joins only) is noticed at the next periodic
//! rebalance, and the members that remain notice it at the same one: the last notice (a join)
//! restarted every member's `rebalance_interval`, as Java's `RebalanceService` waits its whole
//! interval again after a wake-up. Without it, a member that started earlier rebalances on its
//! own start's schedule, gives up or claims queues up to 20 s before the other member does, and
//! a hand-over waits that long for the old owner (past a 6 s `handover_timeout`).

use std::time::{Duration, Instant};

use consumer_core::{ConsumerConfig, Event};
use rocketmq_tests::scenario::quiet_config;
use rocketmq_tests::sim::SimConfig;
use rocketmq_tests::world::World;

fn handing_over(mut c: ConsumerConfig) -> ConsumerConfig {
    c.handover_timeout = Duration::from_secs(6);
    c
}

fn silent_departures(mut c: SimConfig) -> SimConfig {
    c.notify_departures = false;
    c
}

/// When node `i` reported queues assigned or revoked after `since`.
fn moves(world: &World, i: usize, since: Instant) -> Vec<Duration> {
    world.nodes[i]
        .events
        .iter()
        .filter(|(at, event)| {
            *at > since && matches!(event, Event::Assigned(_) | Event::Revoked(_))
        })
        .map(|(at, _)| *at - since)
        .collect()
}

#[test]
fn the_members_left_take_the_leavers_queues_at_one_rebalance() {
    let mut config = quiet_config(23, 2);
    config.consumer_config = handing_over;
    config.cluster_config = silent_departures;
    let mut world = World::new(config);
    // Settled, 15 s into the two first members' 20 s rebalance period.
    world.run_until(world.epoch() + Duration::from_secs(35));
    let joined = world.now;
    let newcomer = world.add_consumer();
    world.run_until(joined + Duration::from_secs(2));
    let left = world.now;
    world.shutdown_one(0);
    world.run_until(joined + Duration::from_secs(30));

    for i in [1, newcomer] {
        let moved = moves(&world, i, left);
        assert!(
            !moved.is_empty(),
            "node {i} took part in the change\n{}",
            world.trace_tail(40)
        );
        // The join restarted node 1's period: both rebalance 20 s after the join, 18 s after
        // the departure (node 1 on its own schedule would have moved at 3 s).
        for at in moved {
            assert!(
                (Duration::from_secs(17)..Duration::from_secs(19)).contains(&at),
                "node {i} moved queues {at:?} after the departure, not at the rebalance 20 s \
                 after the join\n{}",
                world.trace_tail(40)
            );
        }
        let stats = world.nodes[i].consumer.stats();
        assert_eq!(
            stats.handover_timeouts, 0,
            "node {i}: no hand-over waited out handover_timeout"
        );
    }
    let owned = world.nodes[1].consumer.assignment().count()
        + world.nodes[newcomer].consumer.assignment().count();
    assert_eq!(
        owned, 6,
        "the two members left own the 4 topic and 2 retry queues"
    );
}
