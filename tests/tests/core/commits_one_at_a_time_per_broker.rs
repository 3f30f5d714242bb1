//! Confirmed commits (`Consumer::commit`, and the final commit at shutdown) go to each broker
//! one at a time: the next `UPDATE_CONSUMER_OFFSET` to a broker leaves only once the one before
//! it was answered. Apache 4.9's `ConsumerOffsetManager.commitOffset` builds a group's per-topic
//! offset map with a get-then-put, so first commits of one topic handled at once by two broker
//! threads can lose one queue's offset; seen with a lite pull consumer's four pipelined commits.
//! Here with four queues per broker and 50-60 ms links, the commit's answer (`CommitDone`)
//! comes four round trips after it was asked, and every queue is committed.

use std::time::Duration;

use consumer_core::{ConsumeMode, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, commit_done, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn commits_to_one_broker_wait_for_each_other() {
    let mut config = quiet_config(121, 1);
    config.mode = ConsumeMode::Poll;
    config.queues_per_broker = 4;
    config.latency = (Duration::from_millis(50), Duration::from_millis(60));
    config.consumer_config = |mut c| {
        c.auto_commit = false;
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(2));
    let queues: Vec<MessageQueue> = (0..4)
        .map(|id| MessageQueue::new(TOPIC, "broker-a", id))
        .collect();
    for queue in &queues {
        world.produce_to(queue, 3);
    }
    world.run_until(world.now + Duration::from_millis(500));
    while world.poll(0, 32).is_some() {}

    let asked = world.now;
    let id = world.nodes[0].consumer.commit(asked);
    world.run_until(asked + Duration::from_secs(2));
    let (at, committed, unconfirmed) = commit_done(&world, 0, id);
    for queue in &queues {
        assert!(
            committed.contains(&(queue.clone(), 3)),
            "{queue:?} confirmed: {committed:?}"
        );
    }
    assert!(unconfirmed.is_empty(), "{unconfirmed:?}");
    // Four commits to broker-a one after the other take four round trips (each at least
    // 100 ms); sent together they would all be answered after one.
    assert!(
        at - asked >= Duration::from_millis(400),
        "each commit waited for the answer before it: answered after {:?}",
        at - asked
    );
    for queue in &queues {
        assert_eq!(
            world.cluster.committed_offset(GROUP, queue),
            Some(3),
            "{queue:?}"
        );
    }
}
