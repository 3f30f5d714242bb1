//! Orderly consumption never lets one busy queue starve the others. Java's consume thread
//! yields a queue after 60 s of continuous consumption (`MAX_TIME_CONSUME_CONTINUOUSLY`); here
//! queues with ready messages take turns after every batch, which is stronger: with room for a
//! single delivery, two backlogged queues alternate batch by batch.

use std::time::Duration;

use consumer_core::{ConsumeMode, MessageQueue};
use rocketmq_tests::world::{World, WorldConfig};

#[test]
fn backlogged_orderly_queues_alternate_batch_by_batch() {
    let mut config = WorldConfig::new(7);
    config.faults = false;
    config.messages = 0;
    config.reconsume_percent = 0;
    config.consumers = 1;
    config.mode = ConsumeMode::Orderly;
    config.consumer_config = |mut c| {
        c.max_in_flight_deliveries = 1;
        c.consume_batch_size = 2;
        c
    };
    let mut world = World::new(config);
    let a = MessageQueue::new("SimTopic", "broker-a", 0);
    let b = MessageQueue::new("SimTopic", "broker-b", 1);
    world.produce_to(&a, 40);
    world.produce_to(&b, 40);
    world.run_until(world.epoch() + Duration::from_secs(10));

    let order: Vec<&MessageQueue> = world.nodes[0]
        .delivered
        .iter()
        .map(|(_, d)| &d.queue)
        .filter(|q| **q == a || **q == b)
        .collect();
    assert_eq!(
        order.len(),
        40,
        "20 batches of 2 from each queue: {order:?}"
    );
    // Once both queues have messages cached, no queue is served twice in a row.
    let start = order
        .windows(2)
        .position(|w| w[0] != w[1])
        .expect("both queues are delivered");
    for (i, pair) in order[start..].windows(2).enumerate() {
        let both_left =
            order[start + i + 1..].contains(&&a) && order[start + i + 1..].contains(&&b);
        assert!(
            pair[0] != pair[1] || !both_left,
            "{:?} served twice in a row at batch {} while the other queue waited: {order:?}",
            pair[0],
            start + i
        );
    }
}
