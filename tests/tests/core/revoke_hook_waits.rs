//! With `revoke_hook`, a rebalance announces the queues it revokes (`Output::Revoking`) and
//! the queues stay the consumer's, delivering nothing more, until the application answers
//! (`revoke_done`): only then are they committed and gone (`Event::Revoked`). Without an
//! answer, the revoke deadline (`revoke_drain_timeout`) ends the wait.

use std::time::{Duration, Instant};

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, quiet_config};
use rocketmq_tests::world::World;

/// A world where node 0 owned every queue and node 1 just joined, with node 0's announced
/// revoke: its time and the revoked queues.
fn revoke_announced(seed: u64) -> (World, Instant, Vec<MessageQueue>) {
    let mut config = quiet_config(seed, 1);
    config.consumer_config = |mut c| {
        c.revoke_hook = true;
        c
    };
    let mut world = World::new(config);
    world.run_until(world.epoch() + Duration::from_secs(3));
    let topic_queues = |world: &World| {
        world.nodes[0]
            .consumer
            .assignment()
            .filter(|q| q.topic() == TOPIC)
            .count()
    };
    assert_eq!(topic_queues(&world), 4);
    world.add_consumer();
    world.run_until(world.now + Duration::from_secs(3));
    // The group's retry topic is routed once a broker has the group's heartbeat, and its
    // queues are shared out (and revoked) too: the topic's revoke is the one pinned here.
    let topic_revokes: Vec<_> = world.nodes[0]
        .revoking
        .iter()
        .filter(|(_, _, queues)| queues.iter().any(|q| q.topic() == TOPIC))
        .cloned()
        .collect();
    assert_eq!(
        topic_revokes.len(),
        1,
        "one revoke of the topic's queues announced"
    );
    let (at, _, queues) = topic_revokes[0].clone();
    assert_eq!(queues.len(), 2, "half the queues go to node 1: {queues:?}");
    (world, at, queues)
}

fn revoked_at(world: &World, queue: &MessageQueue) -> Option<Instant> {
    world.nodes[0].events.iter().find_map(|(at, e)| match e {
        Event::Revoked(qs) if qs.contains(queue) => Some(*at),
        _ => None,
    })
}

#[test]
fn revoked_queues_wait_for_the_answer() {
    let (mut world, announced, queues) = revoke_announced(337);
    // Within the deadline, unanswered: still owned (revoking), nothing delivered from them.
    world.run_until(announced + Duration::from_secs(3));
    let stats = world.nodes[0].consumer.stats();
    for q in &queues {
        assert!(
            revoked_at(&world, q).is_none(),
            "{q:?} waits for the answer"
        );
        assert!(
            stats.queues.iter().any(|s| &s.queue == q && s.revoking),
            "{q:?} shows as revoking"
        );
    }
    let request = world.nodes[0].revoking[0].1;
    let answered = world.now;
    world.nodes[0].consumer.revoke_done(answered, request);
    world.run_until(world.now + Duration::from_millis(100));
    for q in &queues {
        assert_eq!(
            revoked_at(&world, q),
            Some(answered),
            "{q:?} goes on the answer"
        );
    }
    assert!(
        world.nodes[0]
            .delivered
            .iter()
            .all(|(at, d)| *at < announced || !queues.contains(&d.queue)),
        "no delivery of a revoking queue after the announcement"
    );
}

#[test]
fn the_deadline_ends_an_unanswered_revoke() {
    let (mut world, announced, queues) = revoke_announced(339);
    world.run_until(announced + Duration::from_secs(8));
    for q in &queues {
        let at = revoked_at(&world, q).expect("revoked by the deadline");
        // revoke_drain_timeout is 5 s.
        assert_eq!(at, announced + Duration::from_secs(5), "{q:?}");
    }
}
