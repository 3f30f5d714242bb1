//! Without faults, two consumers in one group consume every message exactly as produced and
//! end with the queues split between them; shutdown commits what they consumed.

use rocketmq_tests::world::{World, WorldConfig};

#[test]
fn quiet_group_consumes_everything_and_splits_queues() {
    let mut config = WorldConfig::new(7);
    config.faults = false;
    config.reconsume_percent = 0;
    config.messages = 200;
    let mut world = World::new(config);
    world.run();
    assert_eq!(world.produced(), 200);
    assert!(world.deliveries() >= 200);
    let owned: Vec<usize> = world
        .nodes
        .iter()
        .map(|n| n.consumer.assignment().count())
        .collect();
    assert_eq!(
        owned.iter().sum::<usize>(),
        4 + 2,
        "4 topic queues and 2 retry queues: {owned:?}"
    );
    world.shutdown_all();
    for node in &world.nodes {
        let report = node.report.as_ref().expect("closed with a report");
        assert!(report.uncommitted.is_empty(), "{report:?}");
        assert!(!report.committed.is_empty(), "{report:?}");
    }
}
