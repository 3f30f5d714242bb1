//! [`allocate()`]: input normalisation, Java's `check`, dispatch, and the two "average" strategies.

use std::cmp::Ordering;

use proto::queue::java_string_cmp;

use super::{Strategy, consistent_hash, machine_room};
use crate::MessageQueue;

/// The queues of one topic that `current_id` owns under `strategy`, in the order Java returns
/// them.
///
/// `queues` are the topic's subscribable queues and `consumer_ids` the group's client ids as
/// `GET_CONSUMER_LIST_BY_GROUP` returned them. Their order does not matter: like Java's
/// `RebalanceImpl.rebalanceByTopic`, this sorts `queues` by [`MessageQueue`]'s Java order and
/// `consumer_ids` by Java string order (UTF-16 code units) before running the strategy, so every
/// member of a group, Java or Rust, starts from the same lists.
///
/// Duplicates:
/// - duplicate queues are collapsed, because Java holds a topic's queues in a `Set`;
/// - duplicate consumer ids are **kept**, because Java keeps them: the broker builds the member
///   list from its channel table, so one client id with two connections to the broker appears
///   twice, and the Java strategies then count it twice (index of its first occurrence, `n`
///   including the repeat). Collapsing it would make a Rust member compute a different partition
///   from its Java peers.
///
/// Returns no queue when `current_id` is not among `consumer_ids` (Java's
/// `AbstractAllocateMessageQueueStrategy.check` logs `[BUG]` and returns an empty list), and when
/// `current_id`, `queues` or `consumer_ids` is empty (Java throws `IllegalArgumentException`,
/// which `RebalanceImpl` catches and logs, keeping its previous assignment; keeping or dropping
/// a previous assignment is the caller's decision). [`Strategy::MachineRoomNearby`] also returns
/// no queue when its resolver answers an empty room, where Java throws as well.
///
/// The exception is [`Strategy::ByConfig`], which returns its configured list verbatim whatever
/// the inputs, as Java's `AllocateMessageQueueByConfig` does (it runs no check).
///
/// Cost: sorting (skipped when the inputs are already sorted and unique) plus the strategy's own
/// work; the averaging strategies are linear and clone only the queues they return.
pub fn allocate(
    strategy: &Strategy,
    current_id: &str,
    queues: &[MessageQueue],
    consumer_ids: &[String],
) -> Vec<MessageQueue> {
    if let Strategy::ByConfig { queues: configured } = strategy {
        return configured.clone();
    }
    // Java's `check`, done before sorting so a non-member pays nothing.
    if current_id.is_empty() || queues.is_empty() || !consumer_ids.iter().any(|c| c == current_id) {
        return Vec::new();
    }
    let queues = sorted_unique_queues(queues);
    let consumer_ids = sorted_consumer_ids(consumer_ids);
    allocate_sorted(strategy, current_id, &queues, &consumer_ids)
}

/// Runs `strategy` on lists already in `RebalanceImpl` order, as the Java strategy's `allocate`
/// does: no sorting here, because [`machine_room::machine_room_nearby`] calls its inner strategy
/// on sub-lists, exactly as Java does.
pub(crate) fn allocate_sorted(
    strategy: &Strategy,
    current_id: &str,
    queues: &[&MessageQueue],
    consumer_ids: &[&str],
) -> Vec<MessageQueue> {
    if let Strategy::ByConfig { queues: configured } = strategy {
        // AllocateMessageQueueByConfig.allocate: `return this.messageQueueList;`, no check.
        return configured.clone();
    }
    let Some(index) = own_index(current_id, queues, consumer_ids) else {
        return Vec::new();
    };
    match strategy {
        Strategy::Averagely => averagely(index, queues, consumer_ids.len()),
        Strategy::AveragelyByCircle => averagely_by_circle(index, queues, consumer_ids.len()),
        Strategy::ByMachineRoom { consumer_idcs } => {
            machine_room::by_machine_room(consumer_idcs, index, queues, consumer_ids.len())
        }
        Strategy::MachineRoomNearby { inner, resolver } => machine_room::machine_room_nearby(
            |queues, consumer_ids| allocate_sorted(inner, current_id, queues, consumer_ids),
            resolver.as_ref(),
            current_id,
            queues,
            consumer_ids,
        ),
        Strategy::ConsistentHash { virtual_nodes } => {
            consistent_hash::consistent_hash(*virtual_nodes, current_id, queues, consumer_ids)
        }
        // Handled above; listed so a new variant is a compile error here, not a silent default.
        Strategy::ByConfig { .. } => Vec::new(),
    }
}

