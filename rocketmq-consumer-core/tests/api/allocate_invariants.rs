//! Pins the group-level invariants of `rebalance::allocate` with property tests:
//!
//! - **one owner**: across all members of a group, every queue is allocated exactly once by
//!   `Averagely`, `AveragelyByCircle`, `ConsistentHash` (at least one virtual node),
//!   `ByMachineRoom` when every queue's room is selected, and `MachineRoomNearby` over a
//!   partitioning inner strategy;
//! - **input order is irrelevant**: shuffling the queues and the member list changes nothing
//!   (every member must compute the same partition from the broker's unordered answers);
//! - **non-members get nothing** (Java's `check`), and duplicate queues are collapsed;
//! - shape: the averaging strategies hand out shares differing by at most one, and the
//!   single-pass strategies return their queues in Java's sorted order;
//! - consistent hashing moves queues only to a joining member.
//!
//! Queue and client names mix ASCII with characters whose UTF-16 and UTF-8 orders differ, so a
//! sort by bytes instead of Java's `compareTo` would show up as an order dependence.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::{Just, ProptestConfig, prop, prop_assert, prop_assert_eq, proptest};
// Renamed: the allocation strategy enum below is also called `Strategy`.
use proptest::strategy::Strategy as PropStrategy;
use rocketmq_consumer_core::MessageQueue;
use rocketmq_consumer_core::rebalance::{MachineRoomResolver, Strategy, allocate};

/// Machine rooms; the last two sort differently by UTF-16 units than by UTF-8 bytes.
const ROOMS: [&str; 4] = ["hz", "sh", "\u{FF5E}", "\u{1F600}"];
const TOPICS: [&str; 2] = ["TopicTest", "\u{FF5E}t"];

/// Broker names are `room@broker`, as `AllocateMessageQueueByMachineRoom` expects.
fn queue_set() -> impl PropStrategy<Value = Vec<MessageQueue>> {
    prop::collection::btree_set((0..TOPICS.len(), 0..ROOMS.len(), 0..3u8, 0..12i32), 0..48)
        .prop_map(|set| {
            set.into_iter()
                .map(|(t, r, b, q)| MessageQueue::new(TOPICS[t], &format!("{}@b{b}", ROOMS[r]), q))
                .collect()
        })
}

fn consumer_set() -> impl PropStrategy<Value = Vec<String>> {
    prop::collection::btree_set("[ab\u{FF5E}\u{1F600}][0-9]{0,2}", 1..12)
        .prop_map(|set| set.into_iter().collect())
}

/// Rooms from names: a broker's is the part before '@'; a consumer's is picked by its first
/// character, so some rooms have consumers and some have none.
struct ByName;

