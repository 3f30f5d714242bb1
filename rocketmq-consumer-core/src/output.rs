//! What the consumer asks of its driver ([`Output`]) and tells its user ([`Event`]).

use proto::message::Message;
use proto::{Command, MessageQueue, ResponseCode};

use crate::id::Epoch;
use crate::messages::Messages;

/// A connection, named by the consumer. The driver opens it on [`Wire::Connect`] and reports
/// its fate with `handle_connected` / `handle_disconnected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Names one delivery. The consumer remembers which life of which queue it came from, so a
/// completion arriving after the queue was revoked (and perhaps assigned again) is recognised
/// as stale and dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeliveryId {
    pub(crate) seq: u64,
}

/// Names an application request whose answer comes later as an event:
/// `Consumer::commit` ([`Event::CommitDone`]), `Consumer::seek_to_edge` ([`Event::SeekDone`]),
/// `Consumer::offset_for_timestamp` ([`Event::OffsetForTimestamp`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub(crate) u64);

/// Messages for the user's handler; answer with `Consumer::complete(id, outcome)`.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// Pass this back to `complete`.
    pub id: DeliveryId,
    /// The queue the messages came from.
    pub queue: MessageQueue,
    /// One or more messages (`consume_batch_size`), in queue order.
    pub messages: Messages,
}

/// What became of a delivery handed to a handler by
/// [`Consumer::deliver_now`](crate::Consumer::deliver_now).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// The handler finished at `at` (not before the time the delivery was handed out) with
    /// `outcome`: the delivery is settled at once, and its id names nothing any more.
    Done {
        /// The handler's verdict.
        outcome: ConsumeOutcome,
        /// When it finished.
        at: std::time::Instant,
    },
    /// The handler goes on: the delivery is in flight until
    /// [`Consumer::complete`](crate::Consumer::complete) names its id.
    Running,
}

/// The handler's verdict on a delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumeOutcome {
    /// Every message was consumed.
    Success,
    /// None was consumed: retry them all later. Concurrent clustering sends them back to the
    /// broker (the broker picks the delay, 10 s after the first failure, growing); orderly
    /// suspends the queue for `suspend_delay` and delivers the same batch again.
    ReconsumeLater,
    /// The first `consumed` messages were consumed, the rest are retried (Java's `ackIndex` is
    /// `consumed - 1`). `delay_level` picks the broker's retry delay for concurrent clustering:
    /// 0 lets the broker choose, a positive level is that delay, a negative one sends the
    /// messages straight to the dead-letter queue. Orderly ignores the level and suspends.
    Retry {
        /// How many leading messages of the delivery were consumed.
        consumed: usize,
        /// The broker's delay level for the retry.
        delay_level: i32,
    },
    /// Deliver the messages again after this pause (clamped to 10 ms ..= 30 s), from this
    /// consumer's cache: orderly retries the whole batch in the same order (Java's
    /// `SUSPEND_CURRENT_QUEUE_A_MOMENT`); concurrent consumers keep the messages instead of
    /// sending them back, so the committed offset stays before them (for a handler that must
    /// not consume them now, and not hand them to the retry topic either).
    Suspend(std::time::Duration),
}

impl ConsumeOutcome {
    /// How many leading messages of a delivery of `len` this outcome consumed.
    pub(crate) fn consumed(self, len: usize) -> usize {
        match self {
            Self::Success => len,
            Self::Retry { consumed, .. } => consumed.min(len),
            Self::ReconsumeLater | Self::Suspend(_) => 0,
        }
    }
}

/// Messages taken from one queue with `Consumer::poll_messages` (poll mode). What the reader
/// did not get to goes back with `Consumer::unread`, in a `Polled` of the same take (keep its
/// `queue` and replace `messages` with the unread tail).
#[derive(Clone, Debug)]
pub struct Polled {
    /// The queue they came from.
    pub queue: MessageQueue,
    /// The messages, in queue order.
    pub messages: Vec<Message>,
    /// The queue's position epoch when they were taken: a seek, reset or revoke since makes
    /// handing them back moot.
    pub(crate) epoch: Epoch,
}

