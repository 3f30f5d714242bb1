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
/// Both names share one `Arc<str>` (the broker name, then the topic): a queue is cloned into
/// every delivery and event, and a clone costs one reference count (it was two, with an `Arc`
/// a name, and two allocations before that).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct MessageQueue {
    /// The broker name followed by the topic.
    names: Arc<str>,
    /// Where the topic starts in `names`.
    topic_start: usize,
    queue_id: i32,
}

/// A queue as fastjson writes it: its members in alphabetical order.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    #[serde(borrow)]
    broker_name: std::borrow::Cow<'a, str>,
    queue_id: i32,
    #[serde(borrow)]
    topic: std::borrow::Cow<'a, str>,
}

impl Serialize for MessageQueue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            broker_name: self.broker_name().into(),
            queue_id: self.queue_id,
            topic: self.topic().into(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MessageQueue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        Ok(Self::new(&wire.topic, &wire.broker_name, wire.queue_id))
    }
}

impl MessageQueue {
    /// A queue of `topic` on `broker_name`.
    pub fn new(topic: &str, broker_name: &str, queue_id: i32) -> Self {
        let mut names = String::with_capacity(broker_name.len() + topic.len());
        names.push_str(broker_name);
        names.push_str(topic);
        Self {
            names: Arc::from(names),
            topic_start: broker_name.len(),
            queue_id,
        }
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        self.names
            .get(self.topic_start..)
            .expect("the topic starts where the broker name ends, at a char boundary")
    }

    /// The broker group's name.
    pub fn broker_name(&self) -> &str {
        self.names
            .get(..self.topic_start)
            .expect("the broker name ends where the topic starts, at a char boundary")
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
        java_string_cmp(self.topic(), other.topic())
            .then_with(|| java_string_cmp(self.broker_name(), other.broker_name()))
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
            self.topic(),
            self.broker_name(),
            self.queue_id
        )
    }
}

impl fmt::Debug for MessageQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{}#{}",
            self.topic(),
            self.broker_name(),
            self.queue_id
        )
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
