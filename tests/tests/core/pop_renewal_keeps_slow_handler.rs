//! A handler that runs for 2.5 times the invisibility keeps its message: the consumer renews the
//! invisibility before it ends, so the broker never revives it and no other member gets it.

use std::time::Duration;

use consumer_core::ConsumeOutcome;
use proto::message::property;

use super::pop_support::{BROKER, GROUP, PopWorld};

#[test]
fn renewal_keeps_a_slow_handlers_message() {
    let mut world = PopWorld::new(
        1,
        Box::new(|_, message| {
            let slow = message.property(property::KEYS) == Some("m0");
            let took = if slow { 50_000 } else { 100 };
            (Duration::from_millis(took), ConsumeOutcome::Success)
        }),
    );
    for _ in 0..2 {
        let config = world.config();
        world.add_member(config);
    }
    world.run_until(Duration::from_secs(5), |_| false);
    world.produce(5, 1);
    let done = world.run_until(Duration::from_secs(120), PopWorld::all_consumed_or_dead);
    assert!(done);
    assert_eq!(
        world.deliveries_of("m0").len(),
        1,
        "m0 was never redelivered"
    );
    let renewed: u64 = (0..2).map(|i| world.stats(i).renewed).sum();
    assert!(renewed >= 2, "renewed {renewed} times");
    let (invisible, revived) = world.cluster.pop_state(BROKER, GROUP);
    assert_eq!((invisible, revived), (0, 0));
}
