//! Handing an orderly queue over when the broker applies the commit late: Apache's brokers run
//! `UPDATE_CONSUMER_OFFSET` on the consume-manage thread pool and `UNLOCK_BATCH_MQ` and
//! `LOCK_BATCH_MQ` on the admin pool, so an unlock sent behind a commit can take effect first,
//! and the next owner can lock the queue and read the offset before the commit lands. Seen on
//! Apache RocketMQ 5.5 in CI: the newcomer started a queue at offset 0 after the old owner had
//! consumed 26. The old owner must unlock only once the broker answered the commit, so the
//! newcomer starts right after the last consumed message however late the commit lands.

use std::time::{Duration, Instant};

use consumer_core::{ConsumeMode, ConsumeOutcome};
use rocketmq_tests::scenario::{GROUP, busy_owner_of_a_moving_queue, offsets_of, quiet_config};

/// Long enough that the newcomer's next lock attempt (every 3 s after its first was refused)
/// comes while the commit still waits in the broker; shorter than a request's timeout (3 s).
const COMMIT_LAG: Duration = Duration::from_millis(2500);

#[test]
fn the_newcomer_starts_after_a_commit_the_broker_applied_late() {
    let mut config = quiet_config(106, 1);
    config.mode = ConsumeMode::Orderly;
    config.commit_lag = COMMIT_LAG;
    let (mut world, queue) = busy_owner_of_a_moving_queue(config);
    let held = world.nodes[0].held.clone();
    assert_eq!(held.len(), 1, "one batch of the queue in flight");

    let joined_at = world.now;
    let newcomer = world.add_consumer();
    let old = world.nodes[0].consumer.client_id().to_owned();
    world.run_until(joined_at + Duration::from_secs(1));

    // Node 0's handler finishes: it commits offset 1, which the broker applies 4 s later.
    let finished = world.now;
    world.complete_at(0, held[0], ConsumeOutcome::Success, finished);
    let mut committed_at: Option<Instant> = None;
    let mut unlocked_at: Option<Instant> = None;
    world.run_until_with(finished + Duration::from_secs(15), |w| {
        if committed_at.is_none() && w.cluster.committed_offset(GROUP, &queue) == Some(1) {
            committed_at = Some(w.now);
        }
        let owner = w.cluster.lock_owner(GROUP, &queue, w.now);
        if unlocked_at.is_none() && owner.as_deref() != Some(old.as_str()) {
            unlocked_at = Some(w.now);
            assert!(
                committed_at.is_some(),
                "the lock is released only once the commit took effect (owner now {owner:?})"
            );
        }
    });
    let (Some(committed_at), Some(unlocked_at)) = (committed_at, unlocked_at) else {
        panic!(
            "node 0 never committed or never released the lock\n{}",
            world.trace_tail(40)
        );
    };
    assert!(
        unlocked_at - committed_at < Duration::from_millis(100),
        "released as soon as the commit was answered, not at the lock's expiry: {:?} later",
        unlocked_at - committed_at
    );
    let taken = offsets_of(&world.nodes[newcomer].delivered, &queue);
    assert_eq!(
        taken,
        vec![1, 2],
        "the newcomer starts after the committed offset\n{}",
        world.trace_tail(40)
    );
}
