//! A running consumer subscribes to a second topic and consumes it; it then unsubscribes: the
//! topic's queues are revoked with their final commit, the brokers drop the subscription at the
//! next heartbeat, and what is stored afterwards is not delivered. Unsubscribing twice, or the
//! retry topic, says false.

use std::time::Duration;

use consumer_core::MessageQueue;
use rocketmq_tests::scenario::{GROUP, offsets_of, quiet_config};
use rocketmq_tests::world::World;

const OTHER: &str = "OtherTopic";

#[test]
fn a_topic_joins_and_leaves_a_running_consumer() {
    let mut world = World::new(quiet_config(341, 1));
    world.run_until(world.epoch() + Duration::from_secs(2));
    world.cluster.create_topic(OTHER, 1);
    let other = MessageQueue::new(OTHER, "broker-a", 0);
    let now = world.now;
    world.nodes[0]
        .consumer
        .subscribe(now, OTHER, "*")
        .expect("a valid subscription");
    world.produce_to(&other, 5);
    world.run_until(world.now + Duration::from_secs(3));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &other),
        vec![0, 1, 2, 3, 4]
    );
    assert!(
        world
            .cluster
            .subscription("broker-a", GROUP, OTHER)
            .is_some(),
        "the broker learned the subscription"
    );

    let now = world.now;
    assert!(world.nodes[0].consumer.unsubscribe(now, OTHER));
    world.run_until(world.now + Duration::from_secs(2));
    assert!(
        world.nodes[0]
            .consumer
            .assignment()
            .all(|q| q.topic() != OTHER),
        "none of the unsubscribed topic's queues is left"
    );
    assert_eq!(
        world.cluster.committed_offset(GROUP, &other),
        Some(5),
        "the revoked queue committed its end"
    );
    assert!(
        world
            .cluster
            .subscription("broker-a", GROUP, OTHER)
            .is_none(),
        "the heartbeat dropped the subscription"
    );
    world.produce_to(&other, 3);
    world.run_until(world.now + Duration::from_secs(3));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &other).len(),
        5,
        "nothing more of the unsubscribed topic"
    );
    let now = world.now;
    assert!(!world.nodes[0].consumer.unsubscribe(now, OTHER));
    assert!(
        !world.nodes[0]
            .consumer
            .unsubscribe(now, &format!("%RETRY%{GROUP}"))
    );
}
