//! A snapshot of the consumer's state and counters: values an application can act on or
//! export (the `metrics` of a driver, a health check), never strings to parse.

mod histogram;

pub(crate) use histogram::Histogram;

use std::time::{Duration, Instant};

use proto::MessageQueue;

/// Counters and per-queue state, from `Consumer::stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsumerStats {
    /// One entry per owned queue (including queues being revoked), in queue order.
    pub queues: Vec<QueueStats>,
    /// Messages cached over every queue (pulled, not acknowledged).
    pub cached_messages: usize,
    /// Body bytes cached over every queue.
    pub cached_bytes: u64,
    /// The sum of the queues' `lag`.
    pub lag: i64,
    /// Deliveries handed out and not completed.
    pub in_flight_deliveries: usize,
    /// Deliveries handed out since start (poll mode: takes).
    pub delivered: u64,
    /// Messages in them.
    pub delivered_messages: u64,
    /// Pull responses (and failures) since start.
    pub pulls: u64,
    /// Round trips of the pulls the broker answered at once: those sent while the queue had
    /// messages waiting (its last seen max offset was ahead of the pull), so no long-poll
    /// suspension is in them.
    pub pull_latency: Latency,
    /// Time from delivery to completion, at the times the driver hands in. The driver reads
    /// its clock once for a few quick handlers in a row, so a quick delivery may read as 0
    /// (Java's `consumeRT` reads the millisecond clock: most read 0 ms there).
    pub consume_latency: Latency,
    /// Every connection the consumer holds or waits to reopen, in address order.
    pub connections: Vec<ConnectionStats>,
    /// Completions for deliveries whose queue was revoked or re-assigned meanwhile.
    pub stale_completions: u64,
    /// Responses for a queue that was revoked or re-assigned while they travelled.
    pub stale_responses: u64,
    /// Responses matching no request of ours.
    pub unknown_responses: u64,
    /// Pulls held back by flow control.
    pub flow_control_pauses: u64,
    /// Times ready messages were held back by a rate limit (once per dispatch pass, or
    /// poll-mode take, that a limit cut short).
    pub rate_limited: u64,
    /// Pulls put off because their queue already held a batch its rate limit could not let
    /// go yet.
    pub rate_limit_pull_pauses: u64,
    /// Deliveries that overran `consume_timeout`; their messages were sent back.
    pub expired_deliveries: u64,
    /// Failed messages the broker took back for a retry (or, orderly, for the dead-letter
    /// queue).
    pub sent_back: u64,
    /// Message trace records the driver dropped: its queue to the trace topic was full, or a
    /// send failed (the core itself drops none and leaves this 0).
    pub trace_dropped: u64,
    /// Queues handed over to this consumer by a live previous owner: starts that waited for
    /// the queue's broker lock to be released (see `ConsumerConfig::handover_timeout`).
    pub handovers: u64,
    /// Of those, the starts that gave up waiting after `handover_timeout` (the previous owner
    /// gone or cut off).
    pub handover_timeouts: u64,
    /// How long each of those hand-overs stood its queue still (assignment to start).
    pub handover_wait: Latency,
}

/// One queue's state.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueStats {
    /// The queue (its topic, broker name and id).
    pub queue: MessageQueue,
    /// This life of the queue at this consumer: a new number each time the queue is assigned
    /// to it again, or restarted at another offset by a seek or a broker's reset.
    pub epoch: u64,
    /// Messages cached (pulled, not acknowledged).
    pub cached_messages: usize,
    /// Body bytes cached.
    pub cached_bytes: u64,
    /// Messages being handled.
    pub in_flight: usize,
    /// The offset last sent to the broker as the group's (commits are oneway, as Java's:
    /// the broker's own view is what `rmq lag` shows); `None` before the first.
    pub committed_offset: Option<i64>,
    /// The offset a commit would store now.
    pub committable_offset: i64,
    /// Where the next pull starts.
    pub next_pull_offset: i64,
    /// The queue's max offset in the broker's last pull answer.
    pub max_offset: i64,
    /// `max_offset` minus the committable offset.
    pub lag: i64,
    /// Paused by the application: neither pulled nor delivered.
    pub paused: bool,
    /// When the last pull answer for this queue arrived.
    pub last_pull: Option<Instant>,
    /// Orderly: until when the broker lock counts as held (`None`: not held).
    pub lease_until: Option<Instant>,
    /// Revoked by a rebalance: waiting for its in-flight deliveries before its final commit.
    pub revoking: bool,
    /// Why the queue cannot move on, while it cannot: a record at its next offset does not
    /// decode (the decoder's error; [`crate::Event::CorruptMessages`] said so once).
    pub stuck: Option<String>,
    /// Waiting for its previous owner to release it (a hand-over), since then.
    pub awaiting_handover_since: Option<Instant>,
    /// Hand-overs of this queue to this consumer so far, over all its lives here.
    pub handovers: u64,
    /// Of those, the ones that gave up waiting after `handover_timeout`.
    pub handover_timeouts: u64,
    /// How long the last of them stood the queue still.
    pub last_handover_wait: Option<Duration>,
}

/// The latency distributions behind [`ConsumerStats::pull_latency`] and
/// [`ConsumerStats::consume_latency`], bucket by bucket, for exporters that keep histograms of
/// their own (the driver's `metrics` feature): each non-empty bucket's middle and count since
/// the consumer started, in order. Buckets are 1/16 of a power of two wide.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatencyBuckets {
    /// Pull round trips answered at once.
    pub pull: Vec<(Duration, u64)>,
    /// Delivery to completion.
    pub consume: Vec<(Duration, u64)>,
}

/// A latency distribution since the consumer started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Latency {
    /// How many durations were measured.
    pub samples: u64,
    /// The median (within 1/32 of its value).
    pub p50: Duration,
    /// The 99th percentile (within 1/32 of its value).
    pub p99: Duration,
    /// The largest.
    pub max: Duration,
}

/// One connection, or an address waiting out its reconnect pause.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// The peer's address (a name server or a broker).
    pub addr: String,
    /// Where the connection stands.
    pub state: ConnectionState,
    /// Requests on it that timed out since its last answer.
    pub timeouts: u32,
}

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// Being opened (requests wait for it).
    Connecting,
    /// Open.
    Connected,
    /// Failed or closed, and not reopened since: requests for the address fail until `until`;
    /// after it, the address is reopened when a request next needs it.
    Down {
        /// When the address may be tried again (it may have passed).
        until: Instant,
    },
}
