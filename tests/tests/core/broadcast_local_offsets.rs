//! Broadcasting keeps offsets locally (Java's `LocalFileOffsetStore`, `remoting-protocol.md`
//! §8.1): every member consumes every message, hands its offset table to the driver
//! (`Output::StoreOffsets`) and never commits to a broker; a new process that loads the stored
//! table (`Consumer::load_offsets`) resumes right after what was consumed, with no redelivery;
//! and offsets of a queue that left the route stay in the table, so they survive until the
//! queue comes back.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::{Event, MessageModel, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

fn all_queues() -> Vec<MessageQueue> {
    let mut queues = Vec::new();
    for broker in ["broker-a", "broker-b"] {
        for id in 0..2 {
            queues.push(MessageQueue::new(TOPIC, broker, id));
        }
    }
    queues
}

/// What node `i` delivered of `queue`, in order.
fn delivered(world: &World, i: usize, queue: &MessageQueue) -> Vec<i64> {
    offsets_of(&world.nodes[i].delivered, queue)
}

fn no_broker_commit(w: &World) {
    for q in all_queues() {
        assert_eq!(
            w.cluster.committed_offset(GROUP, &q),
            None,
            "broadcasting committed {q:?} to the broker"
        );
    }
}

#[test]
fn members_store_offsets_locally_and_a_restarted_member_resumes_from_them() {
    let mut config = quiet_config(111, 2);
    config.model = MessageModel::Broadcasting;
    let mut world = World::new(config);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 0);
    // Leaves the route later.
    let c = MessageQueue::new(TOPIC, "broker-a", 1);
    world.produce_to(&a, 10);
    world.produce_to(&b, 5);
    world.produce_to(&c, 2);
    world.run_until_with(world.epoch() + Duration::from_secs(8), no_broker_commit);

    let expected = BTreeMap::from([
        (a.clone(), 10),
        (b.clone(), 5),
        (c.clone(), 2),
        (MessageQueue::new(TOPIC, "broker-b", 1), 0),
    ]);
    for i in 0..2 {
        assert_eq!(delivered(&world, i, &a), (0..10).collect::<Vec<_>>());
        assert_eq!(delivered(&world, i, &b), (0..5).collect::<Vec<_>>());
        assert_eq!(delivered(&world, i, &c), vec![0, 1]);
        let stored: BTreeMap<_, _> = world.nodes[i]
            .stored
            .iter()
            .filter(|(_, o)| **o > 0)
            .map(|(q, o)| (q.clone(), *o))
            .collect();
        let mut consumed = expected.clone();
        consumed.retain(|_, o| *o > 0);
        assert_eq!(stored, consumed, "node {i} stores what it consumed");
        assert!(
            world.nodes[i]
                .consumer
                .assignment()
                .all(|q| !q.topic().starts_with("%RETRY%")),
            "broadcasting has no retry topic"
        );
    }

    // Node 0's process stops; its final table is what the next process loads.
    world.shutdown_one(0);
    world.run_until_with(world.now + Duration::from_secs(1), no_broker_commit);
    assert!(world.nodes[0].consumer.is_closed());
    let report = world.nodes[0].report.clone().expect("closed");
    for (q, offset) in [(&a, 10), (&b, 5), (&c, 2)] {
        assert!(
            report.committed.contains(&(q.clone(), offset)),
            "{report:?}"
        );
        assert_eq!(world.nodes[0].stored.get(q), Some(&offset));
    }

    // The topic shrinks to one queue per broker: `c` leaves the route.
    world.cluster.create_topic(TOPIC, 1);
    let resumed = world.add_consumer_resuming(0);
    world.run_until_with(world.now + Duration::from_secs(3), no_broker_commit);
    let owned: Vec<_> = world.nodes[resumed].consumer.assignment().collect();
    assert_eq!(owned, vec![a.clone(), b.clone()]);
    world.produce_to(&a, 3);
    world.run_until_with(world.now + Duration::from_secs(8), no_broker_commit);
    assert_eq!(
        delivered(&world, resumed, &a),
        vec![10, 11, 12],
        "the new process resumes after the loaded offset, nothing redelivered"
    );
    assert_eq!(delivered(&world, resumed, &b), Vec::<i64>::new());
    assert_eq!(delivered(&world, 1, &a), (0..13).collect::<Vec<_>>());

    // Node 1 drops `c` at its next route refresh (30 s); one more message makes both members
    // store their tables again.
    world.run_until_with(world.epoch() + Duration::from_secs(40), no_broker_commit);
    assert!(
        world.nodes[1].consumer.assignment().all(|q| q != c),
        "node 1 no longer owns the queue that left the route"
    );
    assert!(
        world.nodes[1]
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::Revoked(qs) if qs.contains(&c)))
    );
    world.produce_to(&a, 1);
    world.run_until_with(world.now + Duration::from_secs(8), no_broker_commit);
    for i in [1, resumed] {
        let stored = &world.nodes[i].stored;
        assert_eq!(stored.get(&a), Some(&14), "node {i}: {stored:?}");
        assert_eq!(stored.get(&b), Some(&5), "node {i}: {stored:?}");
        assert_eq!(
            stored.get(&c),
            Some(&2),
            "node {i} keeps the offset of the queue that left the route: {stored:?}"
        );
    }
}
