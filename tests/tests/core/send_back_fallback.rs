//! When the broker refuses `CONSUMER_SEND_MSG_BACK`, the consumer sends the failed message
//! itself to `%RETRY%<group>` (`SEND_MESSAGE_V2`), marked as Java's
//! `sendMessageBackAsNormalMessage` marks it (`RETRY_TOPIC`, `ORIGIN_MESSAGE_ID`,
//! `RECONSUME_TIME`, `MAX_RECONSUME_TIMES`; `remoting-protocol.md` §7.2); if that is refused
//! too, it reports `Event::SendBackFailed` and delivers the message again locally after
//! `send_back_retry_delay` (5 s), keeping it cached so the offset cannot pass it.
//!
//! The fallback is Java's, for a consumer without hand-over locks (`handover_timeout` zero,
//! the default):
//! a broker dead-letters a plain send to the retry topic of a group that holds queue locks
//! (`SendMessageProcessor.handleRetryAndDLQ`), so a consumer that hands queues over under
//! the lock skips it and redelivers the message locally.

use std::time::Duration;

use consumer_core::{ConsumeOutcome, DeliveryId, Event, FailureReason, MessageQueue};
use proto::message::{Message, property};
use proto::{RequestCode, ResponseCode};
use rocketmq_tests::scenario::{
    GROUP, RETRY, TOPIC, messages_of, quiet_config, refuse_once, stored_messages,
};
use rocketmq_tests::world::World;

/// One consumer holding its deliveries, one message in `queue`, delivered and held; returns
/// the world, the held delivery and its message.
fn one_failed_delivery(seed: u64, queue: &MessageQueue) -> (World, DeliveryId, Message) {
    let mut config = quiet_config(seed, 1);
    config.consumer_config = |mut c| {
        c.handover_timeout = Duration::ZERO;
        c
    };
    one_failed_delivery_in(config, queue)
}

/// [`one_failed_delivery`] in a world of `config`.
fn one_failed_delivery_in(
    config: rocketmq_tests::world::WorldConfig,
    queue: &MessageQueue,
) -> (World, DeliveryId, Message) {
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(queue, 1);
    world.run_until(world.now + Duration::from_millis(500));
    assert_eq!(world.nodes[0].held.len(), 1);
    let (id, original) = world.nodes[0]
        .delivered
        .iter()
        .find(|(_, d)| d.queue == *queue)
        .map(|(_, d)| (d.id, d.messages[0].clone()))
        .expect("delivered");
    (world, id, original)
}

fn refusals(world: &World, request: &str) -> usize {
    world.nodes[0]
        .events
        .iter()
        .filter(|(_, e)| {
            matches!(e, Event::RequestFailed { request: r, reason: FailureReason::Refused(ResponseCode::SYSTEM_ERROR, _), .. } if *r == request)
        })
        .count()
}

#[test]
fn a_refused_send_back_is_sent_to_the_retry_topic_as_a_normal_message() {
    let queue = MessageQueue::new(TOPIC, "broker-a", 1);
    let (mut world, id, original) = one_failed_delivery(108, &queue);
    refuse_once(&mut world, "broker-a", RequestCode::CONSUMER_SEND_MSG_BACK);
    world.complete_at(0, id, ConsumeOutcome::ReconsumeLater, world.now);
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(refusals(&world, "CONSUMER_SEND_MSG_BACK"), 1);
    assert_eq!(
        world.nodes[0].consumer.stats().sent_back,
        1,
        "the fallback send was confirmed\n{}",
        world.trace_tail(20)
    );
    assert!(
        world.nodes[0]
            .events
            .iter()
            .all(|(_, e)| !matches!(e, Event::SendBackFailed { .. })),
        "the fallback worked: no SendBackFailed"
    );

    // The copy is delayed (DELAY = 3: 10 s), then stored in the retry topic.
    world.run_until(world.now + Duration::from_secs(12));
    let retry = MessageQueue::new(RETRY, "broker-a", 0);
    let stored = stored_messages(&world, &retry);
    assert_eq!(stored.len(), 1, "one copy in the retry topic: {stored:?}");
    let copy = &stored[0];
    assert_eq!(copy.body, *original.body());
    assert_eq!(copy.property(property::RETRY_TOPIC), Some(TOPIC));
    assert_eq!(
        copy.property(property::ORIGIN_MESSAGE_ID),
        Some(original.msg_id().as_str())
    );
    assert_eq!(copy.property(property::RECONSUME_TIME), Some("1"));
    assert_eq!(copy.property(property::MAX_RECONSUME_TIMES), Some("16"));
    assert_eq!(copy.reconsume_times, 1);

    let again = messages_of(&world.nodes[0].delivered, &retry);
    assert_eq!(again.len(), 1, "delivered again from the retry topic");
    assert_eq!(again[0].topic(), TOPIC);
    assert_eq!(again[0].reconsume_times(), 1);
    assert_eq!(again[0].body(), original.body());
    world.release_held(0, world.now);
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(1));
}

