//! A quiet hand-over between live members of a concurrent group (`consumer::handover`): a queue
//! a rebalance moves while its old owner still has deliveries of it running is not read by the
//! newcomer until the old owner has finished them, committed the queue, had the commit answered
//! and released the queue's broker lock; the newcomer then starts at that commit, so nothing is
//! consumed twice. Without the hand-over (`handover_timeout` zero: Java's behaviour), the
//! newcomer starts from the broker's older offset at once and consumes the same messages again.

use std::time::Duration;

use consumer_core::{ConsumerConfig, MessageQueue};
use rocketmq_tests::scenario::{
    GROUP, busy_owner_of_a_moving_queue, finish_then_produce_two, offsets_of, quiet_config,
};
use rocketmq_tests::world::World;

/// Hand-overs on, as a user turns them on.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(6);

/// How long node 0's handlers of the moved queue run after the newcomer joined.
const BUSY_AFTER_JOIN: Duration = Duration::from_secs(2);

/// Node 0 owns every queue and holds three deliveries of `queue` in flight when the newcomer
/// joins; they finish `BUSY_AFTER_JOIN` later. Returns the world, the newcomer and the queue.
fn join_while_busy(
    configure: fn(ConsumerConfig) -> ConsumerConfig,
) -> (World, usize, MessageQueue) {
    let mut config = quiet_config(107, 1);
    config.consumer_config = configure;
    let (mut world, queue) = busy_owner_of_a_moving_queue(config);
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &queue),
        vec![0, 1, 2],
        "node 0 runs the queue's three messages"
    );
    let joined = world.now;
    let newcomer = world.add_consumer();
    world.run_until(joined + BUSY_AFTER_JOIN);
    finish_then_produce_two(&mut world, &queue);
    (world, newcomer, queue)
}

#[test]
fn the_newcomer_starts_where_the_old_owner_committed() {
    let (world, newcomer, queue) = join_while_busy(|mut c| {
        c.handover_timeout = HANDOVER_TIMEOUT;
        c
    });
    assert!(
        world.nodes[newcomer]
            .consumer
            .assignment()
            .any(|q| q == queue),
        "the newcomer owns the queue"
    );
    assert_eq!(
        offsets_of(&world.nodes[newcomer].delivered, &queue),
        vec![3, 4],
        "the newcomer starts after what node 0 consumed\n{}",
        world.trace_tail(40)
    );
    assert_eq!(world.duplicates(), (0, 0), "nothing consumed twice");
    assert_eq!(
        world
            .cluster
            .committed_offset(GROUP, &queue)
            .map(|o| o >= 3),
        Some(true)
    );
    let stats = world.nodes[newcomer].consumer.stats();
    assert!(stats.handovers >= 1, "the wait is counted as a hand-over");
    assert_eq!(
        stats.handover_timeouts, 0,
        "node 0 released the queue in time"
    );
    let waited = stats.handover_wait.max;
    assert!(
        waited >= BUSY_AFTER_JOIN - Duration::from_millis(100)
            && waited < BUSY_AFTER_JOIN + Duration::from_millis(300),
        "the queue stood still while node 0 finished, and no longer: {waited:?}"
    );
}

#[test]
fn without_the_hand_over_the_newcomer_consumes_them_again() {
    let (world, newcomer, queue) = join_while_busy(|mut c| {
        c.handover_timeout = Duration::ZERO;
        c
    });
    assert_eq!(
        offsets_of(&world.nodes[newcomer].delivered, &queue),
        vec![0, 1, 2, 3, 4],
        "the newcomer starts from the broker's offset while node 0 still runs them"
    );
    assert_eq!(world.duplicates().0, 3);
    assert_eq!(world.nodes[newcomer].consumer.stats().handovers, 0);
}
