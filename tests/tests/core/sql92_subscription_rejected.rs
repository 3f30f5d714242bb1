//! An SQL92 subscription is checked with the broker first (`CHECK_CLIENT_CONFIG`, as Java's
//! `MQClientInstance.checkClientInBroker` does at start). A broker that cannot evaluate it
//! (`enablePropertyFilter` off, the default) gets the subscription dropped with
//! `Event::SubscriptionRejected`, instead of pulls that fail forever; the other subscriptions
//! are not affected.

use std::time::Duration;

use consumer_core::Event;
use rocketmq_tests::world::{World, WorldConfig};

#[test]
fn a_broker_without_property_filtering_rejects_the_subscription() {
    let mut config = WorldConfig::new(3);
    config.faults = false;
    config.messages = 10;
    config.reconsume_percent = 0;
    config.consumers = 1;
    let mut world = World::new(config);
    world.cluster.create_topic("SqlTopic", 2);
    let now = world.now;
    world.nodes[0]
        .consumer
        .subscribe_sql92(now, "SqlTopic", "a > 5")
        .expect("a valid subscription");
    world.run_until(world.epoch() + Duration::from_secs(40));

    let rejected: Vec<&Event> = world.nodes[0]
        .events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| matches!(e, Event::SubscriptionRejected { topic, .. } if topic == "SqlTopic"))
        .collect();
    assert_eq!(rejected.len(), 1, "one rejection: {rejected:?}");
    assert!(
        world.nodes[0]
            .consumer
            .assignment()
            .all(|q| q.topic() != "SqlTopic"),
        "no queue of the rejected topic is owned"
    );
    assert!(
        world
            .cluster
            .subscription("broker-a", "sim-group", "SqlTopic")
            .is_none(),
        "the next heartbeat no longer registers the rejected subscription"
    );
    // The tag subscription runs on: all ten messages of the world's topic were consumed.
    let consumed: usize = world.nodes[0]
        .delivered
        .iter()
        .map(|(_, d)| d.messages.len())
        .sum();
    assert_eq!(
        consumed,
        10,
        "the other subscription still consumes\n{}",
        world.trace_tail(20)
    );
}
