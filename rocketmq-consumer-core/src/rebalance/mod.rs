//! Queue allocation: which queues of a topic this consumer owns in a CLUSTERING group.
//!
//! RocketMQ has no coordinator for client-side rebalancing: every member of a group fetches the
//! same queue list (the topic route) and the same member list (`GET_CONSUMER_LIST_BY_GROUP`),
//! runs the same deterministic strategy, and keeps the share computed for its own client id.
//! A group only avoids double-assigned or orphaned queues if every member computes the same
//! partition, so each strategy here is a step-by-step port of the Java client's class of the
//! same name (package `org.apache.rocketmq.client.consumer.rebalance`), down to the order of the
//! result. `remoting-protocol.md` §7.11 has the algorithms and the paths.
//!
//! [`allocate()`] is a pure function: no clock, no randomness, no I/O, and the caller's input order
//! does not matter, because it first sorts the inputs as Java's `RebalanceImpl.rebalanceByTopic`
//! does before it calls a strategy.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use crate::MessageQueue;

mod allocate;
mod consistent_hash;
mod diff;
mod machine_room;

pub use allocate::allocate;
pub use diff::{RebalanceDiff, diff};

/// Virtual nodes per consumer on the consistent-hash ring when none is configured.
///
/// Java's `AllocateMessageQueueConsistentHash()` no-argument constructor uses 10.
pub const DEFAULT_VIRTUAL_NODES: usize = 10;

/// An allocation strategy: one variant per Java `AllocateMessageQueueStrategy` implementation.
///
/// Every member of a consumer group must use the same strategy with the same parameters; the
/// broker does not check it, and mismatched strategies silently double-assign or orphan queues.
/// [`Strategy::name`] returns the Java `getName()` value, which is what Java tools display.
#[non_exhaustive]
#[derive(Clone)]
pub enum Strategy {
    /// Contiguous blocks, Java's default (`AllocateMessageQueueAveragely`, `"AVG"`).
    ///
    /// With `m` queues and `n` consumers, the first `m % n` consumers get `m / n + 1` queues and
    /// the others `m / n`, each a contiguous run of the sorted queue list.
    Averagely,
    /// Round robin (`AllocateMessageQueueAveragelyByCircle`, `"AVG_BY_CIRCLE"`): consumer `i`
    /// gets every queue whose index `j` in the sorted list has `j % n == i`.
    AveragelyByCircle,
    /// A fixed list (`AllocateMessageQueueByConfig`, `"CONFIG"`): returned verbatim whatever the
    /// topic's queues and the group's members are, exactly as Java does (it runs no checks).
    ByConfig {
        /// The queues this consumer takes, in the order they are returned.
        queues: Vec<MessageQueue>,
    },
    /// Queues of selected machine rooms (`AllocateMessageQueueByMachineRoom`, `"MACHINE_ROOM"`).
    ///
    /// Only queues whose broker name has the form `room@broker` with `room` in `consumer_idcs`
    /// are shared out (contiguous blocks, the remainder dealt one each); all others are left to
    /// nobody.
    ByMachineRoom {
        /// The machine rooms (IDCs) whose brokers this group consumes from.
        consumer_idcs: BTreeSet<String>,
    },
    /// Same-room first (`AllocateMachineRoomNearby`, `"MACHINE_ROOM_NEARBY-<inner>"`).
    ///
    /// The queues of a room that has consumers are shared among that room's consumers only, with
    /// `inner`; the queues of a room with no consumer are shared among all consumers, with
    /// `inner`.
    MachineRoomNearby {
        /// The strategy that shares out each room's queues.
        inner: Box<Self>,
        /// Says which room each broker queue and each consumer is deployed in.
        resolver: Arc<dyn MachineRoomResolver>,
    },
    /// A consistent-hash ring of consumers (`AllocateMessageQueueConsistentHash`,
    /// `"CONSISTENT_HASH"`): a queue goes to the consumer whose virtual node follows the queue's
    /// hash on the ring, so a membership change moves few queues.
    ConsistentHash {
        /// Virtual nodes per consumer; Java's default is [`DEFAULT_VIRTUAL_NODES`]. With 0 the
        /// ring is empty and, as in Java, nobody gets any queue.
        virtual_nodes: usize,
    },
}

