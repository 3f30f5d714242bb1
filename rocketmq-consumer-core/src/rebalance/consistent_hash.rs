//! `AllocateMessageQueueConsistentHash` and the ring it builds (`ConsistentHashRouter`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use md5::{Digest, Md5};

use crate::MessageQueue;

/// The queues whose ring successor belongs to `current_id`, in `queues` order.
///
/// Java builds the ring once per call (`new ConsistentHashRouter(cidNodes, virtualNodeCnt)`) and
/// routes each queue by `mq.toString()`; so does this. The caller has run Java's `check`.
pub(crate) fn consistent_hash(
    virtual_nodes: usize,
    current_id: &str,
    queues: &[&MessageQueue],
    consumer_ids: &[&str],
) -> Vec<MessageQueue> {
    let ring = ring(virtual_nodes, consumer_ids);
    // ConsistentHashRouter.routeNode returns null on an empty ring (virtualNodeCnt = 0), and the
    // strategy then keeps nothing.
    let Some((_, &first)) = ring.first_key_value() else {
        return Vec::new();
    };
    let mut key = String::new();
    queues
        .iter()
        .filter(|mq| {
            key.clear();
            // MessageQueue's Display is Java's toString(), the routing key Java hashes.
            write!(key, "{mq}").expect("writing to a String cannot fail");
            let hash = md5_prefix(&key);
            // routeNode: the first ring key >= hash (`tailMap(hash).firstKey()`), else wrap
            // around to the smallest key.
            let owner = ring.range(hash..).next().map_or(first, |(_, &owner)| owner);
            consumer_ids[owner] == current_id
        })
        .map(|&mq| mq.clone())
        .collect()
}

/// The ring: hash of a virtual node's key -> index in `consumer_ids` of its physical node.
///
/// `ConsistentHashRouter`'s constructor calls `addNode(cid, virtualNodeCnt)` for each consumer in
/// list order, and `addNode` puts virtual nodes `cid-(existing + 0)` .. `cid-(existing + k - 1)`
/// into a `TreeMap`, where `existing` (`getExistingReplicas`) counts the ring entries that
/// already belong to that cid. A `put` on an equal hash replaces the earlier node, so insertion
/// order decides collisions, which is why the list must be sorted identically on every member.
fn ring(virtual_nodes: usize, consumer_ids: &[&str]) -> BTreeMap<u32, usize> {
    let mut ring = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut key = String::new();
    for (index, &cid) in consumer_ids.iter().enumerate() {
        // `existing` is 0 for a cid's first occurrence; only a duplicated cid (see `allocate`)
        // pays for the scan, which counts surviving entries as Java's does.
        let existing = if seen.insert(cid) {
            0
        } else {
            ring.values()
                .filter(|&&owner| consumer_ids[owner] == cid)
                .count()
        };
        for replica in existing..existing + virtual_nodes {
            key.clear();
            // VirtualNode.getKey(): physicalNode.getKey() + "-" + replicaIndex.
            write!(key, "{cid}-{replica}").expect("writing to a String cannot fail");
            ring.insert(md5_prefix(&key), index);
        }
    }
    ring
}

/// `ConsistentHashRouter.MD5Hash.hash`: the first 4 bytes of the MD5 digest as an unsigned
/// big-endian number.
///
/// Java keeps it in a `long` built by shifting in `digest[i] & 0xFF`, so it is never negative
/// and orders exactly like this `u32`. Java hashes `key.getBytes()`, i.e. the JVM's default
/// charset, which is UTF-8 on every JVM since 18 and on earlier ones started with UTF-8
/// `file.encoding` (the usual server setup); for ASCII client ids and topics it is the same
/// under any ASCII-compatible charset.
fn md5_prefix(key: &str) -> u32 {
    let digest = Md5::digest(key.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_prefix_is_big_endian_first_four_bytes() {
        // RFC 1321 test suite: MD5("abc") = 900150983cd24fb0d6963f7d28e17f72.
        assert_eq!(md5_prefix("abc"), 0x9001_5098);
        // MD5("") = d41d8cd98f00b204e9800998ecf8427e: the top bit set stays positive in Java's
        // long, and so orders above every hash below 0x8000_0000 here too.
        assert_eq!(md5_prefix(""), 0xd41d_8cd9);
    }

    #[test]
    fn ring_has_virtual_nodes_per_consumer() {
        let ring = ring(3, &["a", "b"]);
        let expected: BTreeSet<u32> = ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2"]
            .into_iter()
            .map(md5_prefix)
            .collect();
        assert_eq!(ring.keys().copied().collect::<BTreeSet<_>>(), expected);
        assert_eq!(ring.values().filter(|&&i| i == 0).count(), 3);
    }

    #[test]
    fn duplicate_consumer_continues_replica_numbering() {
        // getExistingReplicas: the second "a" adds a-2 and a-3, not a-0 and a-1 again.
        let ring = ring(2, &["a", "a"]);
        let expected: BTreeSet<u32> = ["a-0", "a-1", "a-2", "a-3"]
            .into_iter()
            .map(md5_prefix)
            .collect();
        assert_eq!(ring.keys().copied().collect::<BTreeSet<_>>(), expected);
    }

    #[test]
    fn no_virtual_nodes_assigns_nothing() {
        let q = MessageQueue::new("T", "b", 0);
        assert!(consistent_hash(0, "a", &[&q], &["a"]).is_empty());
    }

    #[test]
    fn single_consumer_owns_everything() {
        let qs: Vec<MessageQueue> = (0..20).map(|i| MessageQueue::new("T", "b", i)).collect();
        let refs: Vec<&MessageQueue> = qs.iter().collect();
        assert_eq!(consistent_hash(10, "a", &refs, &["a"]), qs);
    }
}
