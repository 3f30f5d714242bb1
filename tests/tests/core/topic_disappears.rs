//! Queues follow the routes: when a broker goes down it leaves every route, and at the next
//! route refresh (30 s) its queues — of the topic and of the group's retry topic — are revoked
//! (`Event::Revoked`) and the group shares out what is left; when the broker is back, the next
//! refresh brings its queues back (`Event::Assigned`), each with exactly one owner, and what was
//! stored there meanwhile is consumed.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{RETRY, TOPIC, quiet_config};
use rocketmq_tests::world::World;

fn queues_of(broker: &str) -> BTreeSet<MessageQueue> {
    [
        MessageQueue::new(TOPIC, broker, 0),
        MessageQueue::new(TOPIC, broker, 1),
        MessageQueue::new(RETRY, broker, 0),
    ]
    .into()
}

/// Every queue owned by some node, checking that none has two owners.
fn owned(world: &World) -> BTreeSet<MessageQueue> {
    let mut all = BTreeSet::new();
    for node in &world.nodes {
        for mq in node.consumer.assignment() {
            assert!(all.insert(mq.clone()), "{mq:?} has two owners");
        }
    }
    all
}

/// Queues of `broker` named by the nodes' `Assigned` (or `Revoked`) events at or after `since`.
fn moved(world: &World, broker: &str, since: Instant, assigned: bool) -> BTreeSet<MessageQueue> {
    world
        .nodes
        .iter()
        .flat_map(|n| &n.events)
        .filter(|(at, _)| *at >= since)
        .flat_map(|(_, event)| match (event, assigned) {
            (Event::Assigned(queues), true) | (Event::Revoked(queues), false) => queues.clone(),
            _ => Vec::new(),
        })
        .filter(|mq| mq.broker_name() == broker)
        .collect()
}

#[test]
fn queues_of_a_broker_that_goes_down_are_revoked_and_come_back_with_it() {
    let mut world = World::new(quiet_config(91, 2));
    // Settled: a member that asked for the retry topic's route while only one broker had it
    // learns the rest at its next route refresh (30 s).
    world.run_until(world.epoch() + Duration::from_secs(35));
    let everything: BTreeSet<MessageQueue> = queues_of("broker-a")
        .union(&queues_of("broker-b"))
        .cloned()
        .collect();
    assert_eq!(owned(&world), everything);

    let down_at = world.now;
    world.cluster.set_broker_down("broker-b", true);
    // One route refresh period (30 s) and a little.
    world.run_until(down_at + Duration::from_secs(35));
    assert_eq!(
        owned(&world),
        queues_of("broker-a"),
        "only broker-a's queues are owned\n{}",
        world.trace_tail(40)
    );
    // broker-a's queues may change hands as the group re-splits; broker-b's all go.
    assert_eq!(
        moved(&world, "broker-b", down_at, false),
        queues_of("broker-b")
    );
    assert!(moved(&world, "broker-b", down_at, true).is_empty());

    // Stored while the broker is down, consumed once it is back.
    let waiting = MessageQueue::new(TOPIC, "broker-b", 1);
    let offsets = world.produce_to(&waiting, 4);
    let up_at = world.now;
    world.cluster.set_broker_down("broker-b", false);
    world.run_until(up_at + Duration::from_secs(35));
    assert_eq!(
        owned(&world),
        everything,
        "every queue has one owner again\n{}",
        world.trace_tail(40)
    );
    assert_eq!(
        moved(&world, "broker-b", up_at, true),
        queues_of("broker-b")
    );
    assert_eq!(
        world.acknowledged(&waiting),
        offsets.into_iter().collect::<BTreeSet<i64>>()
    );
}
