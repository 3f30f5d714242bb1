//! Namespaces (Java's `ClientConfig.namespace`): many tenants share one cluster by prefixing
//! their topics and groups, `NS%topic`, `NS%group`, `%RETRY%NS%group`, `%DLQ%NS%group`. On the
//! wire every name is wrapped; the application only ever sees its own names.
//!
//! The rules are Java's `NamespaceUtil` (`common/protocol/NamespaceUtil.java`): system topics
//! and groups are never wrapped, a name already wrapped with this namespace is left alone, and
//! the retry and dead-letter prefixes stay in front.

use std::borrow::Cow;

use proto::MessageQueue;
use proto::message::Message;

use crate::error::ConfigError;
use crate::output::{Delivery, Event, Output, Polled};

/// `NamespaceUtil.NAMESPACE_SEPARATOR`.
const SEPARATOR: char = '%';
/// `MixAll.RETRY_GROUP_TOPIC_PREFIX`.
const RETRY_PREFIX: &str = "%RETRY%";
/// `MixAll.DLQ_GROUP_TOPIC_PREFIX`.
const DLQ_PREFIX: &str = "%DLQ%";

/// `TopicValidator.SYSTEM_TOPIC_SET` (5.x; 4.9 has all but the `_V2` schedule topic).
const SYSTEM_TOPICS: [&str; 10] = [
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "SCHEDULE_TOPIC_XXXX_V2",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
];

/// A namespace: the tenant prefix of every topic and group a client names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespace(String);

impl Namespace {
    /// The namespace `name`: 1 to 64 characters of `[a-zA-Z0-9_-]` (Java checks nothing, but
    /// a `%` or `|` would make the wrapped names ambiguous, and brokers refuse other characters
    /// in topic and group names).
    pub fn new(name: impl Into<String>) -> Result<Self, ConfigError> {
        let name = name.into();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if valid {
            Ok(Self(name))
        } else {
            Err(ConfigError(format!(
                "namespace {name:?}: 1 to 64 characters of letters, digits, '_' and '-'"
            )))
        }
    }

    /// The namespace's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `resource` as the brokers know it (`NamespaceUtil.wrapNamespace`): `NS%resource`, with a
    /// retry or dead-letter prefix kept in front; system resources and names already in this
    /// namespace unchanged.
    pub fn wrap<'a>(&self, resource: &'a str) -> Cow<'a, str> {
        if resource.is_empty() || is_system(resource) || self.holds(resource) {
            return Cow::Borrowed(resource);
        }
        let (prefix, bare) = split_prefix(resource);
        Cow::Owned(format!("{prefix}{}{SEPARATOR}{bare}", self.0))
    }

    /// `resource` as the application named it (`NamespaceUtil.withoutNamespace(resource,
    /// namespace)`): a name of this namespace loses it, retry and dead-letter prefixes kept;
    /// anything else (another tenant's name, a system topic) is returned as it is.
    pub fn unwrap<'a>(&self, resource: &'a str) -> Cow<'a, str> {
        if !self.holds(resource) {
            return Cow::Borrowed(resource);
        }
        let (prefix, bare) = split_prefix(resource);
        let own = &bare[self.0.len() + SEPARATOR.len_utf8()..];
        if prefix.is_empty() {
            Cow::Borrowed(own)
        } else {
            Cow::Owned(format!("{prefix}{own}"))
        }
    }

    /// `queue` with its topic wrapped.
    pub fn wrap_queue(&self, queue: &MessageQueue) -> MessageQueue {
        MessageQueue::new(
            &self.wrap(queue.topic()),
            queue.broker_name(),
            queue.queue_id(),
        )
    }

    /// `queue` with its topic unwrapped.
    pub fn unwrap_queue(&self, queue: &MessageQueue) -> MessageQueue {
        MessageQueue::new(
            &self.unwrap(queue.topic()),
            queue.broker_name(),
            queue.queue_id(),
        )
    }

    /// Unwraps `message`'s topic in place, when it is in this namespace (the consumer does it
    /// to each message it hands out, as Java's `resetRetryAndNamespace`).
    pub fn unwrap_message(&self, message: &mut Message) {
        let topic = message.topic();
        let unwrapped = self.unwrap(topic);
        // Unwrapping only ever strips: a shorter name is one that changed.
        if unwrapped.len() != topic.len() {
            let unwrapped = unwrapped.into_owned();
            message.set_topic(unwrapped);
        }
    }

    /// Whether `resource` is already wrapped with this namespace
    /// (`NamespaceUtil.isAlreadyWithNamespace`).
    fn holds(&self, resource: &str) -> bool {
        if resource.is_empty() || is_system(resource) {
            return false;
        }
        let (_, bare) = split_prefix(resource);
        bare.strip_prefix(self.0.as_str())
            .is_some_and(|rest| rest.starts_with(SEPARATOR))
    }
}

