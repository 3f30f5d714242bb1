//! A leaving member unregisters only once its final commits are stored. Unregistering makes
//! the brokers notify the other members at once, and the member that takes a queue over reads
//! its offset then: with the final commits going to a broker one at a time, an unregistration
//! sent beside them let the next owner read a queue's offset before its final commit landed
//! and consume the queue's messages again (seen on Apache 4.9 with two members). Here, with
//! 50-60 ms links and four queues on one broker, at every step of the shutdown the member is
//! still registered until every queue it owned stores its final offset.

use std::time::Duration;

use consumer_core::MessageQueue;
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn the_member_stays_registered_until_its_final_commits_are_stored() {
    let mut config = quiet_config(131, 1);
    config.queues_per_broker = 4;
    config.latency = (Duration::from_millis(50), Duration::from_millis(60));
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(2));
    let queues: Vec<MessageQueue> = (0..4)
        .map(|id| MessageQueue::new(TOPIC, "broker-a", id))
        .collect();
    for queue in &queues {
        world.produce_to(queue, 5);
    }
    world.run_until(world.now + Duration::from_secs(1));
    for queue in &queues {
        assert_eq!(world.acknowledged(queue).len(), 5, "{queue:?}");
    }

    world.shutdown_one(0);
    let client = world.nodes[0].consumer.client_id().to_owned();
    let mut unregistered_at = None;
    for _ in 0..400 {
        world.run_until(world.now + Duration::from_millis(5));
        let member = world.cluster.members("broker-a", GROUP).contains(&client);
        if member {
            continue;
        }
        unregistered_at.get_or_insert(world.now);
        for queue in &queues {
            assert_eq!(
                world.cluster.committed_offset(GROUP, queue),
                Some(5),
                "{queue:?}: unregistered before its final commit was stored"
            );
        }
    }
    assert!(
        unregistered_at.is_some(),
        "the member unregistered within 2 s"
    );
    assert!(world.nodes[0].consumer.is_closed());
}
