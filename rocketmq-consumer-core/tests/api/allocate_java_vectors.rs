//! Pins `rebalance::allocate` to hand-computed results of the Java client's strategies.
//!
//! Each vector follows the Java source step by step (the classes of package
//! `org.apache.rocketmq.client.consumer.rebalance`, called after
//! `RebalanceImpl.rebalanceByTopic` sorted `mqAll` and `cidAll`); the comments show the
//! derivation. For consistent hashing, the MD5 prefixes in the comments were
//! computed outside Rust (Python's `hashlib.md5`, first four bytes, big-endian) and the tests
//! re-check those tables with the `md-5` crate before trusting the expected assignment.

use std::collections::BTreeSet;
use std::sync::Arc;

use md5::{Digest, Md5};
use rocketmq_consumer_core::MessageQueue;
use rocketmq_consumer_core::rebalance::{RoomPrefix, Strategy, allocate};

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|&s| s.to_owned()).collect()
}

/// `broker#queueId` of each queue, to keep expectations short.
fn brief(result: &[MessageQueue]) -> Vec<String> {
    result
        .iter()
        .map(|q| format!("{}#{}", q.broker_name(), q.queue_id()))
        .collect()
}

fn md5_prefix(key: &str) -> u32 {
    let digest = Md5::digest(key.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// Checks a hand-written `(key, hash)` table against MD5, so a typo in a derivation fails loudly.
fn assert_hashes(table: &[(&str, u32)]) {
    for &(key, hash) in table {
        assert_eq!(md5_prefix(key), hash, "MD5 prefix of {key:?}");
    }
}

// AllocateMessageQueueAveragely, m = 10, n = 4:
//   mod = 10 % 4 = 2
//   c0, c1 (index < mod): averageSize = 10/4 + 1 = 3, startIndex = index * 3 -> 0, 3
//   c2, c3: averageSize = 10/4 = 2, startIndex = index * 2 + mod -> 6, 8
//   range = min(averageSize, 10 - startIndex): 3, 3, 2, 2
#[test]
fn averagely_m10_n4() {
    let qs: Vec<MessageQueue> = (0..10).map(|i| MessageQueue::new("T", "b", i)).collect();
    let cids = ids(&["c0", "c1", "c2", "c3"]);
    let got = |c: &str| brief(&allocate(&Strategy::Averagely, c, &qs, &cids));
    assert_eq!(got("c0"), ["b#0", "b#1", "b#2"]);
    assert_eq!(got("c1"), ["b#3", "b#4", "b#5"]);
    assert_eq!(got("c2"), ["b#6", "b#7"]);
    assert_eq!(got("c3"), ["b#8", "b#9"]);
}

// mqAll sorted by MessageQueue.compareTo: brokerName as a string ("broker-a" < "broker-b"),
// queueId as an int (2 < 9 < 10, where string order would put "10" first).
//   sorted: a#2, a#9, a#10, b#0, b#1
// cidAll sorted as strings: "10.0.0.10@1#1" < "10.0.0.1@9#1" < "10.0.0.2@5#1" (at index 8,
// '0' (0x30) < '@' (0x40) puts "...10@" before "...1@"; at index 7, '1' < '2').
// AVG, m = 5, n = 3: mod = 2; index 0, 1 take 2 from 0 and 2; index 2 takes 1 from 2*1+2 = 4.
#[test]
fn averagely_sorts_like_rebalance_impl() {
    let qs = vec![
        MessageQueue::new("T", "broker-b", 1),
        MessageQueue::new("T", "broker-a", 10),
        MessageQueue::new("T", "broker-b", 0),
        MessageQueue::new("T", "broker-a", 2),
        MessageQueue::new("T", "broker-a", 9),
    ];
    let cids = ids(&["10.0.0.2@5#1", "10.0.0.1@9#1", "10.0.0.10@1#1"]);
    let got = |c: &str| brief(&allocate(&Strategy::Averagely, c, &qs, &cids));
    assert_eq!(got("10.0.0.10@1#1"), ["broker-a#2", "broker-a#9"]);
    assert_eq!(got("10.0.0.1@9#1"), ["broker-a#10", "broker-b#0"]);
    assert_eq!(got("10.0.0.2@5#1"), ["broker-b#1"]);
}

// Java's String.compareTo uses UTF-16 code units: U+1F600 is 0xD83D 0xDE00 and sorts before
// U+FF5E and U+FFFD, although its UTF-8 bytes (F0 ...) sort after theirs (EF ...).
//   mqAll: "b\u{1F600}"#0, "b\u{FF5E}"#0;  cidAll: "\u{1F600}", "\u{FF5E}", "\u{FFFD}"
// AVG, m = 2 <= n = 3: averageSize 1, mod = 2; index 0 -> 0, index 1 -> 1, index 2 -> start 4.
#[test]
fn averagely_uses_java_string_order() {
    let qs = vec![
        MessageQueue::new("T", "b\u{FF5E}", 0),
        MessageQueue::new("T", "b\u{1F600}", 0),
    ];
    let cids = ids(&["\u{FFFD}", "\u{FF5E}", "\u{1F600}"]);
    let got = |c: &str| brief(&allocate(&Strategy::Averagely, c, &qs, &cids));
    assert_eq!(got("\u{1F600}"), ["b\u{1F600}#0"]);
    assert_eq!(got("\u{FF5E}"), ["b\u{FF5E}#0"]);
    assert!(got("\u{FFFD}").is_empty());
}

// AllocateMessageQueueAveragelyByCircle, m = 5, n = 3: i from index, keep i % 3 == index.
//   c0: 0, 3   c1: 1, 4   c2: 2
// and m = 2, n = 3: c2's loop starts at i = 2 = m and keeps nothing.
#[test]
fn averagely_by_circle_vectors() {
    let cids = ids(&["c0", "c1", "c2"]);
    let five: Vec<MessageQueue> = (0..5).map(|i| MessageQueue::new("T", "b", i)).collect();
    let got = |c: &str| brief(&allocate(&Strategy::AveragelyByCircle, c, &five, &cids));
    assert_eq!(got("c0"), ["b#0", "b#3"]);
    assert_eq!(got("c1"), ["b#1", "b#4"]);
    assert_eq!(got("c2"), ["b#2"]);
    let two = &five[..2];
    assert!(allocate(&Strategy::AveragelyByCircle, "c2", two, &cids).is_empty());
}

// AllocateMessageQueueByMachineRoom, consumeridcs = {"", "hz"}, n = 2.
// brokerName.split("@") keeps a leading empty part and drops trailing ones:
//   "hz@b0"  -> [hz, b0]      2 parts, hz selected
//   "hz@b1@" -> [hz, b1]      2 parts, hz selected
//   "@b2"    -> ["", b2]      2 parts, "" selected
//   "hz@"    -> [hz]          1 part
//   "hz@@b3" -> [hz, "", b3]  3 parts
//   "sh@b4"  -> [sh, b4]      sh not selected
// mqAll sorted by brokerName ("@b2" < "hz@" < "hz@@b3" < "hz@b0" < "hz@b1@" < "sh@b4", since
// '@' = 0x40 < 'b' and "hz@" is a prefix), two queues each:
//   premqAll = @b2#0, @b2#1, hz@b0#0, hz@b0#1, hz@b1@#0, hz@b1@#1   (6 queues)
//   mod = 6 / 2 = 3, rem = 0:  c0 -> premqAll[0..3], c1 -> premqAll[3..6]
#[test]
fn by_machine_room_split_semantics() {
    let mut qs = Vec::new();
    for broker in ["hz@b0", "hz@b1@", "@b2", "hz@", "hz@@b3", "sh@b4"] {
        qs.push(MessageQueue::new("T", broker, 0));
        qs.push(MessageQueue::new("T", broker, 1));
    }
    let strategy = Strategy::ByMachineRoom {
        consumer_idcs: [String::new(), "hz".to_owned()].into(),
    };
    let cids = ids(&["c1", "c0"]);
    let got = |c: &str| brief(&allocate(&strategy, c, &qs, &cids));
    assert_eq!(got("c0"), ["@b2#0", "@b2#1", "hz@b0#0"]);
    assert_eq!(got("c1"), ["hz@b0#1", "hz@b1@#0", "hz@b1@#1"]);
}

// ByMachineRoom, 5 selected queues among n = 3: mod = 1, rem = 2.
//   c0: premqAll[0..1] + premqAll[0 + 1*3] = q0, q3
//   c1: premqAll[1..2] + premqAll[1 + 3]   = q1, q4
//   c2: premqAll[2..3]                     = q2  (rem 2 > 2 is false)
#[test]
fn by_machine_room_remainder_from_the_tail() {
    let qs: Vec<MessageQueue> = (0..5).map(|i| MessageQueue::new("T", "hz@b", i)).collect();
    let strategy = Strategy::ByMachineRoom {
        consumer_idcs: ["hz".to_owned()].into(),
    };
    let cids = ids(&["c0", "c1", "c2"]);
    let got = |c: &str| brief(&allocate(&strategy, c, &qs, &cids));
    assert_eq!(got("c0"), ["hz@b#0", "hz@b#3"]);
    assert_eq!(got("c1"), ["hz@b#1", "hz@b#4"]);
    assert_eq!(got("c2"), ["hz@b#2"]);
}

// AllocateMessageQueueConsistentHash(2), cidAll = [c1, c2], queues T/broker-a/0..7.
// Ring (TreeMap by hash) of VirtualNode keys "cid-k":
//   0x0bd54963 c2-1 | 0x31831c51 c2-0 | 0x70f83886 c1-1 | 0xe7a7eb0b c1-0
// Queue keys are MessageQueue.toString(); routeNode takes the first ring key >= hash:
//   #0 0x612f4674 -> 0x70f83886 c1    #4 0xbd78ce79 -> 0xe7a7eb0b c1
//   #1 0x8b35eabf -> 0xe7a7eb0b c1    #5 0x12d49d7d -> 0x31831c51 c2
//   #2 0x004e3e1b -> 0x0bd54963 c2    #6 0x87472082 -> 0xe7a7eb0b c1
//   #3 0xdb778d95 -> 0xe7a7eb0b c1    #7 0x43e0f785 -> 0x70f83886 c1
#[test]
fn consistent_hash_two_virtual_nodes() {
    assert_hashes(&[
        ("c1-0", 0xe7a7_eb0b),
        ("c1-1", 0x70f8_3886),
        ("c2-0", 0x3183_1c51),
        ("c2-1", 0x0bd5_4963),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=0]",
            0x612f_4674,
        ),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=1]",
            0x8b35_eabf,
        ),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=2]",
            0x004e_3e1b,
        ),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=3]",
            0xdb77_8d95,
        ),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=4]",
            0xbd78_ce79,
        ),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=5]",
            0x12d4_9d7d,
        ),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=6]",
            0x8747_2082,
        ),
        (
            "MessageQueue [topic=T, brokerName=broker-a, queueId=7]",
            0x43e0_f785,
        ),
    ]);
    let qs: Vec<MessageQueue> = (0..8)
        .map(|i| MessageQueue::new("T", "broker-a", i))
        .collect();
    let cids = ids(&["c2", "c1"]);
    let strategy = Strategy::ConsistentHash { virtual_nodes: 2 };
    let got = |c: &str| brief(&allocate(&strategy, c, &qs, &cids));
    assert_eq!(
        got("c1"),
        [
            "broker-a#0",
            "broker-a#1",
            "broker-a#3",
            "broker-a#4",
            "broker-a#6",
            "broker-a#7"
        ]
    );
    assert_eq!(got("c2"), ["broker-a#2", "broker-a#5"]);
}