/// `(retry or dead-letter prefix, the rest)`.
fn split_prefix(resource: &str) -> (&str, &str) {
    for prefix in [RETRY_PREFIX, DLQ_PREFIX] {
        if let Some(rest) = resource.strip_prefix(prefix) {
            return (prefix, rest);
        }
    }
    ("", resource)
}

/// `NamespaceUtil.isSystemResource`: a system topic (`TopicValidator.isSystemTopic`) or a
/// system consumer group (`MixAll.isSysConsumerGroup`).
fn is_system(resource: &str) -> bool {
    SYSTEM_TOPICS.contains(&resource)
        || resource.starts_with("rmq_sys_")
        || resource.starts_with("CID_RMQ_SYS_")
}

/// What the consumer hands out, with names as the application gave them.
impl Namespace {
    /// `output` with every queue, topic and group unwrapped, and every delivered message's
    /// topic. Offset tables to store stay wrapped: they are read back as they were written.
    pub(crate) fn unwrap_output(&self, output: Output) -> Output {
        match output {
            Output::Deliver(delivery) => Output::Deliver(self.unwrap_delivery(delivery)),
            Output::Event(event) => Output::Event(self.unwrap_event(event)),
            Output::Revoking { request, queues } => Output::Revoking {
                request,
                queues: self.unwrap_queues(queues),
            },
            // The offset file keeps the wire names, as Java's `LocalFileOffsetStore` does, and
            // `load_offsets` takes them back as they were stored.
            // Trace records name the group without its namespace already (Java's hook does the
            // same) and carry no queue.
            other @ (Output::Wire(_) | Output::StoreOffsets(_) | Output::Trace(_)) => other,
        }
    }

    /// `delivery` with its queue and messages unwrapped.
    pub(crate) fn unwrap_delivery(&self, mut delivery: Delivery) -> Delivery {
        delivery.queue = self.unwrap_queue(&delivery.queue);
        for message in &mut delivery.messages {
            self.unwrap_message(message);
        }
        delivery
    }

    /// `polled` with its queue and messages unwrapped.
    pub(crate) fn unwrap_polled(&self, mut polled: Polled) -> Polled {
        polled.queue = self.unwrap_queue(&polled.queue);
        for message in &mut polled.messages {
            self.unwrap_message(message);
        }
        polled
    }

    /// `polled`, handed back, as the consumer took it out (`unwrap_polled` undone).
    pub(crate) fn wrap_polled(&self, mut polled: Polled) -> Polled {
        polled.queue = self.wrap_queue(&polled.queue);
        for message in &mut polled.messages {
            // `wrap` allocates only for a name it changes.
            let wrapped = match self.wrap(message.topic()) {
                Cow::Owned(topic) => Some(topic),
                Cow::Borrowed(_) => None,
            };
            if let Some(topic) = wrapped {
                message.set_topic(topic);
            }
        }
        polled
    }

    fn unwrap_queues(&self, queues: Vec<MessageQueue>) -> Vec<MessageQueue> {
        queues.iter().map(|q| self.unwrap_queue(q)).collect()
    }

    fn unwrap_offsets(&self, offsets: Vec<(MessageQueue, i64)>) -> Vec<(MessageQueue, i64)> {
        offsets
            .into_iter()
            .map(|(q, offset)| (self.unwrap_queue(&q), offset))
            .collect()
    }

