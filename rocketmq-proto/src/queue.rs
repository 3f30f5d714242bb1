//! [`MessageQueue`]: one queue of a topic on one broker group.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A queue: `(topic, broker name, queue id)`.
///
/// Ordered as Java's `MessageQueue.compareTo`: by topic, then broker name, then queue id, with
/// strings compared by UTF-16 code units as Java's `String.compareTo` does. Rebalancing sorts by
/// this order, so it must match Java's exactly for a mixed Java/Rust group to agree.
///
/// The names are shared (`Arc<str>`): a queue is cloned into every delivery and event, and a
/// clone costs two reference counts instead of two allocations.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    // Field order is the alphabetical order fastjson writes keys in.
    broker_name: Arc<str>,
    queue_id: i32,
    topic: Arc<str>,
}

impl MessageQueue {
    /// A queue of `topic` on `broker_name`.
    pub fn new(topic: &str, broker_name: &str, queue_id: i32) -> Self {
        Self {
            broker_name: Arc::from(broker_name),
            queue_id,
            topic: Arc::from(topic),
        }
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The broker group's name.
    pub fn broker_name(&self) -> &str {
        &self.broker_name
    }

    /// The queue id within the broker group.
    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }
}

/// Java's `String.compareTo`: lexicographic over UTF-16 code units.
pub fn java_string_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

impl Ord for MessageQueue {
    fn cmp(&self, other: &Self) -> Ordering {
        java_string_cmp(&self.topic, &other.topic)
            .then_with(|| java_string_cmp(&self.broker_name, &other.broker_name))
            .then_with(|| self.queue_id.cmp(&other.queue_id))
    }
}

impl PartialOrd for MessageQueue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for MessageQueue {
    /// Java's `MessageQueue.toString()`, which the consistent-hash strategy hashes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MessageQueue [topic={}, brokerName={}, queueId={}]",
            self.topic, self.broker_name, self.queue_id
        )
    }
}

impl fmt::Debug for MessageQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}#{}", self.topic, self.broker_name, self.queue_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_utf16_code_units_like_java() {
        // U+FF5E is one UTF-16 unit 0xFF5E; U+1F600 is the surrogate pair 0xD83D 0xDE00.
        // Bytewise UTF-8 puts U+FF5E first; Java puts the emoji first.
        let a = MessageQueue::new("\u{1F600}", "b", 0);
        let b = MessageQueue::new("\u{FF5E}", "b", 0);
        assert_eq!(a.cmp(&b), Ordering::Less);
        assert!("\u{FF5E}".as_bytes() < "\u{1F600}".as_bytes());
    }

    #[test]
    fn to_string_matches_java() {
        let q = MessageQueue::new("T", "broker-a", 3);
        assert_eq!(
            q.to_string(),
            "MessageQueue [topic=T, brokerName=broker-a, queueId=3]"
        );
    }
}
