//! A completion that arrives after its queue was revoked is stale: a member joins and takes a
//! queue while a delivery of it is in flight; the old owner waits `revoke_drain_timeout` (5 s),
//! commits the queue at the unacknowledged message and reports `Event::Revoked`; when its
//! handler finishes later still, the completion is dropped and counted in
//! `stats().stale_completions`, and the committed offset never passes the message whose
//! completion came too late (the new owner gets it again).

use std::time::{Duration, Instant};

use consumer_core::{ConsumeOutcome, Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn completion_after_the_revoke_deadline_is_stale_and_commits_nothing() {
    let mut world = World::new(quiet_config(31, 1));
    world.nodes[0].hold = true;
    // Owned by node 0 alone now, by the newcomer once it joins (ids sort #0 < #1, AVG).
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);
    world.run_until(world.epoch() + Duration::from_secs(1));

    world.produce_to(&queue, 5);
    world.run_until(world.now + Duration::from_millis(500));
    let deliveries: Vec<_> = world.nodes[0]
        .delivered
        .iter()
        .map(|(_, d)| (d.id, d.queue.clone(), d.messages[0].queue_offset()))
        .collect();
    assert_eq!(
        deliveries.iter().map(|d| d.2).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    assert!(deliveries.iter().all(|d| d.1 == queue));
    // Everything but offset 2 is consumed; offset 2's handler is slow.
    let slow = deliveries[2].0;
    for &(id, _, offset) in &deliveries {
        if offset != 2 {
            world.complete_at(0, id, ConsumeOutcome::Success, world.now);
        }
    }
    // The persist timer (5 s) commits up to the slow message.
    world.run_until(world.epoch() + Duration::from_secs(8));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(2));

    let joined_at = world.now;
    let newcomer = world.add_consumer();
    world.nodes[newcomer].hold = true;
    world.run_until(joined_at + Duration::from_secs(1));
    assert!(
        world.nodes[0].consumer.assignment().all(|q| q != queue),
        "the queue left node 0's assignment at the rebalance"
    );
    assert!(
        world.nodes[newcomer]
            .consumer
            .assignment()
            .any(|q| q == queue),
        "the newcomer owns it"
    );
    assert_eq!(world.nodes[0].consumer.stats().in_flight_deliveries, 1);

    let mut revoked_at: Option<Instant> = None;
    world.run_until_with(joined_at + Duration::from_secs(8), |w| {
        let committed = w.cluster.committed_offset(GROUP, &queue);
        assert!(
            committed.is_some_and(|c| c <= 2),
            "committed {committed:?} passes the unacknowledged offset 2"
        );
        if revoked_at.is_none() {
            revoked_at = w.nodes[0]
                .events
                .iter()
                .find(|(_, e)| *e == Event::Revoked(vec![queue.clone()]))
                .map(|(at, _)| *at);
        }
    });
    let revoked_at = revoked_at.expect("node 0 reports the revoke once the drain deadline passed");
    let waited = revoked_at - joined_at;
    assert!(
        waited >= Duration::from_secs(5) && waited < Duration::from_secs(6),
        "the revoke waited for the in-flight delivery until the 5 s deadline: {waited:?}"
    );
    assert!(
        world.nodes[0]
            .consumer
            .stats()
            .queues
            .iter()
            .all(|q| q.queue != queue),
        "node 0 forgot the queue"
    );
    assert_eq!(world.nodes[0].consumer.stats().stale_completions, 0);

    // The slow handler finishes now, after the deadline.
    world.complete_at(0, slow, ConsumeOutcome::Success, world.now);
    world.run_until_with(world.now + Duration::from_secs(10), |w| {
        assert_eq!(w.cluster.committed_offset(GROUP, &queue), Some(2));
    });
    assert_eq!(world.nodes[0].consumer.stats().stale_completions, 1);
    assert_eq!(world.nodes[0].consumer.stats().in_flight_deliveries, 0);

    // The new owner started at the committed offset, so offset 2 is delivered again there.
    let again = offsets_of(&world.nodes[newcomer].delivered, &queue);
    assert_eq!(again, vec![2, 3, 4]);
    world.release_held(newcomer, world.now);
    world.run_until(world.now + Duration::from_secs(10));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(5));
}
