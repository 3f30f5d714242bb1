//! Flow control: whether a queue may pull now, decided from cache sizes alone.
//!
//! Java checks, before every pull, the queue's cached count, then its cached bytes, then (for
//! concurrent consumption) the offset span (`DefaultMQPushConsumerImpl.pullMessage`), and
//! delays the pull by 50 ms when one is over. Beyond Java, a consumer-wide budget keeps the
//! whole cache bounded however many queues the consumer owns.

/// Cache limits for one decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Messages in this queue.
    pub queue_messages: usize,
    /// Body bytes in this queue.
    pub queue_bytes: u64,
    /// Highest minus lowest cached offset in this queue.
    pub span: i64,
    /// Messages across the consumer.
    pub total_messages: usize,
    /// Body bytes across the consumer.
    pub total_bytes: u64,
}

/// What is cached now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Load {
    /// Messages in this queue.
    pub queue_messages: usize,
    /// Body bytes in this queue.
    pub queue_bytes: u64,
    /// Offset span in this queue.
    pub span: i64,
    /// Messages across the consumer.
    pub total_messages: usize,
    /// Body bytes across the consumer.
    pub total_bytes: u64,
}

/// Which limit holds a pull back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlowReason {
    /// Too many messages cached in the queue.
    QueueMessages,
    /// Too many bytes cached in the queue.
    QueueBytes,
    /// The cached offsets span too wide (a message is stuck).
    Span,
    /// Too many messages cached across the consumer.
    TotalMessages,
    /// Too many bytes cached across the consumer.
    TotalBytes,
}

/// Pull now, or wait because of `reason`.
///
/// A limit is exceeded when the load is strictly above it, as in Java (`cachedMessageCount >
/// pullThresholdForQueue`): a queue may hold up to its limit plus one pull batch.
pub fn decide(load: Load, limits: Limits) -> Result<(), FlowReason> {
    if load.queue_messages > limits.queue_messages {
        return Err(FlowReason::QueueMessages);
    }
    if load.queue_bytes > limits.queue_bytes {
        return Err(FlowReason::QueueBytes);
    }
    if load.span > limits.span {
        return Err(FlowReason::Span);
    }
    if load.total_messages > limits.total_messages {
        return Err(FlowReason::TotalMessages);
    }
    if load.total_bytes > limits.total_bytes {
        return Err(FlowReason::TotalBytes);
    }
    Ok(())
}

/// Java's per-topic limit shared among the topic's queues: `max(1, limit / queues)`
/// (`RebalancePushImpl.messageQueueChanged`).
pub fn per_queue_share(topic_limit: u64, queues: usize) -> u64 {
    (topic_limit / (queues.max(1) as u64)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        queue_messages: 1000,
        queue_bytes: 100 << 20,
        span: 2000,
        total_messages: 10_000,
        total_bytes: 512 << 20,
    };

    #[test]
    fn limits_are_checked_in_java_order_and_are_inclusive() {
        let at = Load {
            queue_messages: 1000,
            queue_bytes: 100 << 20,
            span: 2000,
            total_messages: 10_000,
            total_bytes: 512 << 20,
        };
        assert_eq!(decide(at, LIMITS), Ok(()));
        let over = Load {
            queue_messages: 1001,
            queue_bytes: (100 << 20) + 1,
            ..at
        };
        assert_eq!(decide(over, LIMITS), Err(FlowReason::QueueMessages));
        assert_eq!(
            decide(
                Load {
                    queue_bytes: (100 << 20) + 1,
                    ..at
                },
                LIMITS
            ),
            Err(FlowReason::QueueBytes)
        );
        assert_eq!(
            decide(Load { span: 2001, ..at }, LIMITS),
            Err(FlowReason::Span)
        );
        assert_eq!(
            decide(
                Load {
                    total_messages: 10_001,
                    ..at
                },
                LIMITS
            ),
            Err(FlowReason::TotalMessages)
        );
        assert_eq!(
            decide(
                Load {
                    total_bytes: (512 << 20) + 1,
                    ..at
                },
                LIMITS
            ),
            Err(FlowReason::TotalBytes)
        );
    }

    #[test]
    fn topic_share_never_drops_to_zero() {
        assert_eq!(per_queue_share(1000, 8), 125);
        assert_eq!(per_queue_share(3, 8), 1);
        assert_eq!(per_queue_share(1000, 0), 1000);
    }
}
