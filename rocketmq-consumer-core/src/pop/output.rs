//! What the pop consumer asks of its driver ([`PopOutput`]) and tells its user ([`PopEvent`]).

use std::time::Duration;

use proto::headers::ReceiptHandle;
use proto::message::Message;

use crate::output::Wire;
use crate::output::{FailureReason, RequestId};

/// Names one push-mode delivery; pass it back to
/// [`PopConsumer::complete`](super::PopConsumer::complete).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PopDeliveryId(pub(crate) u64);

/// What acks a popped message: the topic it was subscribed as and its receipt handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The subscribed topic, as the application names it.
    pub topic: String,
    /// The broker's receipt handle; a successful
    /// [`PopConsumer::change_invisible_duration`](super::PopConsumer::change_invisible_duration)
    /// replaces it.
    pub handle: ReceiptHandle,
}

/// A popped message with its receipt. Its topic is the subscribed one even when it was
/// redelivered from the pop retry topic (as Java's `processPopResponse` renames it); the
/// receipt's handle says where it really came from.
#[derive(Clone, Debug)]
pub struct PopMessage {
    /// The message.
    pub message: Message,
    /// What acks it.
    pub receipt: Receipt,
}

/// Messages for the push-mode handler; answer with
/// [`PopConsumer::complete`](super::PopConsumer::complete).
#[derive(Clone, Debug)]
pub struct PopDelivery {
    /// Pass this back to `complete`.
    pub id: PopDeliveryId,
    /// The messages, at most `consume_batch_size`.
    pub messages: Vec<PopMessage>,
}

/// Work for the driver. Drain with `poll_output` after every input.
#[derive(Debug)]
#[must_use]
pub enum PopOutput {
    /// Work on the connections (open, write, close), as every client of the crate asks it.
    Wire(Wire),
    /// Run the handler (push mode).
    Deliver(PopDelivery),
    /// Something the user may want to know.
    Event(PopEvent),
}

/// Things that happened.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum PopEvent {
    /// A broker's assignment of a topic changed: the queues popped now (queue id `-1` is every
    /// queue of that broker).
    Assigned {
        /// The topic.
        topic: String,
        /// The queues.
        queues: Vec<proto::MessageQueue>,
    },
    /// A request failed; the consumer retries on its own schedule.
    RequestFailed {
        /// The peer.
        addr: String,
        /// What was asked.
        request: &'static str,
        /// Why.
        reason: FailureReason,
    },
    /// Simple mode: the answer to [`PopConsumer::receive`](super::PopConsumer::receive)
    /// `request` (possibly no messages, after the long poll found none).
    Received {
        /// The id `receive` returned.
        request: RequestId,
        /// The messages, or why the pop failed.
        messages: Result<Vec<PopMessage>, FailureReason>,
    },
    /// Simple mode: the answer to [`PopConsumer::ack`](super::PopConsumer::ack) `request`.
    Acked {
        /// The id `ack` returned.
        request: RequestId,
        /// Done, or why not (`NO_MESSAGE`: the handle is spent or the message is gone).
        result: Result<(), FailureReason>,
    },
    /// Simple mode: the answer to
    /// [`PopConsumer::change_invisible_duration`](super::PopConsumer::change_invisible_duration).
    InvisibilityChanged {
        /// The id it returned.
        request: RequestId,
        /// The new receipt (the old one is spent), or why not.
        receipt: Result<Receipt, FailureReason>,
    },
    /// Push mode: a message's ack, negative ack or renewal was refused or never answered; it
    /// will come back after its invisibility (at-least-once).
    SettleFailed {
        /// The message's receipt.
        receipt: Receipt,
        /// What was asked.
        request: &'static str,
        /// Why.
        reason: FailureReason,
    },
    /// Push mode: a message reached `max_reconsume_times` and went to `%DLQ%<group>`.
    DeadLettered {
        /// The message's receipt.
        receipt: Receipt,
    },
    /// Shutdown finished; nothing more will be output.
    Closed(PopShutdownReport),
}

/// What shutdown did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PopShutdownReport {
    /// Deliveries that completed while shutdown waited.
    pub drained: usize,
    /// Deliveries still running when the wait ended: their messages come back to the group
    /// after their invisibility.
    pub abandoned: usize,
    /// Popped messages never handed to the handler, made visible again at once.
    pub released: usize,
    /// Messages the brokers confirmed acked over the consumer's whole run (the final count of
    /// [`PopStats::acked`], the shutdown's own acks included).
    pub acked: u64,
}

/// The pop consumer's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PopStats {
    /// Pop requests sent.
    pub pops: u64,
    /// Messages popped.
    pub popped: u64,
    /// Messages acked (broker confirmed).
    pub acked: u64,
    /// Messages made invisible for a retry after a failure.
    pub retried: u64,
    /// Invisibility renewals the broker confirmed.
    pub renewed: u64,
    /// Messages dead-lettered.
    pub dead_lettered: u64,
    /// Popped messages dropped undelivered because their invisibility ran out first.
    pub expired: u64,
    /// Acks, negative acks and renewals that failed.
    pub settle_failures: u64,
    /// Messages held now (popped, not settled).
    pub held_messages: usize,
    /// Body bytes held now.
    pub held_bytes: usize,
    /// Time a pop's answer took, summed (long polls included).
    pub pop_time: Duration,
}