impl Strategy {
    /// The name Java's `AllocateMessageQueueStrategy.getName()` returns for this strategy.
    ///
    /// `"AVG"`, `"AVG_BY_CIRCLE"`, `"CONFIG"`, `"MACHINE_ROOM"`, `"CONSISTENT_HASH"`, or
    /// `"MACHINE_ROOM_NEARBY-"` followed by the inner strategy's name.
    pub fn name(&self) -> String {
        match self {
            Self::Averagely => "AVG".to_owned(),
            Self::AveragelyByCircle => "AVG_BY_CIRCLE".to_owned(),
            Self::ByConfig { .. } => "CONFIG".to_owned(),
            Self::ByMachineRoom { .. } => "MACHINE_ROOM".to_owned(),
            // AllocateMachineRoomNearby.getName(): "MACHINE_ROOM_NEARBY" + "-" + inner.getName().
            Self::MachineRoomNearby { inner, .. } => {
                format!("MACHINE_ROOM_NEARBY-{}", inner.name())
            }
            Self::ConsistentHash { .. } => "CONSISTENT_HASH".to_owned(),
        }
    }
}

impl Default for Strategy {
    /// [`Strategy::Averagely`], the Java push and lite-pull consumers' default.
    fn default() -> Self {
        Self::Averagely
    }
}

impl fmt::Debug for Strategy {
    // By hand because the resolver is a trait object without `Debug`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Averagely => f.write_str("Averagely"),
            Self::AveragelyByCircle => f.write_str("AveragelyByCircle"),
            Self::ByConfig { queues } => {
                f.debug_struct("ByConfig").field("queues", queues).finish()
            }
            Self::ByMachineRoom { consumer_idcs } => f
                .debug_struct("ByMachineRoom")
                .field("consumer_idcs", consumer_idcs)
                .finish(),
            Self::MachineRoomNearby { inner, .. } => f
                .debug_struct("MachineRoomNearby")
                .field("inner", inner)
                .finish_non_exhaustive(),
            Self::ConsistentHash { virtual_nodes } => f
                .debug_struct("ConsistentHash")
                .field("virtual_nodes", virtual_nodes)
                .finish(),
        }
    }
}

/// Says which machine room (data centre) a broker queue or a consumer is deployed in, for
/// [`Strategy::MachineRoomNearby`].
///
/// Java's `AllocateMachineRoomNearby.MachineRoomResolver`. Both answers must be non-empty and
/// must depend only on their argument, so that every member of the group groups alike. Java
/// throws when an answer is empty; [`allocate()`] then returns no queue (see there).
pub trait MachineRoomResolver: Send + Sync {
    /// The room of the broker that hosts `queue` (Java `brokerDeployIn`).
    fn broker_room(&self, queue: &MessageQueue) -> String;

    /// The room of the consumer with client id `client_id` (Java `consumerDeployIn`).
    fn consumer_room(&self, client_id: &str) -> String;
}

/// Rooms by naming convention: the room is the text before the first `separator` of the
/// broker name and of the client id (`hz-broker-a` and `hz-10.0.0.5@1234#1` are in room `hz`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoomPrefix {
    /// What ends the room's name.
    pub separator: char,
}

impl MachineRoomResolver for RoomPrefix {
    fn broker_room(&self, queue: &MessageQueue) -> String {
        self.room_of(queue.broker_name())
    }

    fn consumer_room(&self, client_id: &str) -> String {
        self.room_of(client_id)
    }
}

impl RoomPrefix {
    fn room_of(&self, name: &str) -> String {
        name.split(self.separator)
            .next()
            .unwrap_or_default()
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_java_get_name() {
        assert_eq!(Strategy::Averagely.name(), "AVG");
        assert_eq!(Strategy::AveragelyByCircle.name(), "AVG_BY_CIRCLE");
        assert_eq!(Strategy::ByConfig { queues: Vec::new() }.name(), "CONFIG");
        let idcs = BTreeSet::new();
        assert_eq!(
            Strategy::ByMachineRoom {
                consumer_idcs: idcs
            }
            .name(),
            "MACHINE_ROOM"
        );
        assert_eq!(
            Strategy::ConsistentHash { virtual_nodes: 10 }.name(),
            "CONSISTENT_HASH"
        );
        let nearby = Strategy::MachineRoomNearby {
            inner: Box::new(Strategy::AveragelyByCircle),
            resolver: Arc::new(RoomPrefix { separator: '-' }),
        };
        assert_eq!(nearby.name(), "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE");
    }

    #[test]
    fn default_is_java_default() {
        assert_eq!(Strategy::default().name(), "AVG");
    }

    #[test]
    fn debug_names_inner_strategy() {
        let nearby = Strategy::MachineRoomNearby {
            inner: Box::new(Strategy::ConsistentHash { virtual_nodes: 3 }),
            resolver: Arc::new(RoomPrefix { separator: '-' }),
        };
        assert_eq!(
            format!("{nearby:?}"),
            "MachineRoomNearby { inner: ConsistentHash { virtual_nodes: 3 }, .. }"
        );
    }
}
