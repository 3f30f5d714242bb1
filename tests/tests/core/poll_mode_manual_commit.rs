//! Poll mode with `auto_commit` off: taking messages commits nothing, neither on the persist
//! timer nor piggy-backed on pulls; `commit` stores every started queue's position with
//! `UPDATE_CONSUMER_OFFSET` and answers `Event::CommitDone` only with the brokers' confirmations
//! (Java's `DefaultLitePullConsumer.commitSync`), so the application knows what is durable.

use std::time::Duration;

use consumer_core::{ConsumeMode, Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, commit_done, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn commit_stores_the_taken_position_and_reports_the_confirmation() {
    let mut config = quiet_config(118, 1);
    config.mode = ConsumeMode::Poll;
    // Slow links: a confirmation takes a visible round trip.
    config.latency = (Duration::from_millis(50), Duration::from_millis(60));
    config.consumer_config = |mut c| {
        c.auto_commit = false;
        c
    };
    let mut world = World::new(config);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 0);
    world.run_until(world.epoch() + Duration::from_secs(2));
    world.produce_to(&a, 5);
    world.run_until(world.now + Duration::from_millis(500));
    let mut taken = Vec::new();
    while let Some(polled) = world.poll(0, 32) {
        taken.extend(polled.messages.iter().map(|m| m.queue_offset()));
    }
    assert_eq!(taken, vec![0, 1, 2, 3, 4]);
    // More messages keep pulls going (a pull could carry a commit), and persist rounds pass.
    world.produce_to(&a, 1);
    world.run_until(world.now + Duration::from_secs(11));
    assert_eq!(
        world.cluster.committed_offset(GROUP, &a),
        None,
        "nothing is committed without commit()"
    );
    assert!(
        world.nodes[0]
            .events
            .iter()
            .all(|(_, e)| !matches!(e, Event::CommitDone { .. }))
    );

    let asked = world.now;
    let id = world.nodes[0].consumer.commit(asked);
    world.run_until(asked + Duration::from_millis(500));
    assert_eq!(
        world.cluster.committed_offset(GROUP, &a),
        Some(5),
        "the position taken (offset 5 is cached, not taken)"
    );
    assert_eq!(world.cluster.committed_offset(GROUP, &b), Some(0));
    let (at, committed, unconfirmed) = commit_done(&world, 0, id);
    assert!(committed.contains(&(a.clone(), 5)), "{committed:?}");
    assert!(
        at - asked >= Duration::from_millis(100),
        "reported on the brokers' confirmations, a round trip later: {:?}",
        at - asked
    );
    assert_eq!(
        committed.len(),
        4,
        "every started queue confirmed once: {committed:?}"
    );
    assert!(unconfirmed.is_empty(), "{unconfirmed:?}");

    // The rest is committed only at the next commit.
    assert!(world.poll(0, 32).is_some());
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &a), Some(5));
    let now = world.now;
    world.nodes[0].consumer.commit(now);
    world.run_until(now + Duration::from_millis(500));
    assert_eq!(world.cluster.committed_offset(GROUP, &a), Some(6));
}
