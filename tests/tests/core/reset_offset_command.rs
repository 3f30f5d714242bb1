//! An admin's offset reset reaches the consumer as `RESET_CONSUMER_CLIENT_OFFSET`
//! (`remoting-protocol.md` §3.13): the queue restarts at the new offset, `Event::OffsetReset`
//! says so, deliveries still running are stale (their completions are dropped and cannot move
//! the offset back past the reset), and the messages from the new offset are delivered again.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::{ConsumeOutcome, Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, events_where, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_reset_to_zero_drops_held_deliveries_and_redelivers_from_zero() {
    let mut world = World::new(quiet_config(112, 1));
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue, 5);
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(5));

    world.nodes[0].hold = true;
    world.produce_to(&queue, 2);
    world.run_until(world.now + Duration::from_millis(500));
    let stale = world.nodes[0].held.clone();
    assert_eq!(stale.len(), 2, "offsets 5 and 6 held");
    let delivered_before = world.nodes[0].delivered.len();

    let reset_at = world.now;
    world.cluster.reset_offsets(
        reset_at,
        GROUP,
        TOPIC,
        &BTreeMap::from([(queue.clone(), 0)]),
    );
    world.run_until(reset_at + Duration::from_millis(200));
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue),
        Some(0),
        "the broker stored the reset"
    );
    let resets = events_where(&world, 0, |e| matches!(e, Event::OffsetReset { .. }));
    assert_eq!(
        resets,
        vec![Event::OffsetReset {
            queue: queue.clone(),
            offset: 0
        }],
        "{}",
        world.trace_tail(20)
    );
    for id in &stale {
        assert!(
            !world.nodes[0].consumer.is_current(*id, world.now),
            "the held delivery no longer counts"
        );
    }

    // The held handlers finish after the reset: dropped.
    for id in stale {
        world.complete_at(0, id, ConsumeOutcome::Success, world.now);
    }
    world.run_until_with(world.now + Duration::from_secs(6), |w| {
        let committed = w.cluster.committed_offset(GROUP, &queue);
        assert_eq!(
            committed,
            Some(0),
            "the stale completions must not move the reset offset"
        );
    });
    assert_eq!(world.nodes[0].consumer.stats().stale_completions, 2);

    let again = offsets_of(&world.nodes[0].delivered[delivered_before..], &queue);
    assert_eq!(
        again,
        (0..7).collect::<Vec<_>>(),
        "everything from offset 0 is delivered again"
    );
    world.nodes[0].hold = false;
    world.release_held(0, world.now);
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(7));
}