/// Java's `AbstractAllocateMessageQueueStrategy.check` followed by `cidAll.indexOf(currentCID)`:
/// the position of the first occurrence of `current_id`, or `None` where Java throws (empty
/// inputs) or returns an empty list (not a member).
fn own_index(current_id: &str, queues: &[&MessageQueue], consumer_ids: &[&str]) -> Option<usize> {
    if current_id.is_empty() || queues.is_empty() {
        return None;
    }
    consumer_ids.iter().position(|c| *c == current_id)
}

/// `mqAll`: sorted by `MessageQueue.compareTo`, without duplicates (Java's queues come from a
/// `Set`). Borrows, so sorting 10 000 queues moves pointers, not strings.
fn sorted_unique_queues(queues: &[MessageQueue]) -> Vec<&MessageQueue> {
    let mut sorted: Vec<&MessageQueue> = queues.iter().collect();
    // The common caller hands in a route's queues already sorted; a linear check skips the sort.
    if !sorted.is_sorted_by(|a, b| a < b) {
        // Unstable sorts are fine: only queues equal in every field compare equal.
        if queues
            .iter()
            .all(|q| q.topic().is_ascii() && q.broker_name().is_ascii())
        {
            // For ASCII, Java's UTF-16 order is byte order: one test up front instead of one
            // per comparison roughly halves the sort.
            sorted.sort_unstable_by(|a, b| {
                (a.topic(), a.broker_name(), a.queue_id()).cmp(&(
                    b.topic(),
                    b.broker_name(),
                    b.queue_id(),
                ))
            });
        } else {
            sorted.sort_unstable();
        }
        sorted.dedup();
    }
    sorted
}

/// `cidAll`: `Collections.sort` on Java strings, keeping duplicates as Java does.
fn sorted_consumer_ids(consumer_ids: &[String]) -> Vec<&str> {
    let mut sorted: Vec<&str> = consumer_ids.iter().map(String::as_str).collect();
    if !sorted.is_sorted_by(|a, b| java_string_cmp(a, b) != Ordering::Greater) {
        sorted.sort_unstable_by(|a, b| java_string_cmp(a, b));
    }
    sorted
}

/// `AllocateMessageQueueAveragely.allocate`: one contiguous block per consumer, the first
/// `m % n` consumers taking one queue more.
fn averagely(index: usize, queues: &[&MessageQueue], consumers: usize) -> Vec<MessageQueue> {
    let m = queues.len();
    let n = consumers;
    let rem = m % n;
    // Java: averageSize = m <= n ? 1 : (mod > 0 && index < mod ? m / n + 1 : m / n).
    let takes_extra = rem > 0 && index < rem;
    let average = if m <= n {
        1
    } else if takes_extra {
        m / n + 1
    } else {
        m / n
    };
    // Java: startIndex = (mod > 0 && index < mod) ? index * averageSize : index * averageSize
    // + mod. When m < n, consumers at index >= m start past the end and get nothing (Java's
    // `range` goes negative and its loop does not run).
    let start = if takes_extra {
        index * average
    } else {
        index * average + rem
    };
    let end = m.min(start + average);
    queues
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|&q| q.clone())
        .collect()
}

