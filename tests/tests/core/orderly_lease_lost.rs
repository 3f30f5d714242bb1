//! A broker restart forgets its locks, and a lost connection is all a client sees of it: the
//! orderly consumer reports `Event::LeaseLost` for that broker's queues, drops the completion
//! of the batch still running (counted in `stats().stale_completions`: another member may own
//! the queue now), never commits past it, and after locking the queue again resumes from the
//! committed offset, so the batch is redelivered (`remoting-protocol.md` §7.10).

use std::time::Duration;

use consumer_core::{ConsumeMode, ConsumeOutcome, Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_broker_restart_loses_the_lease_and_the_held_batch_is_redelivered() {
    let mut config = quiet_config(104, 1);
    config.mode = ConsumeMode::Orderly;
    let mut world = World::new(config);
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue, 2);
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue),
        Some(2),
        "the first two are consumed and committed"
    );

    world.nodes[0].hold = true;
    world.produce_to(&queue, 3);
    world.run_until(world.now + Duration::from_millis(500));
    let held = world.nodes[0].held.clone();
    assert_eq!(held.len(), 1, "one batch of the queue in flight");
    let held_id = held[0];
    let first_offset = |w: &World, id| {
        w.nodes[0]
            .delivered
            .iter()
            .find(|(_, d)| d.id == id)
            .map(|(_, d)| d.messages[0].queue_offset())
    };
    assert_eq!(first_offset(&world, held_id), Some(2));
    let delivered_before = world.nodes[0].delivered.len();
    let events_before = world.nodes[0].events.len();

    let restart = world.now;
    world.cluster.restart_broker(restart, "broker-a");
    world.run_until_with(restart + Duration::from_millis(200), |w| {
        assert_eq!(w.cluster.committed_offset(GROUP, &queue), Some(2));
    });
    let lost = world.nodes[0].events[events_before..]
        .iter()
        .any(|(_, e)| matches!(e, Event::LeaseLost(qs) if qs.contains(&queue)));
    assert!(
        lost,
        "LeaseLost for {queue:?} once the connection to the restarted broker dropped\n{}",
        world.trace_tail(30)
    );
    assert!(
        !world.nodes[0].consumer.is_current(held_id, world.now),
        "the held batch no longer counts"
    );

    // The handler finishes the batch after the lease was lost: dropped, not applied.
    world.complete_at(0, held_id, ConsumeOutcome::Success, world.now);
    world.run_until_with(world.now + Duration::from_secs(10), |w| {
        let committed = w.cluster.committed_offset(GROUP, &queue);
        assert!(
            committed == Some(2),
            "committed {committed:?}: the stale completion of offset 2 must not move it"
        );
    });
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(stats.stale_completions, 1, "{stats:?}");

    let reacquired = world.nodes[0].events[events_before..]
        .iter()
        .find(|(_, e)| matches!(e, Event::LeaseAcquired(qs) if qs.contains(&queue)))
        .map(|(at, _)| *at)
        .unwrap_or_else(|| panic!("the queue is locked again\n{}", world.trace_tail(40)));
    let me = world.nodes[0].consumer.client_id().to_owned();
    assert_eq!(
        world.cluster.lock_owner(GROUP, &queue, world.now),
        Some(me),
        "the restarted broker knows the lock again"
    );
    let again: Vec<_> = world.nodes[0].delivered[delivered_before..]
        .iter()
        .filter(|(_, d)| d.queue == queue)
        .cloned()
        .collect();
    let (at, redelivered) = again
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("nothing redelivered\n{}", world.trace_tail(40)));
    assert!(at >= reacquired, "redelivered only after the new lock");
    assert_eq!(
        redelivered.messages[0].queue_offset(),
        2,
        "redelivered from the committed offset"
    );
    assert_eq!(again.len(), 1, "one batch in flight again");

    world.nodes[0].hold = false;
    world.release_held(0, world.now);
    world.run_until(world.now + Duration::from_secs(10));
    let offsets = offsets_of(&world.nodes[0].delivered[delivered_before..], &queue);
    assert_eq!(offsets, vec![2, 3, 4]);
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(5));
}
