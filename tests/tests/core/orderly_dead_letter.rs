//! Orderly dead-lettering: with `max_reconsume_times = 2`, a message whose handler always fails
//! is delivered exactly 3 times (reconsume_times 0, 1, 2), then sent as a normal message to
//! `%RETRY%<group>` with `RECONSUME_TIME` 3, which the broker routes to `%DLQ%<group>`
//! (Java's `ConsumeMessageOrderlyService.checkReconsumeTimes`, `remoting-protocol.md` §7.2);
//! the consumer reports `Event::GaveUp` and the queue moves on to the next message.

use std::time::Duration;

use consumer_core::{ConsumeMode, ConsumeOutcome, Event, MessageQueue};
use proto::message::property;
use rocketmq_tests::scenario::{
    GROUP, RETRY, TOPIC, events_where, handle_held_for, quiet_config, stored_messages,
};
use rocketmq_tests::sim::dlq_topic;
use rocketmq_tests::world::World;

#[test]
fn a_message_failing_past_max_reconsume_times_goes_to_the_dead_letter_queue() {
    let mut config = quiet_config(103, 1);
    config.mode = ConsumeMode::Orderly;
    config.max_reconsume_times = Some(2);
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);
    world.produce_to(&queue, 3);
    world.run_until(world.epoch() + Duration::from_secs(2));

    // The handler: offset 1 always fails, the others succeed.
    let poisoned = 1;
    handle_held_for(&mut world, 0, Duration::from_secs(20), |_, d, _| {
        if d.messages.iter().any(|m| m.queue_offset() == poisoned) {
            ConsumeOutcome::ReconsumeLater
        } else {
            ConsumeOutcome::Success
        }
    });

    let deliveries: Vec<(i64, i32)> = world.nodes[0]
        .delivered
        .iter()
        .filter(|(_, d)| d.queue == queue)
        .flat_map(|(_, d)| {
            d.messages
                .iter()
                .map(|m| (m.queue_offset(), m.reconsume_times()))
        })
        .collect();
    assert_eq!(
        deliveries,
        vec![(0, 0), (1, 0), (1, 1), (1, 2), (2, 0)],
        "offset 1 delivered exactly 3 times, then the queue moved on\n{}",
        world.trace_tail(40)
    );

    let gave_up = events_where(&world, 0, |e| matches!(e, Event::GaveUp { .. }));
    assert_eq!(
        gave_up,
        vec![Event::GaveUp {
            queue: queue.clone(),
            offset: poisoned
        }]
    );
    let original = world
        .cluster
        .messages(&queue)
        .find(|(o, _)| *o == poisoned)
        .map(|(_, m)| m.clone())
        .expect("the original is stored");
    let dlq = MessageQueue::new(&dlq_topic(GROUP), "broker-b", 0);
    let dead = stored_messages(&world, &dlq);
    assert_eq!(dead.len(), 1, "one dead-lettered copy: {dead:?}");
    let dead = &dead[0];
    assert_eq!(dead.body, original.body, "the poisoned message's body");
    assert_eq!(dead.reconsume_times, 3, "max_reconsume_times + 1");
    assert_eq!(dead.property(property::RETRY_TOPIC), Some(TOPIC));
    assert_eq!(
        dead.property(property::ORIGIN_MESSAGE_ID),
        Some(original.msg_id()),
        "{dead:?}"
    );
    let retry = MessageQueue::new(RETRY, "broker-b", 0);
    assert_eq!(
        world.cluster.messages(&retry).count(),
        0,
        "nothing lands in the retry topic: orderly retries are local"
    );
    assert_eq!(world.nodes[0].consumer.stats().sent_back, 1);

    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue),
        Some(3),
        "the dead-lettered message counts as consumed"
    );
}
