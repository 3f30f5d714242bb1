//! A broker connection lost while the final commits are on their way, or just before them (the
//! Rust broker dropped ours 120 ms before a shutdown under the whole suite's load, in CI: the
//! commits met the address in its reconnect backoff and failed at once). Shutdown sends the
//! final commits to a broker one at a time, so one is in flight and the rest wait behind it
//! when the connection goes: each goes once more when the broker takes requests again (after
//! the reconnect backoff), and the member unregisters after them. A broker that stays away costs one retry, and the queues are
//! reported uncommitted. Either way the report accounts for every owned queue and is the last
//! thing the consumer says (the lost requests fail one after the other; closing at the first
//! that left nothing in flight once dropped the rest from the report and unregistered after
//! `Closed`).

use std::time::{Duration, Instant};

use consumer_core::{Event, MessageQueue, ShutdownReport};
use rocketmq_tests::scenario::{GROUP, TOPIC, events_where, quiet_config};
use rocketmq_tests::world::World;

/// When the connection to broker-a drops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// While the first final commit to it is in flight.
    DuringCommits,
    /// 100 ms before the shutdown (the member heard of it 50-60 ms before).
    BeforeShutdown,
}

/// One member owning four queues on each broker (and a retry queue on each), with five
/// messages consumed on each of broker-a's; shut down, and its connection to broker-a dropped
/// `when`. Returns the world and when it dropped.
fn drop_and_shut_down(seed: u64, when: Cut, broker_stays_down: bool) -> (World, Instant) {
    let mut config = quiet_config(seed, 1);
    config.queues_per_broker = 4;
    config.latency = (Duration::from_millis(50), Duration::from_millis(60));
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(2));
    for queue in broker_a_queues() {
        world.produce_to(&queue, 5);
    }
    world.run_until(world.now + Duration::from_secs(1));
    for queue in broker_a_queues() {
        assert_eq!(world.acknowledged(&queue).len(), 5, "{queue:?}");
    }

    let addr = world.cluster.broker_addr("broker-a");
    if when == Cut::DuringCommits {
        world.shutdown_one(0);
        world.run_until(world.now + Duration::from_millis(20));
    }
    assert!(world.drop_connection(0, &addr), "connected to broker-a");
    if broker_stays_down {
        world.cluster.set_broker_down("broker-a", true);
    }
    let dropped = world.now;
    if when == Cut::BeforeShutdown {
        world.run_until(world.now + Duration::from_millis(100));
        world.shutdown_one(0);
    }
    world.run_until(world.now + Duration::from_secs(30));
    (world, dropped)
}

fn broker_a_queues() -> Vec<MessageQueue> {
    (0..4)
        .map(|id| MessageQueue::new(TOPIC, "broker-a", id))
        .collect()
}

/// The report, checked to be the consumer's last word and to account for all 10 queues.
fn closing_report(world: &World) -> (ShutdownReport, Instant) {
    let node = &world.nodes[0];
    let Some((at, Event::Closed(report))) = node.events.last() else {
        panic!("Closed is the last event: {:?}", node.events.last());
    };
    let accounted = report.committed.len() + report.uncommitted.len();
    assert_eq!(
        accounted, 10,
        "4 topic + 1 retry queue on each broker: {report:?}"
    );
    (report.clone(), *at)
}

#[test]
fn final_commits_go_again_after_a_dropped_connection() {
    let (world, _) = drop_and_shut_down(151, Cut::DuringCommits, false);
    all_committed(&world);
}

#[test]
fn final_commits_wait_out_the_reconnect_backoff() {
    let (world, _) = drop_and_shut_down(153, Cut::BeforeShutdown, false);
    all_committed(&world);
}

fn all_committed(world: &World) {
    let (report, _) = closing_report(world);
    assert!(report.uncommitted.is_empty(), "{report:?}");
    for queue in broker_a_queues() {
        assert!(
            report.committed.contains(&(queue.clone(), 5)),
            "{queue:?} committed: {report:?}"
        );
        assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(5));
    }
    assert!(
        world.cluster.members("broker-a", GROUP).is_empty(),
        "unregistered from broker-a after its commits"
    );
}

#[test]
fn a_broker_that_stays_away_gets_one_retry() {
    let (world, dropped) = drop_and_shut_down(152, Cut::DuringCommits, true);
    let (report, closed) = closing_report(&world);
    let mut uncommitted = report.uncommitted.clone();
    uncommitted.retain(|q| q.topic() == TOPIC);
    assert_eq!(uncommitted, broker_a_queues(), "{report:?}");
    // One reconnect backoff (1 s) and one request timeout (3 s), not one per queue.
    assert!(
        closed - dropped < Duration::from_secs(5),
        "closed {:?} after the drop",
        closed - dropped
    );
    let failed_commits = events_where(&world, 0, |e| {
        matches!(
            e,
            Event::RequestFailed {
                request: "UPDATE_CONSUMER_OFFSET",
                ..
            }
        )
    })
    .len();
    assert_eq!(
        failed_commits, 10,
        "5 final commits to broker-a, each tried twice"
    );
}
