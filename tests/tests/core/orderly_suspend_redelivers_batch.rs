//! Orderly retry is local: `ConsumeOutcome::Suspend(d)` (Java's
//! `SUSPEND_CURRENT_QUEUE_A_MOMENT` with `suspendCurrentQueueTimeMillis`, clamped to at least
//! 10 ms) and `ReconsumeLater` (the configured `suspend_delay`) hand the very same batch back
//! after the pause, in the same order, with `reconsume_times` raised by one, and nothing later
//! from that queue is delivered meanwhile (`remoting-protocol.md` §7.2, orderly listener).

use std::time::{Duration, Instant};

use consumer_core::{ConsumeMode, ConsumeOutcome, Delivery, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

fn offsets(d: &Delivery) -> Vec<i64> {
    d.messages.iter().map(|m| m.queue_offset()).collect()
}

/// Completes the only held delivery of `queue` with `outcome` now, then runs for `within`.
/// Returns the completion time, and the time and content of the queue's next delivery.
fn complete_and_wait(
    world: &mut World,
    queue: &MessageQueue,
    outcome: ConsumeOutcome,
    within: Duration,
) -> (Instant, Instant, Delivery) {
    let held: Vec<_> = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue == *queue && world.nodes[0].held.contains(&d.id))
        .map(|(_, d)| d.id)
        .collect();
    assert_eq!(held.len(), 1, "one batch of the queue in flight: {held:?}");
    let completed_at = world.now;
    let before = world.nodes[0].delivered.len();
    world.complete_at(0, held[0], outcome, completed_at);
    let mut next = None;
    world.run_until_with(completed_at + within, |w| {
        if next.is_none() {
            next = w.nodes[0].delivered[before..]
                .iter()
                .find(|(_, d)| d.queue == *queue)
                .cloned();
        }
    });
    let (at, d) = next.unwrap_or_else(|| {
        panic!(
            "{queue:?} delivered nothing within {within:?} after {outcome:?}\n{}",
            world.trace_tail(30)
        )
    });
    (completed_at, at, d)
}

#[test]
fn suspend_and_reconsume_later_redeliver_the_same_batch_after_the_pause() {
    let mut config = quiet_config(102, 1);
    config.mode = ConsumeMode::Orderly;
    config.consumer_config = |mut c| {
        c.consume_batch_size = 3;
        c
    };
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    let queue = MessageQueue::new(TOPIC, "broker-a", 1);
    world.produce_to(&queue, 6);
    world.run_until(world.epoch() + Duration::from_secs(2));
    let (_, first) = world.nodes[0]
        .delivered
        .iter()
        .find(|(_, d)| d.queue == queue)
        .cloned()
        .expect("the first batch is delivered");
    assert_eq!(offsets(&first), vec![0, 1, 2]);
    let bodies: Vec<_> = first.messages.iter().map(|m| m.body_bytes()).collect();
    assert!(first.messages.iter().all(|m| m.reconsume_times() == 0));

    let mut expected_times = 0;
    for (outcome, pause) in [
        (
            ConsumeOutcome::Suspend(Duration::from_millis(200)),
            Duration::from_millis(200),
        ),
        // Clamped to Java's minimum of 10 ms.
        (
            ConsumeOutcome::Suspend(Duration::from_millis(1)),
            Duration::from_millis(10),
        ),
        // `suspend_delay`, 1 s by default.
        (ConsumeOutcome::ReconsumeLater, Duration::from_secs(1)),
        // Orderly ignores the broker delay level: nothing consumed, the batch is suspended.
        (
            ConsumeOutcome::Retry {
                consumed: 0,
                delay_level: 5,
            },
            Duration::from_secs(1),
        ),
    ] {
        expected_times += 1;
        let (completed, at, again) =
            complete_and_wait(&mut world, &queue, outcome, Duration::from_secs(5));
        let waited = at - completed;
        assert!(
            waited >= pause && waited <= pause + Duration::from_millis(1),
            "after {outcome:?} the batch came back after {waited:?}, expected {pause:?}"
        );
        assert_eq!(
            offsets(&again),
            vec![0, 1, 2],
            "after {outcome:?}: the same batch, in the same order, nothing later first"
        );
        let again_bodies: Vec<_> = again.messages.iter().map(|m| m.body_bytes()).collect();
        assert_eq!(again_bodies, bodies, "the same messages");
        let times: Vec<i32> = again.messages.iter().map(|m| m.reconsume_times()).collect();
        assert_eq!(
            times,
            vec![expected_times; 3],
            "after {outcome:?}: reconsume_times counts the failed attempts"
        );
    }
    // Nothing else of the queue was ever handed out meanwhile.
    let all: Vec<Vec<i64>> = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue == queue)
        .map(|(_, d)| offsets(d))
        .collect();
    assert_eq!(all, vec![vec![0, 1, 2]; 5]);
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue),
        None,
        "nothing committed past a batch that keeps failing"
    );

    // Success at last: the queue moves on to the next batch, a fresh one.
    let (_, _, next) = complete_and_wait(
        &mut world,
        &queue,
        ConsumeOutcome::Success,
        Duration::from_secs(1),
    );
    assert_eq!(offsets(&next), vec![3, 4, 5]);
    assert!(next.messages.iter().all(|m| m.reconsume_times() == 0));
    let id = next.id;
    world.complete_at(0, id, ConsumeOutcome::Success, world.now);
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(6));
    assert_eq!(
        world.nodes[0].consumer.stats().sent_back,
        0,
        "orderly retries never go to the broker"
    );
}
