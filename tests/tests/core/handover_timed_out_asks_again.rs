//! A newcomer that waited out `handover_timeout` starts the queue without its broker lock
//! (the old owner is presumed gone) and then asks for the lock every `lock_retry` until it
//! holds it. Without it, the queue would stay unlocked until the 20 s renewal, and if the
//! group changed again meanwhile its next owner would find the lock free and read the offset
//! before this member's last commit landed.

use std::time::Duration;

use consumer_core::ConsumerConfig;
use rocketmq_tests::scenario::{
    GROUP, busy_owner_of_a_moving_queue, offsets_of, queue_stats, quiet_config,
};

/// How long node 0's handlers of the moved queue run after the newcomer joined: longer than
/// the newcomer waits.
const BUSY_AFTER_JOIN: Duration = Duration::from_secs(10);

fn patient(mut c: ConsumerConfig) -> ConsumerConfig {
    c.handover_timeout = Duration::from_secs(6);
    c.revoke_drain_timeout = Duration::from_secs(20);
    c
}

#[test]
fn the_newcomer_takes_the_lock_once_the_old_owner_lets_go() {
    let mut config = quiet_config(109, 1);
    config.consumer_config = patient;
    let (mut world, queue) = busy_owner_of_a_moving_queue(config);
    let joined = world.now;
    let newcomer = world.add_consumer();
    world.run_until(joined + BUSY_AFTER_JOIN);
    assert_eq!(
        offsets_of(&world.nodes[newcomer].delivered, &queue),
        vec![0, 1, 2],
        "the newcomer gave up waiting and consumes from the broker's offset (at least once)"
    );
    let stats = queue_stats(&world, newcomer, &queue);
    assert_eq!((stats.handovers, stats.handover_timeouts), (1, 1));

    // Node 0 finishes, commits and lets the lock go; the newcomer takes it at its next try,
    // within `lock_retry` (3 s), long before the 20 s renewal.
    let released = world.now;
    world.release_held(0, released);
    let id = world.nodes[newcomer].consumer.client_id().to_owned();
    let mut locked_at = None;
    world.run_until_with(released + Duration::from_secs(5), |w| {
        if locked_at.is_none() && w.cluster.lock_owner(GROUP, &queue, w.now).as_deref() == Some(&id)
        {
            locked_at = Some(w.now);
        }
    });
    let Some(locked_at) = locked_at else {
        panic!("the newcomer never took the lock\n{}", world.trace_tail(40));
    };
    assert!(
        locked_at - released <= Duration::from_millis(3200),
        "taken at the next try: {:?} after node 0 finished",
        locked_at - released
    );
}
