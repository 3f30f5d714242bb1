//! A third member joining a settled two-member group takes its share at once: the brokers'
//! `NOTIFY_CONSUMER_IDS_CHANGED` makes every member rebalance well before the 20 s periodic
//! rebalance, the member that loses a queue reports `Event::Revoked`, the newcomer reports
//! `Event::Assigned`, and afterwards each of the 6 queues (4 of the topic, 2 of the group's
//! retry topic) has exactly one owner.
//!
//! Java allocates each topic separately (`RebalanceImpl.rebalanceByTopic`, `remoting-protocol.md`
//! §7.11), so with `AllocateMessageQueueAveragely` and ids sorted `#0 < #1 < #2` the 4 topic
//! queues split 2/1/1 and the 2 retry queues 1/1/0: the members own 3, 2 and 1 queues, not 2
//! each.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{RETRY, TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

fn topic(broker: &str, id: i32) -> MessageQueue {
    MessageQueue::new(TOPIC, broker, id)
}

fn retry(broker: &str) -> MessageQueue {
    MessageQueue::new(RETRY, broker, 0)
}

fn owners(world: &World) -> BTreeMap<MessageQueue, Vec<usize>> {
    let mut owners: BTreeMap<MessageQueue, Vec<usize>> = BTreeMap::new();
    for (i, node) in world.nodes.iter().enumerate() {
        for mq in node.consumer.assignment() {
            owners.entry(mq.clone()).or_default().push(i);
        }
    }
    owners
}

/// Queues named by `Assigned` (or `Revoked`) events of node `i` at or after `since`.
fn moved(world: &World, i: usize, since: std::time::Instant, assigned: bool) -> Vec<MessageQueue> {
    world.nodes[i]
        .events
        .iter()
        .filter(|(at, _)| *at >= since)
        .flat_map(|(_, event)| match (event, assigned) {
            (Event::Assigned(queues), true) | (Event::Revoked(queues), false) => queues.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn third_member_takes_its_share_after_the_notification() {
    let mut world = World::new(quiet_config(11, 2));
    // Settled: a member that asked for the retry topic's route while only one broker had it
    // learns the rest at its next route refresh (30 s).
    world.run_until(world.epoch() + Duration::from_secs(35));

    let before = owners(&world);
    let expected_before: BTreeMap<MessageQueue, Vec<usize>> = [
        (topic("broker-a", 0), vec![0]),
        (topic("broker-a", 1), vec![0]),
        (topic("broker-b", 0), vec![1]),
        (topic("broker-b", 1), vec![1]),
        (retry("broker-a"), vec![0]),
        (retry("broker-b"), vec![1]),
    ]
    .into();
    assert_eq!(before, expected_before, "two members split the 6 queues");

    let joined_at = world.now;
    let newcomer = world.add_consumer();
    // Before the next periodic rebalance (every 20 s from the start, so at 40 s): only the
    // notification can move queues this early.
    world.run_until(joined_at + Duration::from_secs(3));

    let after = owners(&world);
    let expected_after: BTreeMap<MessageQueue, Vec<usize>> = [
        (topic("broker-a", 0), vec![0]),
        (topic("broker-a", 1), vec![0]),
        (topic("broker-b", 0), vec![1]),
        (topic("broker-b", 1), vec![newcomer]),
        (retry("broker-a"), vec![0]),
        (retry("broker-b"), vec![1]),
    ]
    .into();
    assert_eq!(
        after,
        expected_after,
        "every queue has exactly one owner among the three\n{}",
        world.trace_tail(40)
    );
    let counts: Vec<usize> = world
        .nodes
        .iter()
        .map(|n| n.consumer.assignment().count())
        .collect();
    assert_eq!(counts, vec![3, 2, 1], "per-topic AVG allocation");

    assert_eq!(
        moved(&world, 0, joined_at, true),
        Vec::<MessageQueue>::new()
    );
    assert_eq!(
        moved(&world, 0, joined_at, false),
        Vec::<MessageQueue>::new()
    );
    assert_eq!(
        moved(&world, 1, joined_at, false),
        vec![topic("broker-b", 1)]
    );
    assert_eq!(
        moved(&world, 1, joined_at, true),
        Vec::<MessageQueue>::new()
    );
    assert_eq!(
        moved(&world, newcomer, joined_at, true),
        vec![topic("broker-b", 1)]
    );
    assert_eq!(
        moved(&world, newcomer, joined_at, false),
        Vec::<MessageQueue>::new()
    );

    // The newcomer consumes what arrives on its queue.
    let offsets = world.produce_to(&topic("broker-b", 1), 3);
    world.run_until(world.now + Duration::from_secs(2));
    let got = offsets_of(&world.nodes[newcomer].delivered, &topic("broker-b", 1));
    assert_eq!(got, offsets);
    assert!(
        world.nodes[1]
            .delivered
            .iter()
            .all(|(_, d)| d.queue != topic("broker-b", 1))
    );
}
