//! A master lost for minutes while its slave serves (4.9, `slaveReadEnable=true`): the
//! broker's queues are read from the slave, so everything the slave copied before the crash is
//! consumed meanwhile, and what only the master held comes once it is back. Offsets go to the
//! slave meanwhile (`findBrokerAddressInSubscribe(name, MASTER_ID, false)` falls back to any
//! node of the broker); once the master is back they are not lost, although the master never
//! heard of them and the slave's next `SlaveSynchronize` overwrites its own table with the
//! master's: the periodic persist repeats every offset to the master every 5 s, as Java's
//! `RemoteBrokerOffsetStore.persistAll` sends its whole table. Pulls go back to the master once
//! it is back in the route (every answer of a slave suggests the master to a consumer that
//! keeps up). Nothing is delivered twice.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::MessageQueue;
use proto::RequestCode;
use rocketmq_tests::scenario::{GROUP, TOPIC, offsets_of, quiet_config};
use rocketmq_tests::sim::Role;
use rocketmq_tests::world::World;

#[test]
fn a_lost_masters_queues_are_read_from_its_slave_until_it_is_back() {
    let mut config = quiet_config(11, 1);
    config.slaves = Some(Duration::from_millis(100));
    let mut world = World::new(config);
    // `queue` gets messages only the master holds; `copied` none.
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    let copied = MessageQueue::new(TOPIC, "broker-a", 1);
    let master = world.cluster.broker_addr("broker-a");
    let slave = world
        .cluster
        .slave_addr("broker-a")
        .expect("broker-a has a slave");
    let pulls = |world: &World, addr: &str| world.requests_sent(addr, RequestCode::PULL_MESSAGE);
    world.run_until(world.epoch() + Duration::from_secs(35));

    let mut sent = world.produce_to(&queue, 20);
    world.run_until(world.now + Duration::from_secs(2));
    assert_eq!(world.acknowledged(&queue).len(), 20);
    assert_eq!(
        pulls(&world, &slave),
        0,
        "read from the master while it is up"
    );

    // The application pauses both queues and their long polls come back empty, so what comes
    // next is stored and copied but not pulled; then the master is lost, with 3 more messages
    // its slave never got.
    for q in [&queue, &copied] {
        world.nodes[0].consumer.pause(q);
    }
    world.run_until(world.now + Duration::from_secs(21));
    sent.extend(world.produce_to(&queue, 10));
    let sent_copied = world.produce_to(&copied, 8);
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(world.cluster.slave_max_offset(&queue), 30);
    sent.extend(world.produce_to(&queue, 3));
    world.cluster.set_broker_down("broker-a", true);
    let now = world.now;
    for q in [&queue, &copied] {
        world.nodes[0].consumer.resume(now, q);
    }

    // Two minutes without the master: what the slave has is consumed from it, and committed
    // there.
    world.run_until(world.now + Duration::from_secs(120));
    assert_eq!(
        world.acknowledged(&queue),
        (0..30).collect(),
        "all the slave holds, and nothing else: {}",
        world.trace_tail(30)
    );
    assert_eq!(world.acknowledged(&copied), (0..8).collect());
    assert!(pulls(&world, &slave) > 0);
    for (q, offset) in [(&queue, 30), (&copied, 8)] {
        assert_eq!(
            world.cluster.committed_offset_on(Role::Slave, GROUP, q),
            Some(offset),
            "committed to the slave"
        );
    }
    assert!(
        world
            .cluster
            .committed_offset(GROUP, &queue)
            .is_none_or(|offset| offset <= 20),
        "the master never heard of it"
    );
    assert_eq!(world.cluster.committed_offset(GROUP, &copied), None);

    // The master is back: within a route refresh and a long poll the consumer pulls from it
    // again and gets the 3 messages only it held; the offset committed to the slave alone is
    // committed to the master again, with nothing new consumed.
    world.cluster.set_broker_down("broker-a", false);
    world.run_until(world.now + Duration::from_secs(60));
    assert_eq!(world.acknowledged(&queue), (0..33).collect());
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(33));
    assert_eq!(
        world.cluster.committed_offset(GROUP, &copied),
        Some(8),
        "not lost"
    );
    // The slave's own table is the master's again (SlaveSynchronize, every 10 s).
    assert_eq!(
        world
            .cluster
            .committed_offset_on(Role::Slave, GROUP, &queue),
        Some(33)
    );
    let (to_slave, to_master) = (pulls(&world, &slave), pulls(&world, &master));
    world.run_until(world.now + Duration::from_secs(60));
    assert_eq!(
        pulls(&world, &slave),
        to_slave,
        "no pull goes to the slave any more"
    );
    assert!(
        pulls(&world, &master) > to_master,
        "the master's long polls go on"
    );

    for (q, sent) in [(&queue, &sent), (&copied, &sent_copied)] {
        let mut times: BTreeMap<i64, usize> = BTreeMap::new();
        for offset in offsets_of(&world.nodes[0].delivered, q) {
            *times.entry(offset).or_default() += 1;
        }
        assert_eq!(times.len(), sent.len());
        assert!(times.values().all(|&n| n == 1), "each once: {times:?}");
    }
}
