//! Where a newly assigned queue starts (Java's `computePullFromWhere`, `remoting-protocol.md`
//! §7.8): with no committed offset, `FirstOffset` starts at 0, `LastOffset` at the queue's max
//! offset (what was stored before the consumer started is not delivered, what comes after is),
//! and `Timestamp(t)` at the first message stored at or after `t`; the group's retry topic
//! under `LastOffset` starts at 0, so earlier failures are not lost, but under `Timestamp` at
//! its max offset. With a committed offset, all three start from it.
//!
//! Each topic queue holds offsets 0..3 stored at t0 and 3..5 stored at t0 + 2 s before the
//! consumer starts (t0 + 4 s), and gets 5..7 once it runs; the retry queue on `broker-a` holds
//! one message from before the start.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use consumer_core::{ConsumeFrom, MessageQueue};
use rocketmq_tests::scenario::{GROUP, RETRY, TOPIC, produce_untracked, quiet_config};
use rocketmq_tests::sim::harness::update_offset_request;
use rocketmq_tests::world::World;

fn topic_queues() -> Vec<MessageQueue> {
    ["broker-a", "broker-b"]
        .into_iter()
        .flat_map(|b| (0..2).map(move |q| MessageQueue::new(TOPIC, b, q)))
        .collect()
}

fn retry_queue() -> MessageQueue {
    MessageQueue::new(RETRY, "broker-a", 0)
}

/// Commits `offset` for `queue` as an earlier member of the group would have.
fn commit(world: &mut World, queue: &MessageQueue, offset: i64) {
    let key = u64::MAX - 1;
    let addr = world.cluster.broker_addr(queue.broker_name());
    assert!(world.cluster.connect(key, &addr));
    let mut request = update_offset_request(GROUP, queue, offset);
    request.opaque = 1;
    world.cluster.handle_command(world.now, key, request);
    while world.cluster.poll_output().is_some() {}
    world.cluster.disconnect(world.now, key);
    assert_eq!(world.cluster.committed_offset(GROUP, queue), Some(offset));
}

/// Runs the scenario with `consume_from` (given the wall-clock ms of t0 + 2 s), after
/// committing `committed` on every topic queue when set; returns the offsets delivered per
/// queue.
fn start_with(
    consume_from: impl FnOnce(i64) -> ConsumeFrom,
    committed: Option<i64>,
) -> BTreeMap<MessageQueue, Vec<i64>> {
    let mut world = World::new(quiet_config(61, 0));
    world.cluster.create_topic(RETRY, 1);
    let t0: Instant = world.epoch();
    for mq in topic_queues() {
        // From before the consumer existed: they may rightly never be consumed.
        produce_untracked(&mut world, &mq, "before start", 3);
    }
    produce_untracked(&mut world, &retry_queue(), "before start", 1);
    world.run_until(t0 + Duration::from_secs(2));
    let middle = world.cluster.wall_millis(world.now);
    for mq in topic_queues() {
        produce_untracked(&mut world, &mq, "before start", 2);
    }
    if let Some(offset) = committed {
        for mq in topic_queues() {
            commit(&mut world, &mq, offset);
        }
    }
    world.run_until(t0 + Duration::from_secs(4));

    let from = consume_from(middle);
    let node = world.add_consumer_with(|mut c| {
        c.consume_from = from;
        c
    });
    world.run_until(world.now + Duration::from_secs(3));
    assert_eq!(
        world.nodes[node].consumer.assignment().count(),
        6,
        "the lone member owns every queue"
    );
    for mq in topic_queues() {
        assert_eq!(world.produce_to(&mq, 2), vec![5, 6]);
    }
    world.run_until(world.now + Duration::from_secs(3));

    let mut delivered: BTreeMap<MessageQueue, Vec<i64>> = BTreeMap::new();
    for (_, d) in &world.nodes[node].delivered {
        delivered
            .entry(d.queue.clone())
            .or_default()
            .extend(d.messages.iter().map(|m| m.queue_offset()));
    }
    delivered
}

fn on_topic_queues(
    delivered: &BTreeMap<MessageQueue, Vec<i64>>,
    expected: &[i64],
) -> Result<(), String> {
    for mq in topic_queues() {
        let got = delivered.get(&mq).cloned().unwrap_or_default();
        if got != expected {
            return Err(format!("{mq:?} delivered {got:?}, expected {expected:?}"));
        }
    }
    Ok(())
}

#[test]
fn first_offset_starts_at_zero() {
    let delivered = start_with(|_| ConsumeFrom::First, None);
    on_topic_queues(&delivered, &[0, 1, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!(delivered.get(&retry_queue()), Some(&vec![0]));
}

#[test]
fn last_offset_starts_at_the_max_offset() {
    let delivered = start_with(|_| ConsumeFrom::Last, None);
    on_topic_queues(&delivered, &[5, 6]).unwrap();
}

#[test]
fn retry_topic_under_last_offset_starts_at_zero() {
    let delivered = start_with(|_| ConsumeFrom::Last, None);
    assert_eq!(
        delivered.get(&retry_queue()),
        Some(&vec![0]),
        "the retry message from before the start is delivered: {delivered:?}"
    );
}

#[test]
fn timestamp_starts_at_the_first_message_stored_at_or_after_it() {
    let delivered = start_with(ConsumeFrom::Timestamp, None);
    on_topic_queues(&delivered, &[3, 4, 5, 6]).unwrap();
    assert_eq!(
        delivered.get(&retry_queue()),
        None,
        "a retry topic under Timestamp starts at its max offset"
    );
}

#[test]
fn a_committed_offset_wins_over_every_consume_from() {
    let modes: [fn(i64) -> ConsumeFrom; 3] = [
        |_| ConsumeFrom::First,
        |_| ConsumeFrom::Last,
        ConsumeFrom::Timestamp,
    ];
    for mode in modes {
        let delivered = start_with(mode, Some(2));
        on_topic_queues(&delivered, &[2, 3, 4, 5, 6])
            .unwrap_or_else(|e| panic!("{:?}: {e}", mode(0)));
    }
}
