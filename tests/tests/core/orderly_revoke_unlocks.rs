//! Handing an orderly queue over: when a second member joins, the first lets its in-flight
//! batch finish, commits the queue's offset, and only then unlocks it (`UNLOCK_BATCH_MQ`,
//! Java's `RebalancePushImpl.removeUnnecessaryMessageQueue`, `remoting-protocol.md` §7.10), so
//! the newcomer, which delivers nothing before the broker grants it the lock, starts right
//! after the last consumed message: no message is consumed twice or by two members at once.

use std::time::{Duration, Instant};

use consumer_core::{ConsumeMode, ConsumeOutcome, Event};
use rocketmq_tests::scenario::{GROUP, busy_owner_of_a_moving_queue, offsets_of, quiet_config};

#[test]
fn the_old_owner_finishes_commits_and_unlocks_before_the_newcomer_delivers() {
    let mut config = quiet_config(105, 1);
    config.mode = ConsumeMode::Orderly;
    let (mut world, queue) = busy_owner_of_a_moving_queue(config);
    let old = world.nodes[0].consumer.client_id().to_owned();
    assert_eq!(
        world.cluster.lock_owner(GROUP, &queue, world.now),
        Some(old.clone())
    );
    let held = world.nodes[0].held.clone();
    assert_eq!(held.len(), 1, "one batch of the queue in flight");

    let joined_at = world.now;
    let newcomer = world.add_consumer();
    world.nodes[newcomer].hold = true;
    let new = world.nodes[newcomer].consumer.client_id().to_owned();
    world.run_until_with(joined_at + Duration::from_secs(1), |w| {
        assert_eq!(
            w.cluster.lock_owner(GROUP, &queue, w.now),
            Some(old.clone()),
            "node 0 keeps the lock while its batch runs"
        );
        assert!(
            w.nodes[newcomer]
                .delivered
                .iter()
                .all(|(_, d)| d.queue != queue),
            "the newcomer delivers nothing of the queue without its lock"
        );
    });
    assert!(
        world.nodes[newcomer]
            .consumer
            .assignment()
            .any(|q| q == queue),
        "the newcomer was assigned the queue"
    );
    assert!(
        world.nodes[0]
            .events
            .iter()
            .all(|(_, e)| *e != Event::Revoked(vec![queue.clone()])),
        "node 0 waits for its batch before giving the queue up"
    );

    // Node 0's handler finishes: commit, then unlock, then the newcomer's next lock attempt.
    let finished = world.now;
    world.complete_at(0, held[0], ConsumeOutcome::Success, finished);
    let mut unlocked_at: Option<Instant> = None;
    let mut new_locked_at: Option<Instant> = None;
    world.run_until_with(finished + Duration::from_secs(8), |w| {
        let owner = w.cluster.lock_owner(GROUP, &queue, w.now);
        if unlocked_at.is_none() && owner.as_deref() != Some(old.as_str()) {
            unlocked_at = Some(w.now);
            assert_eq!(
                w.cluster.committed_offset(GROUP, &queue),
                Some(1),
                "the offset is committed before the lock is released (owner now {owner:?})"
            );
        }
        if new_locked_at.is_none() && owner.as_deref() == Some(new.as_str()) {
            new_locked_at = Some(w.now);
        }
        for (at, d) in &w.nodes[newcomer].delivered {
            if d.queue == queue {
                assert!(
                    new_locked_at.is_some_and(|l| l <= *at),
                    "the newcomer delivered {queue:?} before it held the lock"
                );
            }
        }
    });
    let unlocked_at = unlocked_at
        .unwrap_or_else(|| panic!("node 0 never released the lock\n{}", world.trace_tail(40)));
    assert!(
        unlocked_at - finished < Duration::from_millis(100),
        "released right after the batch finished, not at a deadline: {:?}",
        unlocked_at - finished
    );
    let revoked = world.nodes[0]
        .events
        .iter()
        .any(|(_, e)| *e == Event::Revoked(vec![queue.clone()]));
    assert!(revoked, "node 0 reports the revoke");
    assert_eq!(
        world.nodes[0].consumer.stats().stale_completions,
        0,
        "the batch finished in time: applied"
    );
    assert!(
        new_locked_at.is_some(),
        "the newcomer gets the lock\n{}",
        world.trace_tail(40)
    );
    let taken = offsets_of(&world.nodes[newcomer].delivered, &queue);
    assert_eq!(
        taken,
        vec![1],
        "the newcomer starts after the committed offset, one batch at a time"
    );

    world.nodes[newcomer].hold = false;
    world.release_held(newcomer, world.now);
    world.run_until(world.now + Duration::from_secs(8));
    let taken = offsets_of(&world.nodes[newcomer].delivered, &queue);
    assert_eq!(taken, vec![1, 2]);
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(3));
}