    fn unwrap_event(&self, event: Event) -> Event {
        let queue = |q: MessageQueue| self.unwrap_queue(&q);
        match event {
            Event::Assigned(queues) => Event::Assigned(self.unwrap_queues(queues)),
            Event::Revoked(queues) => Event::Revoked(self.unwrap_queues(queues)),
            Event::QueueStarted { queue: q, offset } => Event::QueueStarted {
                queue: queue(q),
                offset,
            },
            Event::LeaseAcquired(queues) => Event::LeaseAcquired(self.unwrap_queues(queues)),
            Event::LeaseLost(queues) => Event::LeaseLost(self.unwrap_queues(queues)),
            Event::OffsetRestored {
                queue: q,
                offset,
                committed,
            } => Event::OffsetRestored {
                queue: queue(q),
                offset,
                committed,
            },
            Event::OffsetMoved { queue: q, from, to } => Event::OffsetMoved {
                queue: queue(q),
                from,
                to,
            },
            Event::CorruptMessages { queue: q, error } => Event::CorruptMessages {
                queue: queue(q),
                error,
            },
            Event::OffsetReset { queue: q, offset } => Event::OffsetReset {
                queue: queue(q),
                offset,
            },
            Event::SendBackFailed { queue: q, offset } => Event::SendBackFailed {
                queue: queue(q),
                offset,
            },
            Event::GaveUp { queue: q, offset } => Event::GaveUp {
                queue: queue(q),
                offset,
            },
            Event::SubscriptionRejected { topic, reason } => Event::SubscriptionRejected {
                topic: self.unwrap(&topic).into_owned(),
                reason,
            },
            Event::AccessDenied {
                addr,
                request,
                topic,
                group,
                code,
                remark,
            } => Event::AccessDenied {
                addr,
                request,
                topic: topic.map(|t| self.unwrap(&t).into_owned()),
                group: self.unwrap(&group).into_owned(),
                code,
                remark,
            },
            Event::CommitDone {
                request,
                committed,
                unconfirmed,
            } => Event::CommitDone {
                request,
                committed: self.unwrap_offsets(committed),
                unconfirmed: self.unwrap_queues(unconfirmed),
            },
            Event::SeekDone {
                request,
                queue: q,
                offset,
            } => Event::SeekDone {
                request,
                queue: queue(q),
                offset,
            },
            Event::OffsetForTimestamp {
                request,
                queue: q,
                offset,
            } => Event::OffsetForTimestamp {
                request,
                queue: queue(q),
                offset,
            },
            Event::Closed(mut report) => {
                report.committed = self.unwrap_offsets(report.committed);
                report.uncommitted = self.unwrap_queues(report.uncommitted);
                Event::Closed(report)
            }
            other @ Event::RequestFailed { .. } => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns() -> Namespace {
        Namespace::new("MQ_INST_1").expect("a valid namespace")
    }

    /// Java's `NamespaceUtilTest` cases: topics, groups, retry and dead-letter topics wrap with
    /// the prefix in front; system resources and already-wrapped names are left alone.
    #[test]
    fn wraps_as_java_does() {
        let ns = ns();
        assert_eq!(ns.wrap("TopicA"), "MQ_INST_1%TopicA");
        assert_eq!(ns.wrap("%RETRY%GID_A"), "%RETRY%MQ_INST_1%GID_A");
        assert_eq!(ns.wrap("%DLQ%GID_A"), "%DLQ%MQ_INST_1%GID_A");
        assert_eq!(ns.wrap("MQ_INST_1%TopicA"), "MQ_INST_1%TopicA");
        assert_eq!(ns.wrap("%RETRY%MQ_INST_1%GID_A"), "%RETRY%MQ_INST_1%GID_A");
        for system in [
            "TBW102",
            "SCHEDULE_TOPIC_XXXX",
            "rmq_sys_x",
            "CID_RMQ_SYS_G",
        ] {
            assert_eq!(ns.wrap(system), system);
        }
        assert_eq!(ns.wrap(""), "");
    }

    /// Only this namespace's names lose it; another tenant's and plain names stay.
    #[test]
    fn unwraps_only_its_own_names() {
        let ns = ns();
        assert_eq!(ns.unwrap("MQ_INST_1%TopicA"), "TopicA");
        assert_eq!(ns.unwrap("%RETRY%MQ_INST_1%GID_A"), "%RETRY%GID_A");
        assert_eq!(ns.unwrap("%DLQ%MQ_INST_1%GID_A"), "%DLQ%GID_A");
        assert_eq!(ns.unwrap("MQ_INST_2%TopicA"), "MQ_INST_2%TopicA");
        assert_eq!(ns.unwrap("TopicA"), "TopicA");
        assert_eq!(ns.unwrap("MQ_INST_1"), "MQ_INST_1");
        for name in ["TopicA", "%RETRY%GID_A", "%DLQ%GID_A", "a%b"] {
            assert_eq!(ns.unwrap(&ns.wrap(name)), name, "{name} round trips");
        }
        let queue = MessageQueue::new("TopicA", "broker-a", 3);
        assert_eq!(ns.unwrap_queue(&ns.wrap_queue(&queue)), queue);
    }

    /// Names that would make wrapped names ambiguous, or that brokers refuse, are refused.
    #[test]
    fn odd_namespaces_are_refused() {
        for bad in ["", "a%b", "a|b", "a b", "ü", &"x".repeat(65)] {
            assert!(Namespace::new(bad).is_err(), "{bad:?} refused");
        }
        assert!(Namespace::new("tenant-1_a").is_ok());
    }
}
