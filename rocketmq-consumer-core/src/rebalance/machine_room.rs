//! The machine-room strategies: `AllocateMessageQueueByMachineRoom` and
//! `AllocateMachineRoomNearby`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use proto::queue::java_string_cmp;

use super::MachineRoomResolver;
use crate::MessageQueue;

/// `AllocateMessageQueueByMachineRoom.allocate`, after the caller found `index`.
///
/// Java keeps, in `mqAll` order, the queues whose `brokerName.split("@")` has exactly two parts
/// with the first in `consumeridcs` (`premqAll`), gives each consumer a block of
/// `premqAll.size() / n` and deals the `rem` left over one each to the first `rem` consumers,
/// taken from the tail: consumer `i < rem` also gets `premqAll[i + mod * n]`.
pub(crate) fn by_machine_room(
    consumer_idcs: &BTreeSet<String>,
    index: usize,
    queues: &[&MessageQueue],
    consumers: usize,
) -> Vec<MessageQueue> {
    let in_rooms: Vec<&MessageQueue> = queues
        .iter()
        .copied()
        .filter(|mq| {
            room_of_broker_name(mq.broker_name()).is_some_and(|r| consumer_idcs.contains(r))
        })
        .collect();
    let per_consumer = in_rooms.len() / consumers;
    let rem = in_rooms.len() % consumers;
    let start = per_consumer * index;
    let mut result: Vec<MessageQueue> = in_rooms
        .get(start..start + per_consumer)
        .unwrap_or_default()
        .iter()
        .map(|&q| q.clone())
        .collect();
    if rem > index {
        // index + per_consumer * n < per_consumer * n + rem = in_rooms.len().
        result.extend(
            in_rooms
                .get(index + per_consumer * consumers)
                .map(|&q| q.clone()),
        );
    }
    result
}

/// The room part of a `room@broker` broker name, with the semantics of Java's
/// `brokerName.split("@")` and its `temp.length == 2` test.
///
/// `String.split(regex)` drops trailing empty strings (limit 0) but keeps a leading one, and
/// returns the whole string when nothing matches. So `"r@b@"` and `"r@b@@"` count as two parts
/// (`"r"`), `"@b"` as two parts with an empty room, and `"r@"`, `"@"`, `"r@b@c"` and `"r@@b"` not.
fn room_of_broker_name(broker_name: &str) -> Option<&str> {
    // Dropping the trailing empty parts; what is left ends in a non-empty part (or is empty).
    let kept = broker_name.trim_end_matches('@');
    // No '@' left: one part (or none); Java's `temp.length == 2` fails.
    let (room, broker) = kept.split_once('@')?;
    // `broker` is non-empty here, so the name has exactly two parts iff it holds no other '@'.
    (!broker.contains('@')).then_some(room)
}