// AllocateMessageQueueConsistentHash() (10 virtual nodes), three realistic client ids
//   A = 192.168.0.1@1234#1, B = 192.168.0.2@2345#2, C = 192.168.0.3@3456#3
// 30 ring entries; the ones the queues land on (and their predecessors) are:
//   0x0343ac08 B-0 (smallest key) ... 0x3ebe9d1e B-9 ... 0x7b63baac A-4 ... 0x8b8e8ac7 A-0 ...
//   0xd6996a3d A-3, 0xdfb127a3 B-2, ..., 0xef9cbfce B-6, 0xfc48aa86 A-6 (largest key)
// Queues TopicTest/broker-a|b/0..3:
//   a#0 0x767d59fc -> 0x7b63baac A-4      b#0 0x8047d940 -> 0x8b8e8ac7 A-0
//   a#1 0xffc8cd39 -> wraps to B-0        b#1 0x28132b90 -> 0x3ebe9d1e B-9
//   a#2 0x32df78bf -> 0x3ebe9d1e B-9      b#2 0xd666a43e -> 0xd6996a3d A-3
//   a#3 0xd9b9174a -> 0xdfb127a3 B-2      b#3 0xf6cc3f9e -> 0xfc48aa86 A-6
// C owns no successor of any queue and gets nothing. The test lists all 30 ring hashes (A-k,
// B-k, C-k for k = 0..9), checks them and the queue hashes against MD5, and re-derives each
// successor from that table before comparing with `allocate`.
#[test]
fn consistent_hash_default_virtual_nodes_with_wrap_around() {
    let (a, b, c) = (
        "192.168.0.1@1234#1",
        "192.168.0.2@2345#2",
        "192.168.0.3@3456#3",
    );
    let ring: Vec<(String, u32)> = [
        (
            a,
            [
                0x8b8e8ac7, 0xd0843421, 0x05c914ef, 0xd6996a3d, 0x7b63baac, 0xb16622ef, 0xfc48aa86,
                0xc8f4d05b, 0x5b9d40a2, 0x7c8b09c1,
            ],
        ),
        (
            b,
            [
                0x0343ac08, 0x751a3952, 0xdfb127a3, 0xa2035418, 0x4f7c54b8, 0xe73de3dd, 0xef9cbfce,
                0x44d47c3c, 0xe2ce57fb, 0x3ebe9d1e,
            ],
        ),
        (
            c,
            [
                0x5182f132, 0x97ffbd6d, 0x5fe8f830, 0x8d017972, 0xb5502d04, 0x1a149257, 0x4b0b7ba8,
                0xc797ff48, 0xa28acb29, 0xb8c0cad6,
            ],
        ),
    ]
    .into_iter()
    .flat_map(|(cid, hashes)| {
        hashes
            .into_iter()
            .enumerate()
            .map(move |(k, h)| (format!("{cid}-{k}"), h))
    })
    .collect();
    let ring_refs: Vec<(&str, u32)> = ring.iter().map(|(k, h)| (k.as_str(), *h)).collect();
    assert_hashes(&ring_refs);
    let queue_hashes = [
        ("broker-a", 0, 0x767d59fc_u32, a),
        ("broker-a", 1, 0xffc8cd39, b),
        ("broker-a", 2, 0x32df78bf, b),
        ("broker-a", 3, 0xd9b9174a, b),
        ("broker-b", 0, 0x8047d940, a),
        ("broker-b", 1, 0x28132b90, b),
        ("broker-b", 2, 0xd666a43e, a),
        ("broker-b", 3, 0xf6cc3f9e, a),
    ];
    // The derivation itself: successor on the sorted ring, wrapping to the smallest key.
    let sorted: BTreeSet<(u32, &str)> = ring_refs.iter().map(|&(k, h)| (h, k)).collect();
    for &(broker, id, hash, owner) in &queue_hashes {
        assert_hashes(&[(
            &MessageQueue::new("TopicTest", broker, id).to_string(),
            hash,
        )]);
        let (_, node) = sorted
            .range((hash, "")..)
            .next()
            .or_else(|| sorted.first())
            .copied()
            .unwrap_or_default();
        assert!(node.starts_with(owner), "{broker}#{id} lands on {node}");
    }

    let qs: Vec<MessageQueue> = queue_hashes
        .iter()
        .map(|&(broker, id, _, _)| MessageQueue::new("TopicTest", broker, id))
        .collect();
    let cids = ids(&[c, a, b]);
    let strategy = Strategy::ConsistentHash { virtual_nodes: 10 };
    let got = |cid: &str| brief(&allocate(&strategy, cid, &qs, &cids));
    assert_eq!(
        got(a),
        ["broker-a#0", "broker-b#0", "broker-b#2", "broker-b#3"]
    );
    assert_eq!(
        got(b),
        ["broker-a#1", "broker-a#2", "broker-a#3", "broker-b#1"]
    );
    assert!(got(c).is_empty());
}

