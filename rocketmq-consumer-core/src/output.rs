//! What the consumer asks of its driver ([`Output`]) and tells its user ([`Event`]).

use proto::message::Message;
use proto::{Command, MessageQueue, ResponseCode};

/// A connection, named by the consumer. The driver opens it on [`Output::Connect`] and reports
/// its fate with `handle_connected` / `handle_disconnected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Names one delivery. It carries the queue's assignment epoch, so a completion arriving after
/// the queue was revoked (and perhaps assigned again) is recognised as stale and dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeliveryId {
    pub(crate) queue: u64,
    pub(crate) epoch: u64,
    pub(crate) seq: u64,
}

/// Messages for the user's handler; answer with `Consumer::complete(id, outcome)`.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// Pass this back to `complete`.
    pub id: DeliveryId,
    /// The queue the messages came from.
    pub queue: MessageQueue,
    /// One or more messages (`consume_batch_size`), in queue order.
    pub messages: Vec<Message>,
}

/// The handler's verdict on a delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumeOutcome {
    /// Every message was consumed.
    Success,
    /// Deliver the messages again later.
    ReconsumeLater,
}

/// Work for the driver. Drain with `poll_output` after every input.
#[derive(Debug)]
#[non_exhaustive]
#[must_use]
pub enum Output {
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
    /// Run the user's handler.
    Deliver(Delivery),
    /// Something the user may want to know.
    Event(Event),
}

/// Things that happened, for logs, metrics and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Queues newly owned by this consumer.
    Assigned(Vec<MessageQueue>),
    /// Queues no longer owned (after their in-flight work drained or timed out).
    Revoked(Vec<MessageQueue>),
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
    /// Records in a pull response did not decode; the consumer re-pulls from the bad record.
    CorruptMessages {
        /// The queue.
        queue: MessageQueue,
        /// The decoder's error.
        error: String,
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
}

/// What shutdown did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Deliveries that completed while shutdown waited.
    pub drained: usize,
    /// Deliveries still running when the wait ended; their messages will be delivered again.
    pub abandoned: usize,
    /// Queues whose offsets the brokers confirmed, with the offsets.
    pub committed: Vec<(MessageQueue, i64)>,
    /// Queues whose final commit got no confirmation.
    pub uncommitted: Vec<MessageQueue>,
}
