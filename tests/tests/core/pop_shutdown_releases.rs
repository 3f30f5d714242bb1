//! Pop shutdown: no more pops, popped messages not yet handed out are made visible again at
//! once (the other member gets them without waiting out the invisibility), the running handler
//! finishes and is acked, then the member unregisters and closes.

use std::time::Duration;

use consumer_core::ConsumeOutcome;

use super::pop_support::PopWorld;

#[test]
fn shutdown_releases_and_drains() {
    let mut world = PopWorld::new(
        1,
        Box::new(|member, _| {
            let took = if member == 0 { 3_000 } else { 10 };
            (Duration::from_millis(took), ConsumeOutcome::Success)
        }),
    );
    let mut first = world.config();
    first.max_in_flight_deliveries = 1;
    world.add_member(first);
    world.run_until(Duration::from_secs(5), |_| false);
    world.produce(6, 1);
    world.run_until(Duration::from_millis(100), |_| false);
    assert_eq!(world.seen.len(), 1, "member 0 runs one, holds five");
    world.shutdown(0);
    let second = world.config();
    world.add_member(second);
    let done = world.run_until(Duration::from_secs(15), PopWorld::all_consumed_or_dead);
    assert!(done, "consumed {:?}", world.consumed);
    assert!(world.is_closed(0));
    assert_eq!(world.consumed.values().filter(|m| **m == 0).count(), 1);
    assert_eq!(world.consumed.values().filter(|m| **m == 1).count(), 5);
    assert_eq!(world.stats(0).acked, 1);
}
