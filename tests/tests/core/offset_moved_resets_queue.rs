//! `PULL_OFFSET_MOVED` resets the queue to the broker's offset: the consumer reports
//! `Event::OffsetMoved { from, to }`, stores `to` as the group's committed offset with
//! `UPDATE_CONSUMER_OFFSET` at once (Java's `updateAndFreezeOffset` + `persist`,
//! `remoting-protocol.md` §4.2, §8.2), and goes on consuming from `to`: the messages between
//! `from` and `to` are skipped, and nothing before `to` is delivered again.

use std::time::Duration;

use consumer_core::{Event, FailureReason, MessageQueue};
use proto::{RequestCode, ResponseCode};
use rocketmq_tests::scenario::{
    GROUP, TOPIC, events_where, offsets_of, produce_untracked, queue_stats, quiet_config,
    refuse_once,
};
use rocketmq_tests::sim::Fault;
use rocketmq_tests::world::World;

#[test]
fn offset_moved_commits_the_new_offset_and_consumes_from_it() {
    let mut world = World::new(quiet_config(21, 1));
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(2));

    // Consume 0..10 and let the persist timer commit 10; the queue's next pull is parked.
    world.produce_to(&queue, 10);
    world.run_until(world.epoch() + Duration::from_secs(8));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(10));

    // The parked pull is re-run when new messages arrive, and answered OFFSET_MOVED to 15.
    world.cluster.inject(Fault::OffsetMoved {
        broker: "broker-a".into(),
        topic: TOPIC.into(),
        queue_id: 0,
        next_begin_offset: 15,
    });
    let moved_at = world.now;
    // Offsets 10..15 are what the broker tells the consumer to skip: produced straight into
    // the cluster, so the world does not expect them to be consumed.
    produce_untracked(&mut world, &queue, "skipped", 5);
    let kept = world.produce_to(&queue, 5);
    assert_eq!(kept, vec![15, 16, 17, 18, 19]);
    // The OFFSET_MOVED answer is on its way. Refuse the pull that follows it unprocessed, so
    // its piggy-backed commit cannot be what stores `to`: only UPDATE_CONSUMER_OFFSET can.
    refuse_once(&mut world, "broker-a", RequestCode::PULL_MESSAGE);

    // Within one network round trip of the event the commit has landed, before any of the
    // messages from `to` on could have been acknowledged and committed.
    let mut event_at = None;
    world.run_until_with(moved_at + Duration::from_secs(1), |w| {
        if event_at.is_none() {
            event_at = w.nodes[0]
                .events
                .iter()
                .find(|(_, e)| matches!(e, Event::OffsetMoved { .. }))
                .map(|(at, _)| *at);
        }
    });
    let event_at = event_at.expect("an OffsetMoved event");
    let moved = events_where(&world, 0, |e| matches!(e, Event::OffsetMoved { .. }));
    assert_eq!(
        moved,
        vec![Event::OffsetMoved {
            queue: queue.clone(),
            from: 10,
            to: 15
        }]
    );

    let mut committed_after_event = None;
    world.run_until_with(event_at + Duration::from_millis(12), |w| {
        committed_after_event = w.cluster.committed_offset(GROUP, &queue);
    });
    assert_eq!(
        committed_after_event,
        Some(15),
        "UPDATE_CONSUMER_OFFSET stores `to` right away\n{}",
        world.trace_tail(30)
    );

    let refused = world.nodes[0].events.iter().any(|(_, e)| {
        matches!(
            e,
            Event::RequestFailed {
                request: "PULL_MESSAGE",
                reason: FailureReason::Refused(ResponseCode::SYSTEM_ERROR, _),
                ..
            }
        )
    });
    assert!(refused, "the pull after the move was refused unprocessed");

    world.run_until(world.now + Duration::from_secs(10));
    let offsets = offsets_of(&world.nodes[0].delivered, &queue);
    assert_eq!(
        offsets,
        (0..10).chain(15..20).collect::<Vec<i64>>(),
        "consumption continues at `to`, skipping 10..15 and repeating nothing"
    );
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(20));
    let q = queue_stats(&world, 0, &queue);
    assert_eq!(q.next_pull_offset, 20);
    assert_eq!(q.committable_offset, 20);
}
