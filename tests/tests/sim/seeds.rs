//! The consumer against the simulated cluster over many seeded fault schedules (connection
//! drops, black-holed connections, broker restarts, members joining and leaving, slow handlers,
//! reconsume-later, OFFSET_MOVED, SYSTEM_BUSY, admin offset resets), seeds rotating through concurrent,
//! dead-letter, orderly and broadcasting runs ([`WorldConfig::rotating`]): no message is lost
//! (each is consumed or dead-lettered after exactly `max_reconsume_times + 1` deliveries),
//! caches stay bounded, no committed offset passes an unconsumed message, orderly deliveries
//! hold the broker lock, never overlap and never skip ahead, broadcasting reaches every
//! member, and each queue ends with exactly one owner (every member, broadcasting). Every
//! third seed runs with the brokers checking ACL signatures, and none may be refused; every
//! fifth under a rate limit (25 messages a second); every seventh with members pausing queues
//! for a few seconds (no delivery may come from a paused queue); every other one with message
//! trace, whose records must cover every delivered message, before and after. Another
//! seventh (3, 10, 17, ...) gives each broker a slave and loses one master for 60 to 180 s
//! while its slave serves: the same invariants hold, committed offsets on the slaves included,
//! and the per-message wait bound counts from 30 s after the master is back (a route refresh).
//! Seeds 4 and 8 of every eleven give the consumers small cache limits (8 messages a queue, or
//! 12 in all) and a 300-message burst handled slower than it arrives, so the caches fill: no
//! cache may pass its limit by more than one pull batch, and the run fails if the limit was
//! never reached (without the flow control, a queue cached 64 and a consumer 99).
//!
//! `SIM_SEEDS=N` runs N seeds (default 500); `SIM_SEED=s` runs only seed `s`.

use rocketmq_tests::world::{World, WorldConfig};

#[test]
fn seeded_fault_schedules_lose_nothing() {
    let seeds: Vec<u64> = match std::env::var("SIM_SEED") {
        Ok(seed) => vec![seed.parse().expect("SIM_SEED is a number")],
        Err(_) => {
            let n = std::env::var("SIM_SEEDS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(500);
            (0..n).collect()
        }
    };
    let mut deliveries = 0;
    for seed in &seeds {
        let mut world = World::new(WorldConfig::rotating(*seed));
        world.run();
        world.shutdown_all();
        assert_eq!(
            world.cluster.refused_unsigned(),
            0,
            "seed {seed}: with ACL on, every request the brokers saw was signed"
        );
        deliveries += world.deliveries();
    }
    println!("{} seeds, {deliveries} deliveries", seeds.len());
}
