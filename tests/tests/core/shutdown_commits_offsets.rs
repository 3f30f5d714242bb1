//! Graceful shutdown: handlers still running get up to `shutdown_drain_timeout` (10 s) and
//! count as `drained` when they finish in time (`abandoned` when they do not); then every
//! owned queue's offset is committed with a confirmed `UPDATE_CONSUMER_OFFSET`, the client
//! unregisters from every broker, and `Event::Closed(ShutdownReport)` lists exactly the
//! offsets the brokers now store. A late handler's message is not committed past.

use std::time::Duration;

use consumer_core::{ConsumeOutcome, Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

fn one_consumer(seed: u64) -> World {
    World::new(quiet_config(seed, 1))
}

/// Consumes 10 messages on `a` and `b`, then holds the handler and gets 3 more from `a`
/// in flight.
fn consume_then_hold(world: &mut World, a: &MessageQueue, b: &MessageQueue) -> Vec<i64> {
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(a, 10);
    world.produce_to(b, 10);
    world.run_until(world.now + Duration::from_secs(2));
    assert_eq!(world.acknowledged(a).len(), 10);
    assert_eq!(world.acknowledged(b).len(), 10);
    world.nodes[0].hold = true;
    let held = world.produce_to(a, 3);
    world.run_until(world.now + Duration::from_millis(500));
    assert_eq!(world.nodes[0].held.len(), 3);
    assert_eq!(world.nodes[0].consumer.stats().in_flight_deliveries, 3);
    held
}

fn check_report_matches_cluster(world: &World) {
    let node = &world.nodes[0];
    assert!(node.consumer.is_closed());
    let report = node.report.as_ref().expect("closed with a report");
    let closed: Vec<_> = node
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Closed(_)))
        .collect();
    assert_eq!(closed.len(), 1, "one Closed event, the last word");
    assert!(matches!(node.events.last(), Some((_, Event::Closed(r))) if r == report));
    assert!(report.uncommitted.is_empty(), "{report:?}");
    assert_eq!(
        report.committed.len(),
        6,
        "4 topic + 2 retry queues: {report:?}"
    );
    for (mq, offset) in &report.committed {
        assert_eq!(
            world.cluster.committed_offset(GROUP, mq),
            Some(*offset),
            "{mq:?}: the report says what the broker stores"
        );
    }
    for broker in ["broker-a", "broker-b"] {
        assert_eq!(
            world.cluster.members(broker, GROUP),
            Vec::<String>::new(),
            "unregistered from {broker}"
        );
    }
}

#[test]
fn shutdown_drains_in_flight_handlers_and_commits_what_the_broker_stores() {
    let mut world = one_consumer(41);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 1);
    consume_then_hold(&mut world, &a, &b);

    world.shutdown_one(0);
    // The handlers finish 1 s into the 10 s drain.
    world.release_held(0, world.now + Duration::from_secs(1));
    world.run_until(world.now + Duration::from_secs(30));

    check_report_matches_cluster(&world);
    let report = world.nodes[0].report.clone().expect("closed");
    assert_eq!((report.drained, report.abandoned), (3, 0), "{report:?}");
    let committed = |mq: &MessageQueue| {
        report
            .committed
            .iter()
            .find(|(q, _)| q == mq)
            .map(|(_, o)| *o)
    };
    assert_eq!(
        committed(&a),
        Some(13),
        "the drained messages are committed"
    );
    assert_eq!(committed(&b), Some(10));
    assert_eq!(committed(&MessageQueue::new(TOPIC, "broker-a", 1)), Some(0));
}

#[test]
fn a_handler_past_the_drain_deadline_is_abandoned_and_not_committed_past() {
    let mut world = one_consumer(42);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 1);
    let held = consume_then_hold(&mut world, &a, &b);
    assert_eq!(held, vec![10, 11, 12]);

    world.shutdown_one(0);
    let ids = world.nodes[0].held.clone();
    // Offsets 10 and 12 finish in time; offset 11 takes longer than the drain allows.
    world.complete_at(
        0,
        ids[0],
        ConsumeOutcome::Success,
        world.now + Duration::from_secs(1),
    );
    world.complete_at(
        0,
        ids[2],
        ConsumeOutcome::Success,
        world.now + Duration::from_secs(2),
    );
    world.run_until(world.now + Duration::from_secs(30));

    check_report_matches_cluster(&world);
    let report = world.nodes[0].report.clone().expect("closed");
    assert_eq!((report.drained, report.abandoned), (2, 1), "{report:?}");
    assert!(
        report.committed.contains(&(a.clone(), 11)),
        "the abandoned offset 11 is where the next owner starts: {report:?}"
    );
    assert!(report.committed.contains(&(b.clone(), 10)), "{report:?}");
}