/// `AllocateMessageQueueAveragelyByCircle.allocate`: every queue at index `j >= index` with
/// `j % n == index`, i.e. every `n`-th queue starting at the consumer's own index.
fn averagely_by_circle(
    index: usize,
    queues: &[&MessageQueue],
    consumers: usize,
) -> Vec<MessageQueue> {
    queues
        .iter()
        .skip(index)
        .step_by(consumers)
        .map(|&q| q.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(m: i32) -> Vec<MessageQueue> {
        (0..m)
            .map(|i| MessageQueue::new("T", "broker-a", i))
            .collect()
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|&s| s.to_owned()).collect()
    }

    fn queue_ids(result: &[MessageQueue]) -> Vec<i32> {
        result.iter().map(MessageQueue::queue_id).collect()
    }

    // §7.11 worked example, AVG with m = 8, n = 3: mod = 2, c0 and c1 take 3, c2 takes 2.
    #[test]
    fn averagely_m8_n3() {
        let cids = ids(&["c0", "c1", "c2"]);
        let qs = queues(8);
        let got = |c: &str| queue_ids(&allocate(&Strategy::Averagely, c, &qs, &cids));
        assert_eq!(got("c0"), [0, 1, 2]);
        assert_eq!(got("c1"), [3, 4, 5]);
        assert_eq!(got("c2"), [6, 7]);
    }

    // §7.11 worked example, AVG_BY_CIRCLE with m = 8, n = 3.
    #[test]
    fn averagely_by_circle_m8_n3() {
        let cids = ids(&["c0", "c1", "c2"]);
        let qs = queues(8);
        let got = |c: &str| queue_ids(&allocate(&Strategy::AveragelyByCircle, c, &qs, &cids));
        assert_eq!(got("c0"), [0, 3, 6]);
        assert_eq!(got("c1"), [1, 4, 7]);
        assert_eq!(got("c2"), [2, 5]);
    }

    // m < n: averageSize = 1, mod = m, so index < m takes queue `index` and the rest nothing.
    #[test]
    fn averagely_more_consumers_than_queues() {
        let cids = ids(&["a", "b", "c", "d", "e"]);
        let qs = queues(3);
        let got = |c: &str| queue_ids(&allocate(&Strategy::Averagely, c, &qs, &cids));
        assert_eq!(got("a"), [0]);
        assert_eq!(got("c"), [2]);
        assert!(got("d").is_empty());
        assert!(got("e").is_empty());
    }

    // m == n: mod = 0, averageSize = 1, start = index.
    #[test]
    fn averagely_equal_counts() {
        let cids = ids(&["a", "b", "c"]);
        let qs = queues(3);
        for (i, c) in ["a", "b", "c"].into_iter().enumerate() {
            assert_eq!(
                queue_ids(&allocate(&Strategy::Averagely, c, &qs, &cids)),
                [i as i32]
            );
        }
    }

    #[test]
    fn check_rejects_non_member_and_empty_inputs() {
        let cids = ids(&["a", "b"]);
        let qs = queues(4);
        assert!(allocate(&Strategy::Averagely, "z", &qs, &cids).is_empty());
        assert!(allocate(&Strategy::Averagely, "", &qs, &ids(&["", "a"])).is_empty());
        assert!(allocate(&Strategy::Averagely, "a", &[], &cids).is_empty());
        assert!(allocate(&Strategy::AveragelyByCircle, "a", &qs, &[]).is_empty());
    }

    #[test]
    fn by_config_is_verbatim_without_check() {
        let configured = vec![
            MessageQueue::new("Z", "b", 9),
            MessageQueue::new("A", "b", 1),
            MessageQueue::new("Z", "b", 9),
        ];
        let strategy = Strategy::ByConfig {
            queues: configured.clone(),
        };
        assert_eq!(allocate(&strategy, "nobody", &[], &[]), configured);
    }

    #[test]
    fn sorts_inputs_like_rebalance_impl() {
        let cids = ids(&["c2", "c0", "c1"]);
        let mut qs = queues(8);
        qs.reverse();
        let got = queue_ids(&allocate(&Strategy::Averagely, "c1", &qs, &cids));
        assert_eq!(got, [3, 4, 5]);
    }

    #[test]
    fn duplicate_queues_collapse_like_a_java_set() {
        let cids = ids(&["a", "b"]);
        let mut qs = queues(4);
        qs.extend(queues(4));
        assert_eq!(
            queue_ids(&allocate(&Strategy::Averagely, "a", &qs, &cids)),
            [0, 1]
        );
        assert_eq!(
            queue_ids(&allocate(&Strategy::Averagely, "b", &qs, &cids)),
            [2, 3]
        );
    }

    // cidAll = [a, a, b] (one client seen on two channels): Java's n is 3 and indexOf("a") = 0,
    // so with m = 3 a takes queue 0, b (index 2) takes queue 2 and queue 1 waits for the list to
    // settle. A Rust member must compute the same, not collapse the duplicate.
    #[test]
    fn duplicate_consumer_ids_count_as_java_counts_them() {
        let cids = ids(&["b", "a", "a"]);
        let qs = queues(3);
        assert_eq!(
            queue_ids(&allocate(&Strategy::Averagely, "a", &qs, &cids)),
            [0]
        );
        assert_eq!(
            queue_ids(&allocate(&Strategy::Averagely, "b", &qs, &cids)),
            [2]
        );
        assert_eq!(
            queue_ids(&allocate(&Strategy::AveragelyByCircle, "b", &qs, &cids)),
            [2]
        );
    }

    #[test]
    fn consumer_ids_sort_by_utf16_units() {
        // Java puts U+1F600 (surrogates 0xD83D..) before U+FF5E; UTF-8 byte order would not.
        let cids = ids(&["\u{FF5E}", "\u{1F600}"]);
        let qs = queues(2);
        let got = |c: &str| queue_ids(&allocate(&Strategy::Averagely, c, &qs, &cids));
        assert_eq!(got("\u{1F600}"), [0]);
        assert_eq!(got("\u{FF5E}"), [1]);
    }
}
