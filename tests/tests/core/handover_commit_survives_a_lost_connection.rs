//! A hand-over whose commit meets a lost connection (`consumer::commit_retry`): the old owner's
//! connection to the queue's broker drops just before its last deliveries of the queue finish,
//! so its commit fails at once (the address is in its reconnect backoff). The commit goes once
//! more when the broker takes requests again, and the broker lock, which the newcomer waits
//! for, goes only after it: the newcomer starts at that commit and nothing is consumed twice.
//! Before, the lock went with the failed commit and the newcomer consumed the three messages
//! again from the broker's older offset.

use std::time::Duration;

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{
    GROUP, busy_owner_of_a_moving_queue, events_where, finish_then_produce_two, offsets_of,
    quiet_config,
};
use rocketmq_tests::world::World;

fn drop_before_the_hand_over_commit() -> (World, usize, MessageQueue) {
    let mut config = quiet_config(109, 1);
    config.consumer_config = |mut c| {
        c.handover_timeout = Duration::from_secs(6);
        c
    };
    let (mut world, queue) = busy_owner_of_a_moving_queue(config);
    assert_eq!(offsets_of(&world.nodes[0].delivered, &queue), vec![0, 1, 2]);
    let newcomer = world.add_consumer();
    world.run_until(world.now + Duration::from_secs(2));
    let addr = world.cluster.broker_addr(queue.broker_name());
    assert!(
        world.drop_connection(0, &addr),
        "node 0 is connected to {addr}"
    );
    world.run_until(world.now + Duration::from_millis(100));
    finish_then_produce_two(&mut world, &queue);
    (world, newcomer, queue)
}

#[test]
fn the_hand_over_commit_goes_again_before_the_lock() {
    let (world, newcomer, queue) = drop_before_the_hand_over_commit();
    let failed_commits = events_where(&world, 0, |e| {
        matches!(
            e,
            Event::RequestFailed {
                request: "UPDATE_CONSUMER_OFFSET",
                ..
            }
        )
    })
    .len();
    assert_eq!(failed_commits, 1, "the first try failed, the retry did not");
    assert_eq!(
        offsets_of(&world.nodes[newcomer].delivered, &queue),
        vec![3, 4],
        "the newcomer starts after what node 0 consumed\n{}",
        world.trace_tail(40)
    );
    assert_eq!(world.duplicates(), (0, 0), "nothing consumed twice");
    assert_eq!(world.nodes[newcomer].consumer.stats().handover_timeouts, 0);
    assert!(
        world
            .cluster
            .committed_offset(GROUP, &queue)
            .is_some_and(|o| o >= 3)
    );
}