#[test]
fn when_both_ways_back_are_refused_the_message_is_redelivered_locally_after_5_s() {
    let queue = MessageQueue::new(TOPIC, "broker-a", 1);
    let (mut world, id, original) = one_failed_delivery(109, &queue);
    refuse_once(&mut world, "broker-a", RequestCode::CONSUMER_SEND_MSG_BACK);
    refuse_once(&mut world, "broker-a", RequestCode::SEND_MESSAGE_V2);
    let delivered_before = world.nodes[0].delivered.len();
    world.complete_at(0, id, ConsumeOutcome::ReconsumeLater, world.now);
    world.run_until_with(world.now + Duration::from_secs(8), |w| {
        assert_eq!(
            w.cluster.committed_offset(GROUP, &queue),
            None,
            "nothing committed past a message that is nowhere safe"
        );
    });
    assert_eq!(refusals(&world, "CONSUMER_SEND_MSG_BACK"), 1);
    assert_eq!(refusals(&world, "SEND_MESSAGE_V2"), 1);
    let failed_at = world.nodes[0]
        .events
        .iter()
        .find(|(_, e)| {
            *e == Event::SendBackFailed {
                queue: queue.clone(),
                offset: 0,
            }
        })
        .map(|(at, _)| *at)
        .unwrap_or_else(|| panic!("SendBackFailed reported\n{}", world.trace_tail(30)));
    assert_eq!(world.nodes[0].consumer.stats().sent_back, 0);

    let again: Vec<_> = world.nodes[0].delivered[delivered_before..].to_vec();
    assert_eq!(again.len(), 1, "redelivered once, locally");
    let (at, d) = &again[0];
    assert_eq!(
        d.queue, queue,
        "from the original queue, not the retry topic"
    );
    assert_eq!(d.messages.len(), 1);
    assert_eq!(d.messages[0].queue_offset(), 0);
    assert_eq!(d.messages[0].body(), original.body());
    assert_eq!(d.messages[0].reconsume_times(), 1);
    assert_eq!(
        *at - failed_at,
        Duration::from_secs(5),
        "after send_back_retry_delay"
    );
    let retry = MessageQueue::new(RETRY, "broker-a", 0);
    assert_eq!(world.cluster.messages(&retry).count(), 0);

    world.release_held(0, world.now);
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(1));
}

#[test]
fn with_hand_over_locks_a_refused_send_back_is_redelivered_locally() {
    let queue = MessageQueue::new(TOPIC, "broker-a", 1);
    let mut config = quiet_config(110, 1);
    config.consumer_config = |mut c| {
        c.handover_timeout = Duration::from_secs(6);
        c
    };
    let (mut world, id, original) = one_failed_delivery_in(config, &queue);
    refuse_once(&mut world, "broker-a", RequestCode::CONSUMER_SEND_MSG_BACK);
    let delivered_before = world.nodes[0].delivered.len();
    world.complete_at(0, id, ConsumeOutcome::ReconsumeLater, world.now);
    world.run_until(world.now + Duration::from_secs(7));
    assert_eq!(refusals(&world, "CONSUMER_SEND_MSG_BACK"), 1);
    assert_eq!(
        world.requests_sent("broker-a:10911", RequestCode::SEND_MESSAGE_V2),
        0,
        "nothing sent to the retry topic, which would dead-letter it"
    );
    let again: Vec<_> = world.nodes[0].delivered[delivered_before..].to_vec();
    assert_eq!(again.len(), 1, "redelivered once, locally");
    assert_eq!(again[0].1.queue, queue);
    assert_eq!(again[0].1.messages[0].body(), original.body());
    assert_eq!(again[0].1.messages[0].reconsume_times(), 1);
    for broker in ["broker-a", "broker-b"] {
        let dlq = MessageQueue::new("%DLQ%sim-group", broker, 0);
        assert_eq!(
            world.cluster.messages(&dlq).count(),
            0,
            "nothing dead-lettered"
        );
    }
    world.release_held(0, world.now);
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), Some(1));
}