/// Work for the driver. Drain with `poll_output` after every input.
///
/// Exhaustive on purpose: a driver matches every variant, so a new kind of work cannot be
/// dropped silently by a `_` arm (events, which a driver may ignore, stay non-exhaustive).
#[derive(Debug)]
#[must_use]
pub enum Output {
    /// Work on the connections (open, write, close), as every client of the crate asks it.
    Wire(Wire),
    /// Run the user's handler.
    Deliver(Delivery),
    /// Broadcasting: store this offset table (every queue the consumer has consumed, with the
    /// next offset to consume), replacing the previous one atomically, and hand it back to
    /// `Consumer::load_offsets` at the next start.
    StoreOffsets(Vec<(MessageQueue, i64)>),
    /// Only with `ConsumerConfig::revoke_hook`: a rebalance revoked these queues. Their
    /// in-flight deliveries may still be finishing; their final commit waits for
    /// `Consumer::revoke_done(request)` (and for those deliveries), at most
    /// `revoke_drain_timeout`, so the application can flush what it keeps for them first.
    Revoking {
        /// Pass this back to `revoke_done`.
        request: RequestId,
        /// The queues.
        queues: Vec<MessageQueue>,
    },
    /// With `ConsumerConfig::trace`: trace records to send to the trace topic (best effort:
    /// a driver may drop them when it cannot keep up, never holding deliveries back).
    Trace(proto::trace::TraceBatch),
    /// Something the user may want to know.
    Event(Event),
}

/// Work on the connections, the same for every client of the crate (the push, lite pull and
/// pop consumers and the producer: their outputs carry it as `Wire`).
#[derive(Debug)]
#[must_use]
pub enum Wire {
    /// Open a TCP connection to `addr` and report back with `handle_connected` or
    /// `handle_disconnected`.
    Connect {
        /// The connection's name.
        conn: ConnId,
        /// `host:port`.
        addr: String,
    },
    /// Write `command` on `conn` (the opaque is already assigned).
    Send {
        /// Where.
        conn: ConnId,
        /// What.
        command: Command,
    },
    /// Close `conn`; no `handle_disconnected` is expected for it.
    Close {
        /// Which.
        conn: ConnId,
    },
}

