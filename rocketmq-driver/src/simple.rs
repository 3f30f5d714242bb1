//! [`SimpleConsumer`]: explicit pop consumption (the 5.x `SimpleConsumer` shape): the
//! application receives messages with receipts, acks them or changes their invisibility;
//! nothing is popped unasked. Also a `futures::Stream` of messages.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use consumer_core::FailureReason;
use consumer_core::pop::{PopMessage, PopShutdownReport, PopStats, Receipt};
use futures_util::Stream;

use crate::DriverStopped;
use crate::pop::PopConsumerBuilder;
use crate::pop_driver::{PopInput, PopSpawned};
use crate::runtime::{BoxFuture, Runtime};

/// Why a simple consumer's request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimpleError {
    /// The broker refused it, or it was not answered.
    Failed(FailureReason),
    /// The consumer's driver task has stopped.
    Stopped,
}

impl std::fmt::Display for SimpleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Failed(reason) => write!(f, "the request failed: {reason:?}"),
            Self::Stopped => f.write_str("the consumer's driver task stopped"),
        }
    }
}

impl std::error::Error for SimpleError {}

type Pending = BoxFuture<Result<Vec<PopMessage>, SimpleError>>;

/// A simple consumer (see the module docs). Build with
/// [`SimpleConsumer::builder`]`(group)...build_simple()`.
pub struct SimpleConsumer<R: Runtime> {
    spawned: std::sync::Arc<PopSpawned>,
    max: u32,
    invisible: Duration,
    /// The stream's receive in flight, and what it brought not yet yielded.
    pending: Option<Pending>,
    buffered: std::collections::VecDeque<PopMessage>,
    /// The last receive of the stream failed: the next waits [`RECEIVE_BACKOFF`].
    backoff: bool,
    runtime: PhantomData<fn() -> R>,
}

/// How long the stream waits after a failed receive (Java's `pullTimeDelayMillsWhenException`).
const RECEIVE_BACKOFF: Duration = Duration::from_secs(3);

impl<R: Runtime> SimpleConsumer<R> {
    /// A builder for consumer group `group`; finish with `build_simple()`.
    pub fn builder(group: impl Into<String>) -> PopConsumerBuilder<R> {
        crate::pop::PopConsumer::builder(group)
    }

    pub(crate) fn new(spawned: PopSpawned, max: u32, invisible: Duration) -> Self {
        Self {
            spawned: std::sync::Arc::new(spawned),
            max,
            invisible,
            pending: None,
            buffered: std::collections::VecDeque::new(),
            backoff: false,
            runtime: PhantomData,
        }
    }

    /// Pops up to `max` (1 ..= 32) messages invisible to the group for `invisible`; waits at
    /// most the long poll (15 s) and may bring none.
    pub async fn receive(
        &self,
        max: u32,
        invisible: Duration,
    ) -> Result<Vec<PopMessage>, SimpleError> {
        receive(&self.spawned, max, invisible).await
    }

    /// Acks the message `receipt` names.
    pub async fn ack(&self, receipt: &Receipt) -> Result<(), SimpleError> {
        let receipt = receipt.clone();
        self.spawned
            .ask(|reply| PopInput::Ack { receipt, reply })
            .await
            .ok_or(SimpleError::Stopped)?
            .map_err(SimpleError::Failed)
    }

    /// Makes the message invisible for `invisible` from now (to keep working on it, or to see
    /// it again after that delay); the returned receipt replaces the old one.
    pub async fn change_invisible_duration(
        &self,
        receipt: &Receipt,
        invisible: Duration,
    ) -> Result<Receipt, SimpleError> {
        let receipt = receipt.clone();
        self.spawned
            .ask(|reply| PopInput::Change {
                receipt,
                invisible,
                reply,
            })
            .await
            .ok_or(SimpleError::Stopped)?
            .map_err(SimpleError::Failed)
    }

    /// The consumer's counters now.
    pub async fn stats(&self) -> Result<PopStats, DriverStopped> {
        self.spawned.ask(PopInput::Stats).await.ok_or(DriverStopped)
    }

    /// Unregisters and stops. Messages received and not acked come back to the group after
    /// their invisibility.
    pub async fn shutdown(self) -> Result<PopShutdownReport, DriverStopped> {
        let Self {
            spawned, pending, ..
        } = self;
        drop(pending);
        match std::sync::Arc::try_unwrap(spawned) {
            Ok(mut spawned) => spawned.shutdown().await,
            Err(_) => Err(DriverStopped),
        }
    }
}

async fn receive(
    spawned: &PopSpawned,
    max: u32,
    invisible: Duration,
) -> Result<Vec<PopMessage>, SimpleError> {
    spawned
        .ask(|reply| PopInput::Receive {
            max,
            invisible,
            reply,
        })
        .await
        .ok_or(SimpleError::Stopped)?
        .map_err(SimpleError::Failed)
}

impl<R: Runtime> Stream for SimpleConsumer<R> {
    type Item = PopMessage;

    /// The next message, receiving batches of the builder's `batch_size` with its
    /// `invisible_time`; a receive that fails is retried after 3 s. Ack each message with
    /// [`SimpleConsumer::ack`]. Ends when the driver stops.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<PopMessage>> {
        let this = &mut *self;
        loop {
            if let Some(message) = this.buffered.pop_front() {
                return Poll::Ready(Some(message));
            }
            let backoff = std::mem::take(&mut this.backoff);
            let pending = this.pending.get_or_insert_with(|| {
                let spawned = std::sync::Arc::clone(&this.spawned);
                let (max, invisible) = (this.max, this.invisible);
                Box::pin(async move {
                    if backoff {
                        let runtime = R::default();
                        runtime.sleep_until(runtime.now() + RECEIVE_BACKOFF).await;
                    }
                    receive(&spawned, max, invisible).await
                })
            });
            match Future::poll(pending.as_mut(), cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(result) => {
                    this.pending = None;
                    match result {
                        Ok(messages) => this.buffered.extend(messages),
                        Err(SimpleError::Stopped) => return Poll::Ready(None),
                        // A refused or lost receive: the next one waits a moment, so a broker
                        // that refuses at once is not asked in a tight loop.
                        Err(SimpleError::Failed(_)) => this.backoff = true,
                    }
                }
            }
        }
    }
}
