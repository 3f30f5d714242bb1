//! Broadcasting sends nothing back to a broker (Java drops failed broadcast messages,
//! `remoting-protocol.md` §7.2): a failed message is delivered again locally after
//! `reconsume_delay` with `reconsume_times` raised, and after `max_reconsume_times` failures
//! the consumer gives up on it (`Event::GaveUp`) and its stored offset moves past it.

use std::time::Duration;

use consumer_core::{ConsumeOutcome, Event, MessageModel, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, events_where, handle_held_for, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_failing_broadcast_message_is_retried_locally_then_given_up() {
    let mut config = quiet_config(121, 1);
    config.model = MessageModel::Broadcasting;
    config.max_reconsume_times = Some(2);
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue, 2);
    world.run_until(world.now + Duration::from_millis(200));

    let mut attempts = Vec::new();
    handle_held_for(
        &mut world,
        0,
        Duration::from_secs(10),
        |delivered_at, d, now| {
            let m = &d.messages[0];
            if m.queue_offset() == 0 {
                // When it was delivered, and when its handler failed.
                attempts.push((delivered_at, now, m.reconsume_times()));
                ConsumeOutcome::ReconsumeLater
            } else {
                ConsumeOutcome::Success
            }
        },
    );
    let times: Vec<i32> = attempts.iter().map(|(_, _, t)| *t).collect();
    assert_eq!(
        times,
        vec![0, 1, 2],
        "three deliveries of offset 0\n{}",
        world.trace_tail(30)
    );
    for pair in attempts.windows(2) {
        let gap = pair[1].0 - pair[0].1;
        assert_eq!(
            gap,
            Duration::from_secs(1),
            "redelivered after reconsume_delay (1 s): {gap:?}"
        );
    }
    let gave_up = events_where(&world, 0, |e| matches!(e, Event::GaveUp { .. }));
    assert_eq!(
        gave_up,
        vec![Event::GaveUp {
            queue: queue.clone(),
            offset: 0
        }]
    );
    assert_eq!(
        world.nodes[0].consumer.stats().sent_back,
        0,
        "nothing sent back"
    );
    for broker in ["broker-a", "broker-b"] {
        assert!(
            world
                .cluster
                .topics(broker)
                .iter()
                .all(|t| !t.starts_with("%DLQ%")),
            "no dead-letter topic on {broker}"
        );
    }
    assert_eq!(world.nodes[0].stored.get(&queue), Some(&2));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue), None);
}