/// Things that happened, for logs, metrics and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Queues newly owned by this consumer.
    Assigned(Vec<MessageQueue>),
    /// Queues no longer owned (after their in-flight work drained or timed out).
    Revoked(Vec<MessageQueue>),
    /// A newly owned queue's start offset is known (the group's committed offset, or where
    /// `consume_from` said): pulling starts there now.
    QueueStarted {
        /// The queue.
        queue: MessageQueue,
        /// Its first offset to consume.
        offset: i64,
    },
    /// A queue revoked while its broker was unreachable (a crashed broker leaves the route)
    /// came back, and its broker's committed offset is behind where the queue stood (a broker
    /// loses the commits it had not written to disk when it crashes): it resumes where it
    /// stood, and that offset is committed again, instead of delivering the difference twice.
    OffsetRestored {
        /// The queue.
        queue: MessageQueue,
        /// Where it resumes: its commit point when it was revoked.
        offset: i64,
        /// What the broker answered (`None`: no committed offset at all).
        committed: Option<i64>,
    },
    /// The broker said the queue's offset was illegal; the consumer moved it (`PULL_OFFSET_MOVED`).
    OffsetMoved {
        /// The queue.
        queue: MessageQueue,
        /// The offset the consumer asked for.
        from: i64,
        /// Where the broker said to continue.
        to: i64,
    },
    /// A request failed; the consumer retries on its own.
    RequestFailed {
        /// The peer.
        addr: String,
        /// What was asked.
        request: &'static str,
        /// Why: a response code, or a timeout / lost connection.
        reason: FailureReason,
    },
    /// A peer refused a request for want of credentials or permission (Java 4.x's ACL, 5.x's
    /// authentication and authorization, a topic or broker without the permission). Reported
    /// once, when the refusals start, and again only after the same request to the same peer
    /// was granted in between; the request is also a [`Event::RequestFailed`] each time, and is
    /// retried on its usual schedule (never in a tight loop), so fixed credentials
    /// ([`crate::Consumer::set_credentials`]) or permissions take effect without a restart.
    AccessDenied {
        /// The peer.
        addr: String,
        /// What was asked.
        request: &'static str,
        /// The topic it was about, when it was about one (for group-wide requests, `None`:
        /// the resource is the group).
        topic: Option<String>,
        /// The consumer's group.
        group: String,
        /// The peer's code.
        code: ResponseCode,
        /// The peer's explanation, which names what was refused.
        remark: Option<String>,
    },
    /// Records in a pull response did not decode; the consumer re-pulls from the bad record
    /// every `pull_backoff`, never past it. Reported once per bad record, when the queue gets
    /// stuck there, not at every re-pull; [`QueueStats::stuck`](crate::stats::QueueStats::stuck)
    /// carries the error meanwhile, and a later pull that decodes clears it.
    CorruptMessages {
        /// The queue.
        queue: MessageQueue,
        /// The decoder's error.
        error: String,
    },
    /// Orderly: the broker granted this consumer the queues' locks; they may be consumed.
    LeaseAcquired(Vec<MessageQueue>),
    /// Orderly: the queues' locks were refused, lapsed, or may have been lost with the
    /// broker connection; their deliveries stop, and completions arriving now are dropped.
    LeaseLost(Vec<MessageQueue>),
    /// A broker asked the consumer to move the queue's offset (`RESET_CONSUMER_CLIENT_OFFSET`),
    /// or the application sought; in-flight results for the queue are dropped.
    OffsetReset {
        /// The queue.
        queue: MessageQueue,
        /// The new next offset.
        offset: i64,
    },
    /// A failed message could not be sent back to the broker, nor to the retry topic; it will
    /// be delivered again locally.
    SendBackFailed {
        /// The queue.
        queue: MessageQueue,
        /// The message's queue offset.
        offset: i64,
    },
    /// Orderly: a message failed `max_reconsume_times` times and was sent on to the
    /// dead-letter queue; the queue moves past it. Broadcasting: a message failed that often
    /// and is dropped (nothing is sent back in broadcasting, as in Java).
    GaveUp {
        /// The queue.
        queue: MessageQueue,
        /// The message's queue offset.
        offset: i64,
    },
    /// A broker refused to evaluate the topic's SQL92 expression (`enablePropertyFilter` is
    /// off, or the expression does not compile); the subscription was dropped.
    SubscriptionRejected {
        /// The topic.
        topic: String,
        /// The broker's answer.
        reason: FailureReason,
    },
    /// The answer to `Consumer::commit` `request`, once every queue it committed is answered
    /// (broadcasting: at once, the table handed to the driver to store).
    CommitDone {
        /// The id `commit` returned.
        request: RequestId,
        /// Queues whose broker confirmed the commit, with the next offset to consume.
        committed: Vec<(MessageQueue, i64)>,
        /// Queues whose commit the broker refused, did not answer in time, or could not be
        /// sent.
        unconfirmed: Vec<MessageQueue>,
    },
    /// The answer to `Consumer::seek_to_edge` `request`: the queue moved to this offset, or
    /// why it did not.
    SeekDone {
        /// The id `seek_to_edge` returned.
        request: RequestId,
        /// The queue.
        queue: MessageQueue,
        /// The offset the queue continues at.
        offset: Result<i64, FailureReason>,
    },
    /// The answer to `Consumer::offset_for_timestamp` `request`.
    OffsetForTimestamp {
        /// The id `offset_for_timestamp` returned.
        request: RequestId,
        /// The queue.
        queue: MessageQueue,
        /// The first offset stored at or after the time, or why there is none.
        offset: Result<i64, FailureReason>,
    },
    /// Shutdown finished; nothing more will be output.
    Closed(ShutdownReport),
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureReason {
    /// The peer answered with this code and remark.
    Refused(ResponseCode, Option<String>),
    /// No answer within the deadline.
    Timeout,
    /// The connection was lost or could not be opened.
    Disconnected,
    /// The answer did not decode.
    Malformed(String),
    /// The answer came after the queue it was for was revoked or restarted.
    Stale,
}

/// What shutdown did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Deliveries that completed while shutdown waited.
    pub drained: usize,
    /// Deliveries still running when the wait ended; their messages will be delivered again.
    pub abandoned: usize,
    /// Queues whose offsets the brokers confirmed, with the offsets (broadcasting: the
    /// offsets handed over in the final [`Output::StoreOffsets`]).
    pub committed: Vec<(MessageQueue, i64)>,
    /// Queues whose final commit got no confirmation.
    pub uncommitted: Vec<MessageQueue>,
}
