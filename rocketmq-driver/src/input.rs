//! What the driver task is told: everything that happens outside it but on its connections (a
//! handler finished, the application asked for something) comes in over one unbounded channel
//! as an [`Input`].

use std::sync::Arc;

use consumer_core::output::Polled;
use consumer_core::{ConsumeOutcome, ConsumerStats, DeliveryId, Event, MessageQueue};
use futures_channel::oneshot;

use crate::control::{CommitReport, ControlError};

/// An observer of the consumer's events.
pub(crate) type EventSink = Arc<dyn Fn(&Event) + Send + Sync>;

/// What the driver task is told.
#[derive(Debug)]
pub(crate) enum Input {
    /// A handler finished.
    Completed(DeliveryId, ConsumeOutcome),
    /// The user asked for a graceful shutdown.
    Shutdown,
    /// A lite pull consumer's request.
    Pull(PullCommand),
    /// The application rotated its ACL credentials.
    Credentials(Option<consumer_core::Credentials>),
    /// A push consumer's application paused these queues.
    Pause(Vec<MessageQueue>),
    /// ... or resumed them.
    Resume(Vec<MessageQueue>),
    /// The application's `on_revoke` hook finished for this revoke.
    RevokeDone(consumer_core::output::RequestId),
}

/// What a lite pull consumer asks of its driver. Every command but `Take` first answers a
/// `Take` the driver is holding with `None`, so the asker, once answered, knows every
/// message it has been given.
#[derive(Debug)]
pub(crate) enum PullCommand {
    /// Up to `max` messages of one queue, as soon as some are ready.
    Take {
        max: usize,
        reply: oneshot::Sender<Option<Polled>>,
    },
    /// Nothing but the `Take` answer described above.
    Sync(oneshot::Sender<()>),
    /// Move `queue` to `offset`.
    Seek {
        queue: MessageQueue,
        offset: i64,
        reply: oneshot::Sender<Result<(), ControlError>>,
    },
    /// Move `queue` to its first offset, or its end.
    SeekToEdge {
        queue: MessageQueue,
        to_end: bool,
        reply: oneshot::Sender<Result<(), ControlError>>,
    },
    /// Stop `queue`.
    Pause {
        queue: MessageQueue,
        reply: oneshot::Sender<()>,
    },
    /// Start `queue` again.
    Resume {
        queue: MessageQueue,
        reply: oneshot::Sender<()>,
    },
    /// Commit every queue and answer when the brokers have.
    Commit(oneshot::Sender<CommitReport>),
    /// Messages given out but not seen by the application, back to the core's cache (sent
    /// before a pause, commit or shutdown, which then see them as not consumed). Refused by
    /// the core only when their queue was revoked or moved meanwhile: its position is no
    /// longer theirs then.
    Unread(Polled),
    /// The first offset of `queue` stored at or after `unix_ms`.
    OffsetForTimestamp {
        queue: MessageQueue,
        unix_ms: i64,
        reply: oneshot::Sender<Result<i64, ControlError>>,
    },
    /// The queues owned now.
    Assignment(oneshot::Sender<Vec<MessageQueue>>),
    /// Subscribe to `topic` (again: the new expression replaces the old one).
    Subscribe {
        topic: String,
        expression: String,
        sql92: bool,
        reply: oneshot::Sender<Result<(), ControlError>>,
    },
    /// Stop consuming `topic`; answers whether it was subscribed.
    Unsubscribe {
        topic: String,
        reply: oneshot::Sender<bool>,
    },
    /// Poll mode: read exactly these queues from now on (Java's `assign`).
    Assign {
        queues: Vec<MessageQueue>,
        reply: oneshot::Sender<Result<(), ControlError>>,
    },
    /// A snapshot of the consumer's state and counters (push consumers ask too; it leaves a
    /// held `Take` alone: it changes nothing the asker was given).
    Stats(oneshot::Sender<ConsumerStats>),
    /// The stats and the latency buckets behind them, for the `metrics` exporter (it leaves a
    /// held `Take` alone, as `Stats` does).
    #[cfg(feature = "metrics")]
    Metrics(oneshot::Sender<(ConsumerStats, consumer_core::stats::LatencyBuckets)>),
}

impl PullCommand {
    /// Whether the command leaves a held `Take` waiting: it changes nothing the asker was
    /// given (every other command answers the `Take` first).
    pub(crate) fn leaves_take(&self) -> bool {
        match self {
            Self::Take { .. } | Self::Stats(_) => true,
            #[cfg(feature = "metrics")]
            Self::Metrics(_) => true,
            _ => false,
        }
    }
}