impl MachineRoomResolver for ByName {
    fn broker_room(&self, queue: &MessageQueue) -> String {
        queue
            .broker_name()
            .split('@')
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    fn consumer_room(&self, client_id: &str) -> String {
        let first = client_id.chars().next().map_or(0, u32::from);
        ROOMS[first as usize % 3].to_owned()
    }
}

fn all_rooms() -> BTreeSet<String> {
    ROOMS.iter().map(|&r| r.to_owned()).collect()
}

/// Strategies under which the members of a group together own every queue exactly once.
fn partitioning_strategies() -> Vec<Strategy> {
    vec![
        Strategy::Averagely,
        Strategy::AveragelyByCircle,
        Strategy::ConsistentHash { virtual_nodes: 1 },
        Strategy::ConsistentHash { virtual_nodes: 10 },
        Strategy::ByMachineRoom {
            consumer_idcs: all_rooms(),
        },
        Strategy::MachineRoomNearby {
            inner: Box::new(Strategy::Averagely),
            resolver: Arc::new(ByName),
        },
        Strategy::MachineRoomNearby {
            inner: Box::new(Strategy::ConsistentHash { virtual_nodes: 3 }),
            resolver: Arc::new(ByName),
        },
    ]
}

/// Every strategy that runs Java's `check`, i.e. all but `ByConfig`.
fn checked_strategies() -> Vec<Strategy> {
    let mut all = partitioning_strategies();
    all.push(Strategy::ByMachineRoom {
        consumer_idcs: ["hz".to_owned(), "\u{1F600}".to_owned()].into(),
    });
    all.push(Strategy::MachineRoomNearby {
        inner: Box::new(Strategy::AveragelyByCircle),
        resolver: Arc::new(ByName),
    });
    all
}

fn owners(
    strategy: &Strategy,
    queues: &[MessageQueue],
    consumers: &[String],
) -> BTreeMap<MessageQueue, usize> {
    let mut owners = BTreeMap::new();
    for cid in consumers {
        for mq in allocate(strategy, cid, queues, consumers) {
            *owners.entry(mq).or_insert(0) += 1;
        }
    }
    owners
}

proptest! {
    #[test]
    fn every_queue_has_exactly_one_owner(queues in queue_set(), consumers in consumer_set()) {
        let expected: BTreeMap<MessageQueue, usize> =
            queues.iter().map(|q| (q.clone(), 1)).collect();
        for strategy in partitioning_strategies() {
            prop_assert_eq!(&owners(&strategy, &queues, &consumers), &expected, "{:?}", strategy);
        }
    }

    #[test]
    fn non_member_gets_nothing(queues in queue_set(), consumers in consumer_set()) {
        // Generated ids never contain '!'.
        for strategy in checked_strategies() {
            prop_assert!(allocate(&strategy, "absent!", &queues, &consumers).is_empty());
            prop_assert!(allocate(&strategy, "", &queues, &consumers).is_empty());
        }
    }

    #[test]
    fn averaging_shares_differ_by_at_most_one(
        queues in queue_set(),
        consumers in consumer_set(),
    ) {
        for strategy in [Strategy::Averagely, Strategy::AveragelyByCircle] {
            let sizes: Vec<usize> = consumers
                .iter()
                .map(|cid| allocate(&strategy, cid, &queues, &consumers).len())
                .collect();
            let (min, max) = (sizes.iter().min(), sizes.iter().max());
            prop_assert!(max.zip(min).is_some_and(|(max, min)| max - min <= 1), "{sizes:?}");
        }
    }

    #[test]
    fn single_pass_strategies_return_sorted_queues(
        queues in queue_set(),
        consumers in consumer_set(),
    ) {
        for strategy in [
            Strategy::Averagely,
            Strategy::AveragelyByCircle,
            Strategy::ConsistentHash { virtual_nodes: 10 },
            Strategy::ByMachineRoom { consumer_idcs: all_rooms() },
        ] {
            for cid in &consumers {
                let got = allocate(&strategy, cid, &queues, &consumers);
                prop_assert!(got.is_sorted_by(|a, b| a < b), "{:?}: {:?}", strategy, got);
            }
        }
    }

    #[test]
    fn consistent_hash_moves_queues_only_to_a_joiner(
        queues in queue_set(),
        consumers in consumer_set(),
        joiner in "[cd][0-9]{0,2}",
    ) {
        let strategy = Strategy::ConsistentHash { virtual_nodes: 10 };
        let mut grown = consumers.clone();
        grown.push(joiner);
        for cid in &consumers {
            let before: BTreeSet<MessageQueue> =
                allocate(&strategy, cid, &queues, &consumers).into_iter().collect();
            let after: BTreeSet<MessageQueue> =
                allocate(&strategy, cid, &queues, &grown).into_iter().collect();
            prop_assert!(after.is_subset(&before), "{cid}: {after:?} not within {before:?}");
        }
    }
}

// Every member under every strategy in each case, and MD5 is unoptimised in test builds: fewer
// cases keep these two at a few seconds.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn input_order_is_irrelevant(
        (queues, shuffled_queues) in queue_set()
            .prop_flat_map(|q| (Just(q.clone()), Just(q).prop_shuffle())),
        (consumers, shuffled_consumers) in consumer_set()
            .prop_flat_map(|c| (Just(c.clone()), Just(c).prop_shuffle())),
    ) {
        for strategy in checked_strategies() {
            for cid in &consumers {
                prop_assert_eq!(
                    allocate(&strategy, cid, &queues, &consumers),
                    allocate(&strategy, cid, &shuffled_queues, &shuffled_consumers),
                    "{:?} for {}", strategy, cid
                );
            }
        }
    }

    #[test]
    fn duplicate_queues_are_collapsed(queues in queue_set(), consumers in consumer_set()) {
        let doubled: Vec<MessageQueue> = queues.iter().chain(&queues).cloned().collect();
        for strategy in checked_strategies() {
            for cid in &consumers {
                prop_assert_eq!(
                    allocate(&strategy, cid, &queues, &consumers),
                    allocate(&strategy, cid, &doubled, &consumers)
                );
            }
        }
    }
}

#[test]
fn by_config_ignores_membership() {
    let configured = vec![MessageQueue::new("T", "b", 3)];
    let strategy = Strategy::ByConfig {
        queues: configured.clone(),
    };
    assert_eq!(allocate(&strategy, "absent!", &[], &[]), configured);
}
