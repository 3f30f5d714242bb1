//! A push consumer's `seek` moves an owned queue back (or forward): the messages from there are
//! delivered again, in order, with `Event::OffsetReset` reported; a queue it does not own is
//! refused.

use std::time::Duration;

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, events_where, offsets_of, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn seeking_back_delivers_the_messages_again() {
    let mut world = World::new(quiet_config(311, 1));
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(2));
    world.produce_to(&a, 5);
    world.run_until(world.now + Duration::from_secs(2));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered, &a),
        vec![0, 1, 2, 3, 4]
    );

    let seen = world.nodes[0].delivered.len();
    let now = world.now;
    world.nodes[0]
        .consumer
        .seek(now, &a, 2)
        .expect("an owned, started queue");
    world.run_until(world.now + Duration::from_secs(2));
    assert_eq!(
        offsets_of(&world.nodes[0].delivered[seen..], &a),
        vec![2, 3, 4],
        "the range from the sought offset again"
    );
    let resets = events_where(
        &world,
        0,
        |e| matches!(e, Event::OffsetReset { queue, offset: 2 } if *queue == a),
    );
    assert_eq!(resets.len(), 1, "{resets:?}");

    let unknown = MessageQueue::new(TOPIC, "broker-x", 9);
    let now = world.now;
    assert!(world.nodes[0].consumer.seek(now, &unknown, 0).is_err());
}
