//! A pop member killed mid-batch (no shutdown, no acks): its unacked messages come back to the
//! other member once their invisibility ends, with the reconsume count raised, and nothing is
//! lost.

use std::time::Duration;

use consumer_core::ConsumeOutcome;

use super::pop_support::PopWorld;

#[test]
fn a_dead_members_messages_come_back_after_the_invisibility() {
    let mut world = PopWorld::new(
        1,
        Box::new(|member, _| {
            // Member 0 is slow, so it holds messages when it dies.
            let took = if member == 0 { 8_000 } else { 50 };
            (Duration::from_millis(took), ConsumeOutcome::Success)
        }),
    );
    let mut slow = world.config();
    slow.max_in_flight_deliveries = 4;
    slow.batch_size = 4;
    slow.max_cached_messages = 8;
    world.add_member(slow);
    world.run_until(Duration::from_secs(5), |_| false);
    world.produce(20, 1);
    world.run_until(Duration::from_secs(1), |_| false);
    let held: Vec<String> = world
        .seen
        .iter()
        .filter(|s| s.member == 0)
        .map(|s| s.key.clone())
        .collect();
    // The first pop woke on the first message; the next brought a batch of four, of which
    // four run and one waits in the cache.
    assert_eq!(held.len(), 4, "member 0 runs four: {held:?}");
    assert_eq!(world.stats(0).held_messages, 5);
    let fast = world.config();
    world.add_member(fast);
    world.kill(0);
    let killed_at = world.now - world.epoch;
    let done = world.run_until(Duration::from_secs(120), PopWorld::all_consumed_or_dead);
    assert!(
        done,
        "lost messages: consumed {} of 20",
        world.consumed.len()
    );
    for key in &held {
        let again: Vec<_> = world
            .deliveries_of(key)
            .into_iter()
            .filter(|s| s.member == 1)
            .collect();
        assert_eq!(again.len(), 1, "{key} came back once to member 1");
        assert_eq!(again[0].reconsume_times, 1, "{key}");
        // Invisible for 20 s from the pop, which came before the kill.
        assert!(
            again[0].at <= killed_at + Duration::from_secs(20),
            "{key}: {:?}",
            again[0]
        );
        assert!(
            again[0].at >= Duration::from_secs(20),
            "{key} came back early: {:?}",
            again[0]
        );
    }
}
