//! A hand-over's `handover_timeout` counts from the broker's first answer to the newcomer's lock
//! request, not from the assignment, and only an answer saying the broker will never lock
//! starts the queue at once. A broker that stalls (a long GC pause under load) answers neither
//! the newcomer nor the old owner; had the stall counted, the newcomer would start without
//! the lock and read the offset before the old owner's commit, delayed by the same stall,
//! landed, and consume the old owner's messages again. A busy broker's error answer is a
//! reason to ask again, not to start.

use std::time::Duration;

use consumer_core::{ConsumerConfig, MessageQueue};
use proto::{RequestCode, ResponseCode};
use rocketmq_tests::scenario::{
    busy_owner_of_a_moving_queue, finish_then_produce_two, offsets_of, queue_stats, quiet_config,
};
use rocketmq_tests::sim::Fault;
use rocketmq_tests::world::World;

/// Hand-overs on, and revokes that wait long enough for the old owner's slow handlers.
fn patient(mut c: ConsumerConfig) -> ConsumerConfig {
    c.handover_timeout = Duration::from_secs(6);
    c.revoke_drain_timeout = Duration::from_secs(20);
    c
}

/// Node 0 owns every queue and runs three deliveries of `queue` when a newcomer joins;
/// `meanwhile` acts on the world at the join; node 0's handlers finish `busy` later.
/// Returns the world, the newcomer and the queue.
fn join_while_busy(busy: Duration, meanwhile: fn(&mut World)) -> (World, usize, MessageQueue) {
    let mut config = quiet_config(108, 1);
    config.consumer_config = patient;
    let (mut world, queue) = busy_owner_of_a_moving_queue(config);
    let joined = world.now;
    let newcomer = world.add_consumer();
    meanwhile(&mut world);
    world.run_until(joined + busy);
    finish_then_produce_two(&mut world, &queue);
    (world, newcomer, queue)
}

/// Asserts the newcomer took `queue` over from node 0 without a timeout and nothing twice.
fn assert_handed_over_quietly(world: &World, newcomer: usize, queue: &MessageQueue) {
    assert_eq!(
        offsets_of(&world.nodes[newcomer].delivered, queue),
        vec![3, 4],
        "the newcomer starts after what node 0 consumed\n{}",
        world.trace_tail(40)
    );
    assert_eq!(world.duplicates(), (0, 0), "nothing consumed twice");
    // Its other queues may have waited out the timeout: node 0's unlocks of them, sent while
    // the broker was stalled, are lost, and the broker keeps those locks.
    let stats = queue_stats(world, newcomer, queue);
    assert_eq!(stats.handovers, 1, "the newcomer waited for node 0");
    assert_eq!(stats.handover_timeouts, 0, "and did not give up");
}

#[test]
fn a_stalled_broker_does_not_use_up_the_wait() {
    // broker-b (the queue's broker) answers nothing for 8 s from the join, longer than
    // `handover_timeout`; node 0 finishes 2 s after it wakes.
    let (world, newcomer, queue) = join_while_busy(Duration::from_secs(10), |world| {
        world.cluster.set_broker_silent("broker-b", true);
        world.run_until(world.now + Duration::from_secs(8));
        world.cluster.set_broker_silent("broker-b", false);
    });
    assert_handed_over_quietly(&world, newcomer, &queue);
}

#[test]
fn an_error_answer_is_asked_again() {
    // The newcomer's first lock requests (one per queue of broker-b it gets) are answered
    // with `SYSTEM_ERROR`.
    let (world, newcomer, queue) = join_while_busy(Duration::from_secs(2), |world| {
        world.cluster.inject(Fault::RespondWith {
            broker: "broker-b".into(),
            request: RequestCode::LOCK_BATCH_MQ,
            response: ResponseCode::SYSTEM_ERROR,
            count: 3,
        });
    });
    assert_handed_over_quietly(&world, newcomer, &queue);
}
