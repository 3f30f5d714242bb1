//! A name server that does not answer is skipped: with two name servers configured and the one
//! asked first refusing connections (nothing listens at its address), the consumer asks the
//! other one (`ConsumerConfig::name_servers`, "tried in turn when one fails"), gets its routes,
//! and consumes. The consumer subscribes to two topics (its topic and the group's retry topic),
//! so one round of route requests fails twice.

use std::time::Duration;

use consumer_core::{Event, FailureReason, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, offsets_of, quiet_config};
use rocketmq_tests::world::World;

const DEAD: &str = "namesrv-down:9876";

fn world_with_dead_first(seed: u64) -> World {
    let mut world = World::new(quiet_config(seed, 0));
    let live = world.cluster.namesrv_addr().to_owned();
    world.add_consumer_with(|mut c| {
        c.name_servers = vec![DEAD.to_owned(), live];
        // The first name server asked is `seed % len`: the dead one.
        c.seed = 0;
        c
    });
    world
}

#[test]
fn dead_first_name_server_is_skipped() {
    let mut world = world_with_dead_first(81);
    let queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(10));

    let refused = world.nodes[0].events.iter().any(|(_, e)| {
        matches!(
            e,
            Event::RequestFailed { addr, request: "GET_ROUTEINFO_BY_TOPIC", reason: FailureReason::Disconnected }
                if addr == DEAD
        )
    });
    assert!(refused, "the dead name server was tried first");
    assert_eq!(
        world.nodes[0].consumer.assignment().count(),
        6,
        "routes came from the second name server\n{}",
        world.trace_tail(40)
    );
    let offsets = world.produce_to(&queue, 3);
    world.run_until(world.now + Duration::from_secs(2));
    let delivered = offsets_of(&world.nodes[0].delivered, &queue);
    assert_eq!(delivered, offsets);
}
