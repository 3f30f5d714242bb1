//! Shared setup and queries of the scenario tests of the `core` test binary (`tests/core/`), which
//! steer a quiet [`World`] into one precise situation and then look at what the consumers
//! delivered, reported and stored.

use std::time::{Duration, Instant};

use bytes::Bytes;
use consumer_core::{
    ConsumeOutcome, Delivery, DeliveryId, Event, MessageQueue, QueueStats, RequestId,
};
use proto::message::Message;
use proto::{RequestCode, ResponseCode};

use crate::sim::{Fault, StoredMessageInfo};
use crate::world::{World, WorldConfig};

/// The consumer group of [`WorldConfig::new`].
pub const GROUP: &str = "sim-group";
/// The topic of [`WorldConfig::new`].
pub const TOPIC: &str = "SimTopic";
/// The retry topic of [`GROUP`] (`%RETRY%<group>`).
pub const RETRY: &str = "%RETRY%sim-group";

/// [`WorldConfig::new`] with nothing happening by itself: no faults, no configured messages,
/// handlers that never ask to reconsume, and `consumers` consumers. The test produces what it
/// needs ([`World::produce_to`]) and changes the rest of the configuration itself.
pub fn quiet_config(seed: u64, consumers: usize) -> WorldConfig {
    let mut config = WorldConfig::new(seed);
    config.faults = false;
    config.messages = 0;
    config.reconsume_percent = 0;
    config.consumers = consumers;
    config
}

/// A world of `config` (one consumer) whose node 0 owns every queue and holds, unfinished, its
/// deliveries of three messages produced into `broker-b#0`: the queue a second member takes
/// over when it joins (ids sort #0 < #1, AVG). Returns the world and that queue, half a second
/// after the messages were produced.
pub fn busy_owner_of_a_moving_queue(config: WorldConfig) -> (World, MessageQueue) {
    let mut world = World::new(config);
    world.nodes[0].hold = true;
    let queue = MessageQueue::new(TOPIC, "broker-b", 0);
    world.run_until(world.epoch() + Duration::from_secs(1));
    world.produce_to(&queue, 3);
    world.run_until(world.now + Duration::from_millis(500));
    (world, queue)
}

/// The end of a hand-over from [`busy_owner_of_a_moving_queue`]: node 0's held deliveries
/// finish now; five seconds later two more messages go to `queue`, and the world runs five
/// seconds more, for the new owner to deliver them.
pub fn finish_then_produce_two(world: &mut World, queue: &MessageQueue) {
    world.release_held(0, world.now);
    world.run_until(world.now + Duration::from_secs(5));
    world.produce_to(queue, 2);
    world.run_until(world.now + Duration::from_secs(5));
}

/// The offsets of the messages of `queue` in `delivered` (a node's [`Node::delivered`], or the
/// part of it after some point), in delivery order.
///
/// [`Node::delivered`]: crate::world::Node::delivered
pub fn offsets_of(delivered: &[(Instant, Delivery)], queue: &MessageQueue) -> Vec<i64> {
    messages_of(delivered, queue)
        .iter()
        .map(|m| m.queue_offset())
        .collect()
}

/// The messages of `queue` in `delivered` (a node's [`Node::delivered`], or the part of it after
/// some point), in delivery order.
///
/// [`Node::delivered`]: crate::world::Node::delivered
pub fn messages_of(delivered: &[(Instant, Delivery)], queue: &MessageQueue) -> Vec<Message> {
    delivered
        .iter()
        .filter(|(_, d)| d.queue == *queue)
        .flat_map(|(_, d)| d.messages.clone())
        .collect()
}

/// Node `i`'s delivery `id`, with the time it was handed out. Panics when there is none.
pub fn delivery(world: &World, i: usize, id: DeliveryId) -> (Instant, Delivery) {
    world.nodes[i]
        .delivered
        .iter()
        .find(|(_, d)| d.id == id)
        .cloned()
        .unwrap_or_else(|| panic!("node {i} delivered {id:?}"))
}

