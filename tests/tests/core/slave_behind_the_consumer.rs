//! A master lost right after the consumer pulled messages its slave had not copied yet: the
//! consumer's next offset lies past the slave's end, and a 4.9 slave neither moves it back
//! nor waits (it corrects no offsets, and turns the master's `PULL_OFFSET_MOVED` into
//! `PULL_RETRY_IMMEDIATELY` at the request's offset: `PullMessageProcessor`,
//! `DefaultMessageStore.nextOffsetCorrection`). The consumer asks again after the pull backoff
//! (1 s) rather than at once, for as long as the master stays away (Java's pull callback
//! retries such an answer immediately, spinning on the slave); it delivers nothing twice, and
//! reads on from the master once it is back.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::MessageQueue;
use proto::RequestCode;
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_consumer_ahead_of_its_slave_backs_off_until_the_master_is_back() {
    let mut config = quiet_config(17, 1);
    config.slaves = Some(Duration::from_millis(500));
    let mut world = World::new(config);
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    let slave = world
        .cluster
        .slave_addr("broker-a")
        .expect("broker-a has a slave");
    world.run_until(world.epoch() + Duration::from_secs(35));

    let mut sent = world.produce_to(&queue, 10);
    world.run_until(world.now + Duration::from_secs(2));
    // Pulled and consumed at once, lost with the master before the slave copied them.
    sent.extend(world.produce_to(&queue, 5));
    world.run_until(world.now + Duration::from_millis(100));
    assert_eq!(world.acknowledged(&queue), (0..15).collect());
    assert_eq!(world.cluster.slave_max_offset(&queue), 10);
    world.cluster.set_broker_down("broker-a", true);

    // The consumer moves to the slave within seconds (a lost connection brings the route
    // refresh forward); over the next minute it asks the slave about once a second per queue
    // of the broker, not thousands of times.
    world.run_until(world.now + Duration::from_secs(10));
    let before = world.requests_sent(&slave, RequestCode::PULL_MESSAGE);
    world.run_until(world.now + Duration::from_secs(60));
    let asked = world.requests_sent(&slave, RequestCode::PULL_MESSAGE) - before;
    assert!(
        (30..=150).contains(&asked),
        "{asked} pulls to the slave in 60 s"
    );

    world.cluster.set_broker_down("broker-a", false);
    world.run_until(world.now + Duration::from_secs(40));
    sent.extend(world.produce_to(&queue, 2));
    world.run_until(world.now + Duration::from_secs(2));
    assert_eq!(world.acknowledged(&queue), (0..17).collect());
    let mut times: BTreeMap<i64, usize> = BTreeMap::new();
    for offset in offsets_of(&world.nodes[0].delivered, &queue) {
        *times.entry(offset).or_default() += 1;
    }
    assert_eq!(times.len(), sent.len());
    assert!(times.values().all(|&n| n == 1), "each once: {times:?}");
}
