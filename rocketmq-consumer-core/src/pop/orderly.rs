//! Orderly pop ([`PopConfig::orderly`](super::PopConfig::orderly)): which queue a held message
//! belongs to, the queues with a delivery at the handler, and the delivery counts the broker
//! reports for orderly pops.
//!
//! The broker keeps the order (`ConsumerOrderInfoManager`): it hands out a queue's messages
//! one pop at a time, and the next pop of that queue returns nothing until every message of
//! the last one was acked or became visible again, then starts again from the first one not
//! acked. This side keeps the order among the messages it holds: one delivery per queue at a
//! time, in the order they were popped (offset order), and after a failure none of that
//! queue's later messages, which the broker will deliver again after the failed one.

use std::collections::{BTreeMap, BTreeSet};

use proto::headers::ReceiptHandle;
use proto::headers::receipt::{OffsetInfoEntry, OffsetInfoKey, RetryMark};

use super::held::HeldMessage;
use super::output::PopDeliveryId;

/// One queue as orderly pop sees it: topic (wire name), broker, and the stored topic's mark
/// (the broker orders a pop retry topic's queues apart from the topic's own).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct OrderKey {
    topic: String,
    broker: String,
    retry: RetryMark,
    queue_id: i32,
}

impl OrderKey {
    pub(crate) fn of(held: &HeldMessage) -> Self {
        Self {
            topic: held.topic.clone(),
            broker: held.handle.broker_name.clone(),
            retry: held.handle.retry,
            queue_id: held.handle.queue_id,
        }
    }
}

/// The queues whose messages are at the handler, by delivery.
#[derive(Debug, Default)]
pub(crate) struct OrderedQueues {
    busy: BTreeSet<OrderKey>,
    by_delivery: BTreeMap<PopDeliveryId, OrderKey>,
}

impl OrderedQueues {
    /// Whether `key` has a delivery at the handler.
    pub(crate) fn is_busy(&self, key: &OrderKey) -> bool {
        self.busy.contains(key)
    }

    /// `delivery` holds `key`'s messages now.
    pub(crate) fn start(&mut self, delivery: PopDeliveryId, key: OrderKey) {
        self.busy.insert(key.clone());
        self.by_delivery.insert(delivery, key);
    }

    /// `delivery` is done: its queue is free again; returns it.
    pub(crate) fn finish(&mut self, delivery: PopDeliveryId) -> Option<OrderKey> {
        let key = self.by_delivery.remove(&delivery)?;
        self.busy.remove(&key);
        Some(key)
    }
}

/// How often the broker says the message with `handle` was delivered before, from an orderly
/// pop's `orderCountInfo` (per message when it names one, else per queue; Java's
/// `MQClientAPIImpl.processPopResponse`); `None` when it says nothing of it.
pub(crate) fn order_count(counts: &[OffsetInfoEntry], handle: &ReceiptHandle) -> Option<i32> {
    let find = |key: OffsetInfoKey| {
        counts
            .iter()
            .find(|e| e.retry == handle.retry && e.key == key)
            .and_then(|e| e.values.first())
            .and_then(|count| i32::try_from(*count).ok())
    };
    find(OffsetInfoKey::QueueOffset {
        queue_id: handle.queue_id,
        offset: handle.queue_offset,
    })
    .or_else(|| find(OffsetInfoKey::Queue(handle.queue_id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::headers::receipt::parse_order_count_info;

    fn handle(queue_id: i32, queue_offset: i64) -> ReceiptHandle {
        ReceiptHandle::parse(&format!(
            "0 1700000000000 60000 999 0 broker-a {queue_id} {queue_offset}"
        ))
        .expect("a valid handle")
    }

    /// A per-message count wins over its queue's, a queue's count covers its other messages,
    /// and a queue the info does not name has none (the strings are `ExtraInfoUtil`'s).
    #[test]
    fn counts_come_per_message_then_per_queue() {
        let counts = parse_order_count_info("0 qo3%7 2;0 3 1;1 4 5").expect("Java's format");
        assert_eq!(order_count(&counts, &handle(3, 7)), Some(2));
        assert_eq!(order_count(&counts, &handle(3, 8)), Some(1));
        assert_eq!(
            order_count(&counts, &handle(4, 0)),
            None,
            "4 is named for the retry topic"
        );
        assert_eq!(order_count(&counts, &handle(5, 0)), None);
    }
}