/// Node `i`'s events that `wanted` picks, in the order reported, without their times.
pub fn events_where(world: &World, i: usize, wanted: impl Fn(&Event) -> bool) -> Vec<Event> {
    world.nodes[i]
        .events
        .iter()
        .filter(|(_, e)| wanted(e))
        .map(|(_, e)| e.clone())
        .collect()
}

/// The messages the cluster stores in `queue` (a retry or dead-letter queue, say), by offset.
pub fn stored_messages(world: &World, queue: &MessageQueue) -> Vec<StoredMessageInfo> {
    world
        .cluster
        .messages(queue)
        .map(|(_, m)| m.clone())
        .collect()
}

/// Node `i`'s statistics of `queue` now. Panics when the node does not own the queue.
pub fn queue_stats(world: &World, i: usize, queue: &MessageQueue) -> QueueStats {
    world.nodes[i]
        .consumer
        .stats()
        .queues
        .into_iter()
        .find(|q| q.queue == *queue)
        .unwrap_or_else(|| panic!("node {i} owns {queue:?}"))
}

/// Plays node `i`'s handler (the node holds its deliveries, [`Node::hold`]) for `duration`:
/// every 100 ms it completes each held delivery at once, with the outcome `handler` picks given
/// the time the delivery was handed out, the delivery, and the time it completes.
///
/// [`Node::hold`]: crate::world::Node::hold
pub fn handle_held_for(
    world: &mut World,
    i: usize,
    duration: Duration,
    mut handler: impl FnMut(Instant, &Delivery, Instant) -> ConsumeOutcome,
) {
    let end = world.now + duration;
    while world.now < end {
        for id in std::mem::take(&mut world.nodes[i].held) {
            let (delivered_at, d) = delivery(world, i, id);
            let outcome = handler(delivered_at, &d, world.now);
            world.complete_at(i, id, outcome, world.now);
        }
        world.run_until(world.now + Duration::from_millis(100));
    }
}

/// Has `broker` answer the next `request` it gets with `SYSTEM_ERROR`, unprocessed.
pub fn refuse_once(world: &mut World, broker: &str, request: RequestCode) {
    world.cluster.inject(Fault::RespondWith {
        broker: broker.into(),
        request,
        response: ResponseCode::SYSTEM_ERROR,
        count: 1,
    });
}

/// Stores `n` messages (tag `TagA`, bodies `"{label} {k}"`) in `queue` now, straight into the
/// cluster: the world does not track them, so nothing expects them to be consumed.
pub fn produce_untracked(world: &mut World, queue: &MessageQueue, label: &str, n: usize) {
    for k in 0..n {
        world.cluster.produce(
            world.now,
            queue.topic(),
            queue.broker_name(),
            queue.queue_id(),
            Bytes::from(format!("{label} {k}")),
            Some("TagA"),
            None,
        );
    }
}

/// Asserts that node `i` caches at most `bound` messages of each of its queues now (the
/// flow-control limit plus one pull batch, say); returns the node's queue statistics.
pub fn assert_caches_within(world: &World, i: usize, bound: usize) -> Vec<QueueStats> {
    let queues = world.nodes[i].consumer.stats().queues;
    for q in &queues {
        assert!(
            q.cached_messages <= bound,
            "{:?} caches {} messages",
            q.queue,
            q.cached_messages
        );
    }
    queues
}

/// What the application's commit `request` by node `i` answered, and when: the one
/// `Event::CommitDone` carrying its id (the test fails without exactly one).
pub fn commit_done(
    world: &World,
    i: usize,
    request: RequestId,
) -> (Instant, Vec<(MessageQueue, i64)>, Vec<MessageQueue>) {
    let done: Vec<_> = world.nodes[i]
        .events
        .iter()
        .filter_map(|(at, e)| match e {
            Event::CommitDone {
                request: id,
                committed,
                unconfirmed,
            } if *id == request => Some((*at, committed.clone(), unconfirmed.clone())),
            _ => None,
        })
        .collect();
    match <[_; 1]>::try_from(done) {
        Ok([done]) => done,
        Err(done) => panic!("one CommitDone for {request:?}: {done:?}"),
    }
}
