//! A failed pop message comes back after the retry backoff (10 s for the first failure, Java's
//! `popDelayLevel`) from the pop retry topic with its reconsume count raised, and one that fails
//! `max_reconsume_times` times goes to `%DLQ%<group>` and is acked.

use std::time::Duration;

use consumer_core::ConsumeOutcome;
use proto::message::property;

use super::pop_support::{BROKER, GROUP, PopWorld};

#[test]
fn failures_come_back_then_dead_letter() {
    let mut world = PopWorld::new(
        1,
        Box::new(|_, message| {
            let key = message.property(property::KEYS).unwrap_or_default();
            let outcome = match (key, message.reconsume_times()) {
                // m0 fails once, then succeeds; m1 always fails.
                ("m0", 0) | ("m1", _) => ConsumeOutcome::ReconsumeLater,
                _ => ConsumeOutcome::Success,
            };
            (Duration::from_millis(10), outcome)
        }),
    );
    let mut config = world.config();
    config.max_reconsume_times = 2;
    config.retry_delays = vec![Duration::from_secs(10), Duration::from_secs(30)];
    world.add_member(config);
    world.run_until(Duration::from_secs(5), |_| false);
    world.produce(3, 1);
    let done = world.run_until(Duration::from_secs(300), PopWorld::all_consumed_or_dead);
    assert!(done, "not settled: consumed {:?}", world.consumed);

    let m0 = world.deliveries_of("m0");
    assert_eq!(m0.len(), 2, "{m0:?}");
    assert_eq!((m0[0].reconsume_times, m0[1].reconsume_times), (0, 1));
    let wait = m0[1].at - m0[0].at;
    assert!(
        wait >= Duration::from_secs(10) && wait < Duration::from_secs(12),
        "came back after {wait:?}"
    );

    let m1 = world.deliveries_of("m1");
    let counts: Vec<i32> = m1.iter().map(|s| s.reconsume_times).collect();
    assert_eq!(counts, [0, 1, 2], "delivered until the limit");
    assert!(world.dead_lettered().contains("m1"));
    assert!(!world.consumed.contains_key("m1"));
    assert_eq!(world.stats(0).dead_lettered, 1);
    world.run_until(Duration::from_secs(5), |_| false);
    assert_eq!(
        world.cluster.pop_state(BROKER, GROUP).0,
        0,
        "nothing left invisible"
    );
}