/// `AllocateMachineRoomNearby.allocate`, after the caller ran Java's `check`.
///
/// Java groups queues and consumers by room in `TreeMap`s (so rooms come in Java string order)
/// and keeps each room's members in input order; then it concatenates
/// 1. the inner strategy's share of the own room's queues among the own room's consumers, and
/// 2. for each room (in order) that has queues but no consumer, the inner strategy's share of
///    that room's queues among all consumers.
///
/// An empty room from the resolver makes Java throw `IllegalArgumentException`, which
/// `RebalanceImpl` catches, keeping its old assignment; here it yields no queue.
///
/// `inner` is the inner strategy, run on one room's queues and consumers (lists in
/// `RebalanceImpl` order).
pub(crate) fn machine_room_nearby(
    inner: impl Fn(&[&MessageQueue], &[&str]) -> Vec<MessageQueue>,
    resolver: &dyn MachineRoomResolver,
    current_id: &str,
    queues: &[&MessageQueue],
    consumer_ids: &[&str],
) -> Vec<MessageQueue> {
    let mut queues_by_room: BTreeMap<Room, Vec<&MessageQueue>> = BTreeMap::new();
    for &mq in queues {
        let room = resolver.broker_room(mq);
        if room.is_empty() {
            return Vec::new();
        }
        queues_by_room.entry(Room(room)).or_default().push(mq);
    }
    let mut consumers_by_room: BTreeMap<Room, Vec<&str>> = BTreeMap::new();
    for &cid in consumer_ids {
        let room = resolver.consumer_room(cid);
        if room.is_empty() {
            return Vec::new();
        }
        consumers_by_room.entry(Room(room)).or_default().push(cid);
    }

    let mut result = Vec::new();
    let own_room = Room(resolver.consumer_room(current_id));
    // Java: `mr2Mq.remove(currentMachineRoom)`, so step 2 never revisits the own room.
    if let Some(own_queues) = queues_by_room.remove(&own_room) {
        // The own room always has consumers (at least `current_id`) with a resolver that depends
        // only on its argument; an empty list otherwise makes the inner strategy return nothing
        // (Java would throw on its null list).
        let own_consumers = consumers_by_room
            .get(&own_room)
            .map_or(&[][..], Vec::as_slice);
        result.extend(inner(&own_queues, own_consumers));
    }
    for (room, room_queues) in &queues_by_room {
        if !consumers_by_room.contains_key(room) {
            result.extend(inner(room_queues, consumer_ids));
        }
    }
    result
}

/// A machine room name ordered as a `TreeMap<String, _>` key is in Java: by UTF-16 code units.
#[derive(PartialEq, Eq)]
struct Room(String);

