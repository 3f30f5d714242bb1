//! A broker that crashes loses the commits it had not written to disk (Apache's brokers write
//! their offset table every 5 s), and leaves the route while it is down, so its queues are
//! revoked with a final commit that has nowhere to go. When it is back and its queues return,
//! they resume where they stood, not at the older offsets the broker answers, and that offset is
//! committed again (`Event::OffsetRestored`): nothing consumed before the crash comes twice.
//!
//! Against Java's behaviour (`RebalancePushImpl.removeUnnecessaryMessageQueue` drops a revoked
//! queue's offset), which delivers everything since the broker's last write again.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_crashed_brokers_queues_resume_where_they_stood() {
    let mut world = World::new(quiet_config(7, 1));
    world.run_until(world.epoch() + Duration::from_secs(35));
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);

    // Consumed and committed before the crash; the broker wrote some of it to disk, not all:
    // the first 20 are committed by a periodic persist (every 5 s) and written (every 5 s)
    // within 11 s, the next 20 only consumed when the broker goes.
    let mut sent = world.produce_to(&queue, 20);
    world.run_until(world.now + Duration::from_secs(11));
    sent.extend(world.produce_to(&queue, 20));
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(
        world.acknowledged(&queue).len(),
        40,
        "{}",
        world.trace_tail(30)
    );
    let before = world.nodes[0].delivered.len();

    world.cluster.set_broker_down("broker-b", true);
    // The route refresh (30 s) revokes the broker's queues.
    world.run_until(world.now + Duration::from_secs(35));
    assert!(
        !world.nodes[0].consumer.assignment().any(|q| q == queue),
        "revoked while its broker is down"
    );
    let lost = world.cluster.committed_offset(&world.config.group, &queue);
    assert!(
        lost.is_some_and(|offset| offset < 40),
        "the crash lost commits (the broker kept {lost:?} of 40)"
    );

    sent.extend(world.produce_to(&queue, 5));
    world.cluster.set_broker_down("broker-b", false);
    world.run_until(world.now + Duration::from_secs(35));

    let after = offsets_of(&world.nodes[0].delivered[before..], &queue);
    assert_eq!(
        after,
        (40..45).collect::<Vec<i64>>(),
        "only what came after, once"
    );
    let restored: Vec<&Event> = world.nodes[0]
        .events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| matches!(e, Event::OffsetRestored { queue: q, .. } if *q == queue))
        .collect();
    assert_eq!(
        restored,
        [&Event::OffsetRestored {
            queue: queue.clone(),
            offset: 40,
            committed: lost,
        }]
    );
    // Committed again on the broker, and past the new messages by now.
    assert_eq!(
        world.cluster.committed_offset(&world.config.group, &queue),
        Some(45)
    );
    let mut times: BTreeMap<i64, usize> = BTreeMap::new();
    for offset in offsets_of(&world.nodes[0].delivered, &queue) {
        *times.entry(offset).or_default() += 1;
    }
    assert!(times.values().all(|&n| n == 1), "each once: {times:?}");
    assert_eq!(times.len(), sent.len());
}
