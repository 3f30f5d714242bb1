//! Orderly consumption locks a queue as soon as it is assigned, not at the 20 s renewal
//! (`RebalanceImpl.updateProcessQueueTableInRebalance` locks before adding a process queue,
//! `remoting-protocol.md` §7.10); nothing is delivered before the broker granted the lock; then
//! each queue is delivered one batch at a time, in offset order, the next batch only after the
//! previous one completed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use consumer_core::{ConsumeMode, ConsumeOutcome, Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn queues_are_locked_at_assignment_and_delivered_batch_by_batch_in_order() {
    let mut config = quiet_config(101, 1);
    config.mode = ConsumeMode::Orderly;
    config.consumer_config = |mut c| {
        c.consume_batch_size = 4;
        c
    };
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 1);
    // Stored before the consumer even starts: the first pull finds all of them.
    let produced_a = world.produce_to(&a, 10);
    let produced_b = world.produce_to(&b, 6);
    let me = world.nodes[0].consumer.client_id().to_owned();

    // When the broker first lists the consumer as the lock owner of each queue.
    let mut locked_at: BTreeMap<MessageQueue, Instant> = BTreeMap::new();
    world.run_until_with(world.epoch() + Duration::from_secs(2), |w| {
        for q in [&a, &b] {
            if !locked_at.contains_key(q)
                && w.cluster.lock_owner(GROUP, q, w.now) == Some(me.clone())
            {
                locked_at.insert(q.clone(), w.now);
            }
        }
        for (at, d) in &w.nodes[0].delivered {
            let lock = locked_at.get(&d.queue);
            assert!(
                lock.is_some_and(|l| l <= at),
                "{:?} delivered at {:?} before its lock was granted ({lock:?})\n{}",
                d.queue,
                *at - w.epoch(),
                w.trace_tail(30)
            );
        }
    });

    let events = &world.nodes[0].events;
    let time_of = |pred: &dyn Fn(&Event) -> bool| {
        events
            .iter()
            .find(|(_, e)| pred(e))
            .map(|(at, _)| *at)
            .unwrap_or_else(|| panic!("missing event; events: {events:?}"))
    };
    for q in [&a, &b] {
        let assigned = time_of(&|e| matches!(e, Event::Assigned(qs) if qs.contains(q)));
        let acquired = time_of(&|e| matches!(e, Event::LeaseAcquired(qs) if qs.contains(q)));
        assert!(
            acquired - assigned < Duration::from_millis(100),
            "{q:?}: assigned at {:?}, lock acquired only at {:?}: the lock must be asked for \
             at once, not at the 20 s renewal",
            assigned - world.epoch(),
            acquired - world.epoch()
        );
        let locked = locked_at
            .get(q)
            .unwrap_or_else(|| panic!("{q:?} never locked on the broker"));
        assert!(
            *locked - world.epoch() < Duration::from_secs(1),
            "{q:?} locked only at {:?}",
            *locked - world.epoch()
        );
    }

    // One batch per queue in flight, then the next only after it completes.
    let mut batches: BTreeMap<MessageQueue, Vec<Vec<i64>>> = BTreeMap::new();
    for _ in 0..10 {
        let held = world.nodes[0].held.clone();
        let in_flight: Vec<_> = world.nodes[0]
            .delivered
            .iter()
            .filter(|(_, d)| held.contains(&d.id))
            .map(|(_, d)| d.clone())
            .collect();
        let mut per_queue: BTreeMap<&MessageQueue, usize> = BTreeMap::new();
        for d in &in_flight {
            *per_queue.entry(&d.queue).or_default() += 1;
        }
        assert!(
            per_queue.values().all(|n| *n == 1),
            "more than one batch of a queue in flight at once: {per_queue:?}"
        );
        if in_flight.is_empty() {
            break;
        }
        for d in in_flight {
            batches
                .entry(d.queue.clone())
                .or_default()
                .push(d.messages.iter().map(|m| m.queue_offset()).collect());
            world.complete_at(0, d.id, ConsumeOutcome::Success, world.now);
        }
        world.run_until(world.now + Duration::from_millis(200));
    }

    assert_eq!(
        batches.get(&a),
        Some(&vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]),
        "queue a in batches of 4, in offset order"
    );
    assert_eq!(batches.get(&b), Some(&vec![vec![0, 1, 2, 3], vec![4, 5]]));
    for (q, produced) in [(&a, &produced_a), (&b, &produced_b)] {
        let delivered = offsets_of(&world.nodes[0].delivered, q);
        assert_eq!(
            &delivered, produced,
            "{q:?}: each produced offset delivered once, in order"
        );
    }
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &a), Some(10));
    assert_eq!(world.cluster.committed_offset(GROUP, &b), Some(6));
}
