//! A concurrent delivery still running after `consume_timeout` is given up on: its message is
//! sent back to the broker with delay level 3 (Java's `ProcessQueue.cleanExpiredMsg`,
//! `remoting-protocol.md` §7.2), counted in `stats().expired_deliveries`, and the handler's
//! completion, when it finally comes, is stale and not applied; the message comes back from the
//! retry topic, so a stuck handler cannot block the queue's offset forever.

use std::time::Duration;

use consumer_core::{ConsumeOutcome, MessageQueue};
use rocketmq_tests::scenario::{GROUP, RETRY, TOPIC, messages_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_delivery_past_consume_timeout_is_sent_back_and_its_completion_is_stale() {
    let mut config = quiet_config(110, 1);
    config.consumer_config = |mut c| {
        c.consume_timeout = Duration::from_secs(2);
        c
    };
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    let queue = MessageQueue::new(TOPIC, "broker-b", 1);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue, 2);
    world.run_until(world.now + Duration::from_millis(200));
    let delivered: Vec<_> = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue == queue)
        .cloned()
        .collect();
    assert_eq!(delivered.len(), 2);
    let (started, stuck) = delivered[0].clone();
    let (_, quick) = delivered[1].clone();
    assert_eq!(stuck.messages[0].queue_offset(), 0);
    // Offset 1 is consumed at once; offset 0's handler is stuck.
    world.complete_at(0, quick.id, ConsumeOutcome::Success, world.now);

    world.run_until(started + Duration::from_millis(1900));
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(stats.expired_deliveries, 0, "not expired before 2 s");
    assert!(world.nodes[0].consumer.is_current(stuck.id, world.now));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), None);

    // The scan runs every consume_timeout / 15 (at least 100 ms), so it expires by ~2.14 s.
    world.run_until(started + Duration::from_millis(2300));
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(stats.expired_deliveries, 1, "{stats:?}");
    assert_eq!(stats.in_flight_deliveries, 0);
    assert_eq!(
        stats.sent_back,
        1,
        "sent back and confirmed\n{}",
        world.trace_tail(20)
    );
    assert!(
        !world.nodes[0].consumer.is_current(stuck.id, world.now),
        "the expired delivery no longer counts"
    );

    // The stuck handler finishes: too late, dropped.
    world.complete_at(0, stuck.id, ConsumeOutcome::Success, world.now);
    world.run_until(world.now + Duration::from_secs(6));
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(stats.stale_completions, 1, "{stats:?}");
    assert_eq!(stats.sent_back, 1, "the late completion sent nothing more");
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue),
        Some(2),
        "committed past the message once its retry copy was safe"
    );

    // Delay level 3 (10 s) after the send-back, the message is back from the retry topic.
    world.run_until(started + Duration::from_secs(14));
    let retry = MessageQueue::new(RETRY, "broker-b", 0);
    let again = messages_of(&world.nodes[0].delivered, &retry);
    assert_eq!(
        again.len(),
        1,
        "the expired message is delivered again\n{}",
        world.trace_tail(30)
    );
    assert_eq!(again[0].body(), stuck.messages[0].body());
    assert_eq!(again[0].reconsume_times(), 1);
    assert_eq!(again[0].topic(), TOPIC);
}