// Ring collision: MD5("c106893-0") and MD5("c147464-0") share the prefix 0xc973fd44 (found by
// brute force over "c<i>-0"). With one virtual node each, ConsistentHashRouter puts both on the
// same TreeMap key and the later insertion wins. cidAll is sorted before the ring is built, so
// "c147464" ('4' > '0' at index 2) is inserted second, owns the only ring entry and takes every
// queue, whatever order the broker listed the members in.
#[test]
fn consistent_hash_collision_later_insertion_wins() {
    assert_hashes(&[("c106893-0", 0xc973_fd44), ("c147464-0", 0xc973_fd44)]);
    let qs: Vec<MessageQueue> = (0..6).map(|i| MessageQueue::new("T", "b", i)).collect();
    let strategy = Strategy::ConsistentHash { virtual_nodes: 1 };
    for cids in [ids(&["c106893", "c147464"]), ids(&["c147464", "c106893"])] {
        assert!(allocate(&strategy, "c106893", &qs, &cids).is_empty());
        assert_eq!(allocate(&strategy, "c147464", &qs, &cids), qs);
    }
}

// AllocateMachineRoomNearby(AVG_BY_CIRCLE), queues hz-b#0..4, sh-b#0..1, bj-b#0..2, xm-b#0;
// consumers hz-1, hz-2, sh-1 (cidAll sorted: hz-1, hz-2, sh-1).
//   mr2Mq (TreeMap): bj -> [bj#0..2], hz -> [hz#0..4], sh -> [sh#0..1], xm -> [xm#0]
//   mr2c:            hz -> [hz-1, hz-2], sh -> [sh-1]
// hz-1: step 1, hz queues among [hz-1, hz-2] by circle: hz#0, hz#2, hz#4;
//       step 2, rooms without consumers in order bj, xm, each among all 3 by circle:
//       bj: index 0 -> bj#0; xm: index 0 -> xm#0
// hz-2: hz#1, hz#3; bj#1; xm has one queue, index 1 gets nothing
// sh-1: sh#0, sh#1; bj#2
#[test]
fn machine_room_nearby_by_circle() {
    let mut qs = Vec::new();
    for (broker, count) in [("xm-b", 1), ("sh-b", 2), ("hz-b", 5), ("bj-b", 3)] {
        for i in 0..count {
            qs.push(MessageQueue::new("T", broker, i));
        }
    }
    let strategy = Strategy::MachineRoomNearby {
        inner: Box::new(Strategy::AveragelyByCircle),
        resolver: Arc::new(RoomPrefix { separator: '-' }),
    };
    assert_eq!(strategy.name(), "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE");
    let cids = ids(&["sh-1", "hz-2", "hz-1"]);
    let got = |c: &str| brief(&allocate(&strategy, c, &qs, &cids));
    assert_eq!(
        got("hz-1"),
        ["hz-b#0", "hz-b#2", "hz-b#4", "bj-b#0", "xm-b#0"]
    );
    assert_eq!(got("hz-2"), ["hz-b#1", "hz-b#3", "bj-b#1"]);
    assert_eq!(got("sh-1"), ["sh-b#0", "sh-b#1", "bj-b#2"]);
}

// AllocateMachineRoomNearby(CONFIG): Java calls the inner strategy once for the own room and
// once per consumer-less room, and AllocateMessageQueueByConfig returns its list each time, so
// the list comes back twice (own room hz, consumer-less room bj). A consumer whose room has no
// queues and with no consumer-less room gets nothing, since the inner strategy is never called.
#[test]
fn machine_room_nearby_calls_inner_per_room() {
    let configured = vec![MessageQueue::new("T", "cfg", 7)];
    let strategy = Strategy::MachineRoomNearby {
        inner: Box::new(Strategy::ByConfig {
            queues: configured.clone(),
        }),
        resolver: Arc::new(RoomPrefix { separator: '-' }),
    };
    let qs = vec![
        MessageQueue::new("T", "hz-b", 0),
        MessageQueue::new("T", "bj-b", 0),
    ];
    let got = allocate(&strategy, "hz-1", &qs, &ids(&["hz-1"]));
    assert_eq!(got, [configured.clone(), configured].concat());
    let only_hz = &qs[..1];
    assert!(allocate(&strategy, "sh-1", only_hz, &ids(&["hz-1", "sh-1"])).is_empty());
}
