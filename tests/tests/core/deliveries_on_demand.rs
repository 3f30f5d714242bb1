//! Deliveries on demand (`Consumer::deliver_on_demand`, as the driver runs the consumer): the
//! queues' messages go out only through `Consumer::deliver_now`, one delivery a call, in the
//! same order as the eager hand-out; a handler that finishes as its delivery is handed out
//! (`Handled::Done`) settles it at once, so its offset is committed without a `complete`, and
//! its id names nothing afterwards; handlers still running (`Handled::Running`) count against
//! `max_in_flight_deliveries` until completed.

use std::time::Duration;

use consumer_core::{ConsumeOutcome, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

fn queue() -> MessageQueue {
    MessageQueue::new(TOPIC, "broker-a", 0)
}

/// The order in which a consumer of `seed`'s world hands out 40 messages of each of the four
/// queues, eagerly or on demand.
fn delivery_order(seed: u64, on_demand: bool) -> Vec<(MessageQueue, i64)> {
    let mut config = quiet_config(seed, 1);
    config.deliver_on_demand = on_demand;
    let mut world = World::new(config);
    // Handlers run for their drawn time either way, so both worlds draw the same randomness.
    world.nodes[0].at_once = Some(false);
    world.run_until(world.epoch() + Duration::from_secs(1));
    for broker in ["broker-a", "broker-b"] {
        for id in 0..2 {
            world.produce_to(&MessageQueue::new(TOPIC, broker, id), 40);
        }
    }
    world.run_until(world.now + Duration::from_secs(5));
    world.nodes[0]
        .delivered
        .iter()
        .map(|(_, d)| (d.queue.clone(), d.messages[0].queue_offset()))
        .collect()
}

#[test]
fn on_demand_deliveries_come_in_the_eager_order() {
    let eager = delivery_order(401, false);
    let on_demand = delivery_order(401, true);
    assert_eq!(eager.len(), 160, "every message delivered once, eagerly");
    assert_eq!(
        on_demand, eager,
        "the same deliveries in the same order on demand"
    );
}

#[test]
fn a_handler_done_at_once_settles_its_delivery() {
    let mut config = quiet_config(403, 1);
    config.deliver_on_demand = true;
    let mut world = World::new(config);
    // Every handler finishes as its delivery is handed out: nothing is ever completed.
    world.nodes[0].at_once = Some(true);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue(), 4);
    world.run_until(world.now + Duration::from_millis(200));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &queue()),
        [0, 1, 2, 3]
    );
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(stats.in_flight_deliveries, 0, "{stats:?}");
    assert_eq!(stats.delivered, 4, "{stats:?}");
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(
        world.cluster.committed_offset(GROUP, &queue()),
        Some(4),
        "every offset committed without a completion\n{}",
        world.trace_tail(20)
    );

    // A settled delivery's id names nothing: completing it as failed changes nothing.
    let settled = world.nodes[0].delivered[3].1.id;
    let now = world.now;
    world.nodes[0]
        .consumer
        .complete(now, settled, ConsumeOutcome::ReconsumeLater);
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(stats.stale_completions, 1, "{stats:?}");
    assert_eq!(stats.sent_back, 0, "nothing is retried: {stats:?}");
    world.run_until(world.now + Duration::from_secs(6));
    assert_eq!(world.cluster.committed_offset(GROUP, &queue()), Some(4));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &queue()),
        [0, 1, 2, 3]
    );
}

#[test]
fn running_handlers_count_against_the_in_flight_limit() {
    let mut config = quiet_config(405, 1);
    config.deliver_on_demand = true;
    config.consumer_config = |mut c| {
        c.max_in_flight_deliveries = 5;
        c
    };
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue(), 12);
    world.run_until(world.now + Duration::from_millis(500));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &queue()),
        [0, 1, 2, 3, 4],
        "five handed out, the rest wait"
    );
    let consumer = &mut world.nodes[0].consumer;
    assert!(!consumer.deliver_now(world.now, |_| unreachable!("the limit is reached")));
    assert_eq!(
        consumer.ready_deliveries(),
        0,
        "nothing waits for poll_output or poll_delivery on demand"
    );

    world.release_held(0, world.now);
    world.nodes[0].hold = false;
    world.run_until(world.now + Duration::from_secs(1));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &queue()),
        (0..12).collect::<Vec<_>>(),
        "the rest once the first completed"
    );
}
