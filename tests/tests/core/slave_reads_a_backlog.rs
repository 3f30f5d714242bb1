//! A consumer far behind reads its backlog from the slave and comes back to the master once
//! it has caught up, following each answer's `suggestWhichBrokerId` as Java's
//! `PullAPIWrapper.updatePullFromWhichNode` does: a broker with a slave (`slaveReadEnable`)
//! suggests the slave (`whichBrokerWhenConsumeSlowly`, 1) to a pull that read from farther
//! behind the commit log's end than fits in memory (`accessMessageInMemoryMaxRatio`, here a
//! few records' worth), and the master (0) otherwise, whichever node answers. Each message is
//! delivered once.

use std::time::Duration;

use consumer_core::MessageQueue;
use proto::RequestCode;
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_backlog_is_read_from_the_slave_then_the_master_again() {
    let mut config = quiet_config(19, 1);
    config.slaves = Some(Duration::from_millis(100));
    config.cluster_config = |mut c| {
        c.in_memory_bytes = Some(2_000);
        c
    };
    let mut world = World::new(config);
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    let master = world.cluster.broker_addr("broker-a");
    let slave = world
        .cluster
        .slave_addr("broker-a")
        .expect("broker-a has a slave");
    let pulls = |world: &World, addr: &str| world.requests_sent(addr, RequestCode::PULL_MESSAGE);
    world.run_until(world.epoch() + Duration::from_secs(35));
    assert_eq!(pulls(&world, &slave), 0, "nothing to catch up on yet");

    // A backlog builds while the queue is paused (its long poll came back empty first).
    world.nodes[0].consumer.pause(&queue);
    world.run_until(world.now + Duration::from_secs(21));
    let sent = world.produce_to(&queue, 200);
    world.run_until(world.now + Duration::from_secs(1));
    let now = world.now;
    world.nodes[0].consumer.resume(now, &queue);
    world.run_until(world.now + Duration::from_secs(5));

    assert_eq!(world.acknowledged(&queue).len(), sent.len());
    assert!(
        pulls(&world, &slave) >= 3,
        "most of the backlog from the slave: {} pulls",
        pulls(&world, &slave)
    );
    let (to_slave, to_master) = (pulls(&world, &slave), pulls(&world, &master));
    world.produce_to(&queue, 2);
    world.run_until(world.now + Duration::from_secs(30));
    assert_eq!(world.acknowledged(&queue).len(), sent.len() + 2);
    assert_eq!(
        pulls(&world, &slave),
        to_slave,
        "caught up: the master again"
    );
    assert!(pulls(&world, &master) > to_master);
    let delivered = offsets_of(&world.nodes[0].delivered, &queue);
    assert_eq!(
        delivered,
        (0..202).collect::<Vec<_>>(),
        "each once, in order"
    );
}
