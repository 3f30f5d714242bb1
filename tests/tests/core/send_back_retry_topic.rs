//! Concurrent clustering retries go through the broker: a failed message is sent back with
//! `CONSUMER_SEND_MSG_BACK` (`remoting-protocol.md` §3.10, §7.2), comes back from
//! `%RETRY%<group>` after the broker's delay with `reconsume_times` 1 and its original topic
//! restored, and the original queue's committed offset passes it only once the broker confirmed
//! the send-back. `Retry { consumed: k }` (Java's `ackIndex = k - 1`) acknowledges the first k
//! messages of a batch and sends back only the rest.

use std::time::Duration;

use consumer_core::{ConsumeOutcome, MessageQueue};
use rocketmq_tests::scenario::{GROUP, RETRY, TOPIC, messages_of, quiet_config, stored_messages};
use rocketmq_tests::world::{World, WorldConfig};

/// One consumer holding its deliveries, its configuration changed by `adjust`.
fn world(seed: u64, adjust: fn(&mut WorldConfig)) -> World {
    let mut config = quiet_config(seed, 1);
    adjust(&mut config);
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    world
}

#[test]
fn a_failed_message_comes_back_from_the_retry_topic_and_is_committed_past_once_safe() {
    // Slow links (a 400-600 ms round trip) and a commit every 100 ms: the offset would have
    // many chances to pass the failed message before the broker confirms the send-back.
    let mut world = world(106, |c| {
        c.latency = (Duration::from_millis(200), Duration::from_millis(300));
        c.consumer_config = |mut c| {
            c.persist_interval = Duration::from_millis(100);
            c
        };
    });
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(10));
    let produced = world.produce_to(&queue, 2);
    assert_eq!(produced, vec![0, 1]);
    world.run_until(world.now + Duration::from_secs(2));
    let held: Vec<_> = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue == queue)
        .map(|(_, d)| (d.id, d.messages[0].clone()))
        .collect();
    assert_eq!(held.len(), 2, "both delivered at once (concurrent)");
    let failed = held[0].1.clone();
    assert_eq!(failed.queue_offset(), 0);

    let completed = world.now;
    world.complete_at(0, held[0].0, ConsumeOutcome::ReconsumeLater, completed);
    world.complete_at(0, held[1].0, ConsumeOutcome::Success, completed);
    let mut confirmed_at = None;
    world.run_until_with(completed + Duration::from_secs(5), |w| {
        let confirmed = w.nodes[0].consumer.stats().sent_back >= 1;
        if confirmed && confirmed_at.is_none() {
            confirmed_at = Some(w.now);
        }
        let committed = w.cluster.committed_offset(GROUP, &queue);
        assert!(
            committed.is_none() || confirmed,
            "committed {committed:?} before the broker confirmed the send-back of offset 0"
        );
        assert!(committed.is_none_or(|c| c == 2), "committed {committed:?}");
    });
    let confirmed_at = confirmed_at.expect("the broker confirmed the send-back");
    assert!(
        confirmed_at - completed >= Duration::from_millis(400),
        "the send-back took a round trip: {:?}",
        confirmed_at - completed
    );
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue),
        Some(2),
        "committed past the failed message once it was safe in the retry topic"
    );

    // Delay level 3 (10 s, the broker's choice for a first failure), then the retry topic.
    world.run_until(completed + Duration::from_secs(15));
    let again: Vec<_> = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue.topic() == RETRY)
        .flat_map(|(_, d)| d.messages.clone())
        .collect();
    assert_eq!(
        again.len(),
        1,
        "the failed message is delivered again from the retry topic\n{}",
        world.trace_tail(30)
    );
    let again = &again[0];
    assert_eq!(again.topic(), TOPIC, "the original topic restored");
    assert_eq!(again.body(), failed.body());
    assert_eq!(again.reconsume_times(), 1);
    assert_eq!(again.msg_id(), failed.msg_id(), "the same message id");
    assert_eq!(
        world.nodes[0]
            .delivered
            .iter()
            .filter(|(_, d)| d.queue == queue)
            .count(),
        2,
        "not redelivered from the original queue"
    );
}

#[test]
fn retry_with_consumed_k_acknowledges_the_first_k_and_sends_back_the_rest() {
    let mut world = world(107, |c| {
        c.consumer_config = |mut c| {
            c.consume_batch_size = 4;
            c
        };
    });
    let queue = MessageQueue::new(TOPIC, "broker-b", 1);
    world.produce_to(&queue, 4);
    world.run_until(world.epoch() + Duration::from_secs(2));
    let batches: Vec<_> = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue == queue)
        .map(|(_, d)| d.clone())
        .collect();
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    let offsets: Vec<i64> = batch.messages.iter().map(|m| m.queue_offset()).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3]);
    let outcome = ConsumeOutcome::Retry {
        consumed: 2,
        delay_level: 1,
    };
    world.complete_at(0, batch.id, outcome, world.now);
    world.run_until(world.now + Duration::from_millis(500));
    assert_eq!(
        world.acknowledged(&queue).into_iter().collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(
        world.nodes[0].consumer.stats().sent_back,
        2,
        "only the last two were sent back"
    );

    // Delay level 1 is 1 s.
    world.run_until(world.now + Duration::from_secs(3));
    let retry = MessageQueue::new(RETRY, "broker-b", 0);
    let stored: Vec<_> = stored_messages(&world, &retry)
        .into_iter()
        .map(|m| m.body)
        .collect();
    let expected: Vec<_> = batch.messages[2..].iter().map(|m| m.body_bytes()).collect();
    assert_eq!(
        stored, expected,
        "the retry topic holds exactly offsets 2 and 3"
    );
    let again = messages_of(&world.nodes[0].delivered, &retry);
    let bodies: Vec<_> = again.iter().map(|m| m.body_bytes()).collect();
    assert_eq!(bodies, expected, "redelivered from the retry topic");
    assert!(
        again
            .iter()
            .all(|m| m.reconsume_times() == 1 && m.topic() == TOPIC)
    );
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(4));
}
