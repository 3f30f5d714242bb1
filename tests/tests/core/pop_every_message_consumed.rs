//! Pop shares one queue among three members: every message is consumed once, each member gets
//! a share, nothing stays invisible on the broker, and no message is with two handlers at once.

use std::time::Duration;

use consumer_core::ConsumeOutcome;

use super::pop_support::{BROKER, GROUP, PopWorld};

#[test]
fn three_members_share_one_queue() {
    let mut world = PopWorld::new(
        1,
        Box::new(|_, _| (Duration::from_millis(200), ConsumeOutcome::Success)),
    );
    for _ in 0..3 {
        let config = world.config();
        world.add_member(config);
    }
    world.run_until(Duration::from_secs(5), |_| false);
    world.produce(90, 1);
    let done = world.run_until(Duration::from_secs(120), PopWorld::all_consumed_or_dead);
    assert!(
        done,
        "not all consumed: {} of {}",
        world.consumed.len(),
        world.produced.len()
    );
    assert_eq!(world.seen.len(), 90, "each message delivered once");
    let shares = world.shares();
    assert_eq!(shares.len(), 3, "every member got a share: {shares:?}");
    world.run_until(Duration::from_secs(5), |_| false);
    let (invisible, revived) = world.cluster.pop_state(BROKER, GROUP);
    assert_eq!(
        (invisible, revived),
        (0, 0),
        "every message acked, none revived"
    );
    let acked: u64 = (0..3).map(|i| world.stats(i).acked).sum();
    assert_eq!(acked, 90);
}