impl Ord for Room {
    fn cmp(&self, other: &Self) -> Ordering {
        java_string_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for Room {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rebalance::{Strategy, allocate};

    #[test]
    fn broker_name_split_follows_java_string_split() {
        // Exactly two parts after Java drops trailing empty strings.
        assert_eq!(room_of_broker_name("r@b"), Some("r"));
        assert_eq!(room_of_broker_name("r@b@"), Some("r"));
        assert_eq!(room_of_broker_name("r@b@@"), Some("r"));
        assert_eq!(room_of_broker_name("@b"), Some(""));
        // One part, zero parts, three parts.
        assert_eq!(room_of_broker_name("rb"), None);
        assert_eq!(room_of_broker_name(""), None);
        assert_eq!(room_of_broker_name("r@"), None);
        assert_eq!(room_of_broker_name("r@@"), None);
        assert_eq!(room_of_broker_name("@"), None);
        assert_eq!(room_of_broker_name("@@"), None);
        assert_eq!(room_of_broker_name("r@@b"), None);
        assert_eq!(room_of_broker_name("r@b@c"), None);
        assert_eq!(room_of_broker_name("@@b"), None);
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|&s| s.to_owned()).collect()
    }

    fn brief(result: &[MessageQueue]) -> Vec<String> {
        result
            .iter()
            .map(|q| format!("{}#{}", q.broker_name(), q.queue_id()))
            .collect()
    }

    // Queues: hz@b0 #0..3, sh@b1 #0..3, bj@b2 #0..1, and "plain" #0 (no room). idcs = {hz, sh}.
    // premqAll (mqAll order, brokerName "hz@b0" < "sh@b1"): hz@b0#0..#3, sh@b1#0..#3, 8 queues.
    // n = 3: mod = 8 / 3 = 2, rem = 2.
    //   c0: premqAll[0..2] = hz#0 hz#1, and rem 2 > 0 adds premqAll[0 + 2*3] = sh#2
    //   c1: premqAll[2..4] = hz#2 hz#3, and rem 2 > 1 adds premqAll[1 + 6] = sh#3
    //   c2: premqAll[4..6] = sh#0 sh#1
    #[test]
    fn by_machine_room_blocks_then_remainder() {
        let mut qs = Vec::new();
        for i in 0..4 {
            qs.push(MessageQueue::new("T", "hz@b0", i));
            qs.push(MessageQueue::new("T", "sh@b1", i));
        }
        qs.push(MessageQueue::new("T", "bj@b2", 0));
        qs.push(MessageQueue::new("T", "bj@b2", 1));
        qs.push(MessageQueue::new("T", "plain", 0));
        let strategy = Strategy::ByMachineRoom {
            consumer_idcs: ["hz", "sh"].into_iter().map(str::to_owned).collect(),
        };
        let cids = ids(&["c0", "c1", "c2"]);
        let got = |c: &str| brief(&allocate(&strategy, c, &qs, &cids));
        assert_eq!(got("c0"), ["hz@b0#0", "hz@b0#1", "sh@b1#2"]);
        assert_eq!(got("c1"), ["hz@b0#2", "hz@b0#3", "sh@b1#3"]);
        assert_eq!(got("c2"), ["sh@b1#0", "sh@b1#1"]);
    }

    // Fewer selected queues than consumers: mod = 0, so only the remainder is dealt.
    #[test]
    fn by_machine_room_fewer_queues_than_consumers() {
        let qs = vec![MessageQueue::new("T", "hz@b0", 0)];
        let strategy = Strategy::ByMachineRoom {
            consumer_idcs: ["hz".to_owned()].into_iter().collect(),
        };
        let cids = ids(&["a", "b"]);
        assert_eq!(brief(&allocate(&strategy, "a", &qs, &cids)), ["hz@b0#0"]);
        assert!(allocate(&strategy, "b", &qs, &cids).is_empty());
    }

    use crate::rebalance::RoomPrefix;

    // Rooms: queues in hz (hz-b #0..3), sh (sh-b #0..1), gz (gz-b #0..2); consumers hz-1, hz-2,
    // sh-1. gz has no consumer, so its 3 queues are shared by all 3 consumers (sorted:
    // hz-1, hz-2, sh-1) with AVG: one each. hz's 4 go to hz-1/hz-2 with AVG: 2 each. sh's 2 go to
    // sh-1. Order: own room first, then consumer-less rooms in TreeMap order.
    #[test]
    fn nearby_own_room_then_orphan_rooms() {
        let mut qs = Vec::new();
        for i in 0..4 {
            qs.push(MessageQueue::new("T", "hz-b", i));
        }
        for i in 0..2 {
            qs.push(MessageQueue::new("T", "sh-b", i));
        }
        for i in 0..3 {
            qs.push(MessageQueue::new("T", "gz-b", i));
        }
        let strategy = Strategy::MachineRoomNearby {
            inner: Box::new(Strategy::Averagely),
            resolver: Arc::new(RoomPrefix { separator: '-' }),
        };
        let cids = ids(&["sh-1", "hz-2", "hz-1"]);
        let got = |c: &str| brief(&allocate(&strategy, c, &qs, &cids));
        assert_eq!(got("hz-1"), ["hz-b#0", "hz-b#1", "gz-b#0"]);
        assert_eq!(got("hz-2"), ["hz-b#2", "hz-b#3", "gz-b#1"]);
        assert_eq!(got("sh-1"), ["sh-b#0", "sh-b#1", "gz-b#2"]);
        assert!(got("bj-1").is_empty());
    }

    #[test]
    fn nearby_empty_room_yields_nothing() {
        let qs = vec![
            MessageQueue::new("T", "-b", 0),
            MessageQueue::new("T", "hz-b", 0),
        ];
        let strategy = Strategy::MachineRoomNearby {
            inner: Box::new(Strategy::Averagely),
            resolver: Arc::new(RoomPrefix { separator: '-' }),
        };
        assert!(allocate(&strategy, "hz-1", &qs, &ids(&["hz-1"])).is_empty());
    }

    #[test]
    fn room_order_is_java_string_order() {
        let mut rooms = [Room("\u{FF5E}".to_owned()), Room("\u{1F600}".to_owned())];
        rooms.sort();
        assert_eq!(rooms[0].0, "\u{1F600}");
    }
}
