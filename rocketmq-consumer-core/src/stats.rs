//! A snapshot of the consumer's state and counters.

use std::time::{Duration, Instant};

use proto::MessageQueue;

/// Counters and per-queue state, from `Consumer::stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsumerStats {
    /// One entry per owned queue (including queues being revoked).
    pub queues: Vec<QueueStats>,
    /// Deliveries handed out and not completed.
    pub in_flight_deliveries: usize,
    /// Deliveries handed out since start.
    pub delivered: u64,
    /// Pull responses (and failures) since start.
    pub pulls: u64,
    /// Mean time from pull request to response (long polls included).
    pub mean_pull_latency: Duration,
    /// Mean time from delivery to completion.
    pub mean_consume_latency: Duration,
    /// Completions for deliveries whose queue was revoked or re-assigned meanwhile.
    pub stale_completions: u64,
    /// Responses for a queue that was revoked or re-assigned while they travelled.
    pub stale_responses: u64,
    /// Responses matching no request of ours.
    pub unknown_responses: u64,
    /// Pulls held back by flow control.
    pub flow_control_pauses: u64,
    /// Deliveries that overran `consume_timeout`; their messages were sent back.
    pub expired_deliveries: u64,
    /// Failed messages the broker took back for a retry (or, orderly, for the dead-letter
    /// queue).
    pub sent_back: u64,
}

/// One queue's state.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueStats {
    /// The queue.
    pub queue: MessageQueue,
    /// Messages cached (pulled, not acknowledged).
    pub cached_messages: usize,
    /// Body bytes cached.
    pub cached_bytes: u64,
    /// Messages being handled.
    pub in_flight: usize,
    /// The offset a commit would store now.
    pub committable_offset: i64,
    /// Where the next pull starts.
    pub next_pull_offset: i64,
    /// The queue's max offset at the last pull.
    pub max_offset: i64,
    /// `max_offset` minus the committable offset.
    pub lag: i64,
    /// Orderly: until when the broker lock counts as held.
    pub lease_until: Option<Instant>,
}
