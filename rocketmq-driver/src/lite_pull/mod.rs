//! [`LitePullConsumer`]: the application reads messages as a [`Stream`] and steers offsets
//! itself (Java's `DefaultLitePullConsumer`).
//!
//! The stream asks the driver for a batch (at most `poll_batch_size` messages of one queue)
//! only when it is polled and the previous batch has been read, so the only messages held
//! outside the core's per-queue caches are one batch; when the application reads slowly, the
//! caches fill and the core stops pulling. Nothing buffers without bound.
//!
//! The core counts a message as consumed once it is taken from its cache. The stream takes a
//! batch at a time, so messages of the current batch not yet read by the application would
//! count as consumed too; [`LitePullConsumer::commit`], [`LitePullConsumer::pause`] and
//! [`LitePullConsumer::shutdown`] therefore hand the batch's unread messages back to the core
//! first (`Consumer::unread`: they return to the front of their queue's cache, nothing is
//! pulled again), so what they commit is exactly what the application has read. The periodic
//! auto-commit (every `persist_interval`) does not know what was read: it may count one unread
//! batch as consumed, as Java's auto-commit counts a returned batch. Use `poll_batch_size(1)`
//! or manual commits where that matters.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use consumer_core::output::Polled;
use consumer_core::{ConsumerStats, MessageQueue, ShutdownReport};
use futures_channel::oneshot;
use futures_util::FutureExt;
use futures_util::stream::{FusedStream, Stream};
use proto::message::Message;

use crate::DriverStopped;
use crate::control::{CommitReport, ControlError};
use crate::input::{Input, PullCommand};
use crate::runtime::Runtime;
use crate::setup::Spawned;
#[cfg(doc)]
use crate::{ConsumeFrom, ConsumerConfig};

mod builder;

pub use builder::LitePullConsumerBuilder;

/// A consumer the application reads as a [`Stream`] of messages, with offsets under its
/// control. Build it with [`LitePullConsumer::builder`].
///
/// Each control method takes `&mut self`, so none runs while the stream is being read; they
/// go through the consumer's driver task and resolve once it (and, where said, the broker) has
/// acted.
pub struct LitePullConsumer<R: Runtime> {
    spawned: Spawned,
    client_id: String,
    batch: usize,
    /// The current batch: messages of `current` taken from the core, not yet read.
    buffer: VecDeque<Message>,
    /// The take `buffer` came from, its messages moved out: what goes back to the core with
    /// the unread ones.
    current: Option<Polled>,
    /// A batch asked for and not yet received.
    take: Option<oneshot::Receiver<Option<Polled>>>,
    /// The driver is gone: the stream has ended.
    ended: bool,
    /// The runtime only names the type: the stream stays `Unpin` whatever the runtime is.
    _runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> std::fmt::Debug for LitePullConsumer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LitePullConsumer")
            .field("client_id", &self.client_id)
            .field("unread", &self.buffer.len())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> LitePullConsumer<R> {
    /// A builder for a lite pull consumer of `group`, with Java's defaults.
    pub fn builder(group: impl Into<String>) -> LitePullConsumerBuilder<R> {
        LitePullConsumerBuilder::new(group.into())
    }

    /// The client id brokers know this consumer by.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Signs every request from now on with `credentials` (`None`: unsigned), so rotated ACL
    /// keys take effect without a restart.
    pub fn set_credentials(&self, credentials: Option<consumer_core::Credentials>) {
        self.spawned.tell(Input::Credentials(credentials));
    }

    /// The queues the consumer reads now (subscribe mode: its share after rebalance; assign
    /// mode: the assigned ones).
    pub async fn assignment(&mut self) -> Result<Vec<MessageQueue>, ControlError> {
        self.ask(PullCommand::Assignment).await
    }

    /// Subscribes to `topic` while reading (again: the new tag expression replaces the old
    /// one); its queues are shared out at the rebalance that follows.
    pub async fn subscribe(
        &mut self,
        topic: impl Into<String>,
        expression: impl Into<String>,
    ) -> Result<(), ControlError> {
        let (topic, expression) = (topic.into(), expression.into());
        self.ask(|reply| PullCommand::Subscribe {
            topic,
            expression,
            sql92: false,
            reply,
        })
        .await?
    }

    /// Stops reading `topic`: unread messages of it are handed back uncommitted, its queues
    /// commit what the stream yielded and go. Resolves to whether it was subscribed.
    pub async fn unsubscribe(&mut self, topic: impl Into<String>) -> Result<bool, ControlError> {
        let topic = topic.into();
        self.settle().await?;
        self.hand_back(None);
        self.ask(|reply| PullCommand::Unsubscribe { topic, reply })
            .await
    }

    /// Reads exactly `queues` from now on, without rebalancing them (Java's `assign` while
    /// running): queues no longer among them commit what the stream yielded and go; new ones
    /// start at their committed offset. Unread messages are handed back first.
    pub async fn assign(
        &mut self,
        queues: impl IntoIterator<Item = MessageQueue>,
    ) -> Result<(), ControlError> {
        let queues: Vec<MessageQueue> = queues.into_iter().collect();
        self.settle().await?;
        self.hand_back(None);
        self.ask(|reply| PullCommand::Assign { queues, reply })
            .await?
    }

    /// A snapshot of the consumer's state, as [`RunningConsumer::stats`](crate::RunningConsumer::stats)
    /// gives. Messages this consumer has taken from the driver count as consumed in it, also
    /// those still buffered here and not yet returned by `next`.
    pub async fn stats(&mut self) -> Result<ConsumerStats, ControlError> {
        self.ask(PullCommand::Stats).await
    }

    /// The offset last committed for `queue` (sent to the broker; broadcasting: stored in the
    /// offset file), as Java's `committed(mq)` reads it from the offset store; `None` for a
    /// queue this consumer does not read, or has not committed or resolved yet.
    pub async fn committed(&mut self, queue: &MessageQueue) -> Result<Option<i64>, ControlError> {
        let stats = self.stats().await?;
        Ok(stats
            .queues
            .into_iter()
            .find(|q| &q.queue == queue)
            .and_then(|q| q.committed_offset))
    }

    /// Continues `queue` at `offset`: unread messages of it are dropped, and the offset is
    /// stored as its consumed position.
    pub async fn seek(&mut self, queue: &MessageQueue, offset: i64) -> Result<(), ControlError> {
        self.settle().await?;
        self.drop_unread(queue);
        self.ask(|reply| PullCommand::Seek {
            queue: queue.clone(),
            offset,
            reply,
        })
        .await?
    }

    /// Continues `queue` at its first stored message. Resolves once the broker said where that
    /// is and the queue moved there.
    pub async fn seek_to_begin(&mut self, queue: &MessageQueue) -> Result<(), ControlError> {
        self.seek_to_edge(queue, false).await
    }

    /// Continues `queue` after its last stored message. Resolves once the broker said where
    /// that is and the queue moved there.
    pub async fn seek_to_end(&mut self, queue: &MessageQueue) -> Result<(), ControlError> {
        self.seek_to_edge(queue, true).await
    }

    async fn seek_to_edge(
        &mut self,
        queue: &MessageQueue,
        to_end: bool,
    ) -> Result<(), ControlError> {
        self.settle().await?;
        self.drop_unread(queue);
        self.ask(|reply| PullCommand::SeekToEdge {
            queue: queue.clone(),
            to_end,
            reply,
        })
        .await?
    }

    /// Stops reading `queue` until [`LitePullConsumer::resume`]: once this resolves the stream
    /// yields none of its messages (unread ones come again after `resume`) and it is not
    /// pulled.
    pub async fn pause(&mut self, queue: &MessageQueue) -> Result<(), ControlError> {
        self.settle().await?;
        self.hand_back(Some(queue));
        self.ask(|reply| PullCommand::Pause {
            queue: queue.clone(),
            reply,
        })
        .await
    }

    /// Reads `queue` again after [`LitePullConsumer::pause`].
    pub async fn resume(&mut self, queue: &MessageQueue) -> Result<(), ControlError> {
        self.ask(|reply| PullCommand::Resume {
            queue: queue.clone(),
            reply,
        })
        .await
    }

    /// Commits the position of every owned queue up to the messages the stream has yielded,
    /// and waits for the brokers' confirmations (broadcasting: for the local offset file).
    pub async fn commit(&mut self) -> Result<CommitReport, ControlError> {
        self.settle().await?;
        self.hand_back(None);
        self.ask(PullCommand::Commit).await
    }

    /// The offset of the first message of `queue` stored at or after `unix_ms` (milliseconds
    /// since the Unix epoch), as the broker answers it: the queue's end when nothing is that
    /// recent.
    pub async fn offset_for_timestamp(
        &mut self,
        queue: &MessageQueue,
        unix_ms: i64,
    ) -> Result<i64, ControlError> {
        self.ask(|reply| PullCommand::OffsetForTimestamp {
            queue: queue.clone(),
            unix_ms,
            reply,
        })
        .await?
    }

    /// Shuts down gracefully: commits what the stream has yielded (broadcasting: stores it;
    /// with `auto_commit` off, what [`LitePullConsumer::commit`] committed last), unregisters,
    /// and resolves with what shutdown did.
    ///
    /// Fails only when the driver task ended without closing the consumer.
    pub async fn shutdown(mut self) -> Result<ShutdownReport, DriverStopped> {
        if self.settle().await.is_ok() {
            // Unread messages must not be committed as consumed.
            self.hand_back(None);
        }
        self.buffer.clear();
        self.spawned.shutdown().await
    }

    /// Makes sure the batch asked for (if any) is here: the driver answers a held request
    /// with `None` before it answers the next command, so after a `Sync` answer the request
    /// is settled.
    async fn settle(&mut self) -> Result<(), ControlError> {
        let Some(mut take) = self.take.take() else {
            return Ok(());
        };
        self.ask(PullCommand::Sync).await?;
        match take.try_recv() {
            Ok(Some(batch)) => {
                self.receive(batch);
                Ok(())
            }
            Ok(None) => {
                // Not answered yet, against the driver's promise: keep waiting for it.
                self.take = Some(take);
                Ok(())
            }
            Err(oneshot::Canceled) => {
                self.ended = true;
                Err(ControlError::Stopped)
            }
        }
    }

    fn receive(&mut self, batch: Option<Polled>) {
        if let Some(mut polled) = batch
            && !polled.messages.is_empty()
        {
            self.buffer.extend(std::mem::take(&mut polled.messages));
            self.current = Some(polled);
        }
    }

    /// Hands the current batch's unread messages back to the core (when the batch is of
    /// `queue`, if given), ahead of the command that follows on the same channel. Should the
    /// driver be gone, that command reports it.
    fn hand_back(&mut self, queue: Option<&MessageQueue>) {
        if self.buffer.is_empty() || queue.is_some_and(|q| !self.is_current(q)) {
            return;
        }
        if let Some(mut unread) = self.current.take() {
            unread.messages = self.buffer.drain(..).collect();
            let _ = self
                .spawned
                .inputs
                .unbounded_send(Input::Pull(PullCommand::Unread(unread)));
        }
    }

    fn drop_unread(&mut self, queue: &MessageQueue) {
        if self.is_current(queue) {
            self.buffer.clear();
            self.current = None;
        }
    }

    /// Whether the current batch is of `queue`.
    fn is_current(&self, queue: &MessageQueue) -> bool {
        self.current.as_ref().is_some_and(|p| p.queue == *queue)
    }

    /// Sends a command made around a reply channel and waits for the reply.
    async fn ask<T>(
        &mut self,
        command: impl FnOnce(oneshot::Sender<T>) -> PullCommand,
    ) -> Result<T, ControlError> {
        self.spawned.ask(command).await
    }
}

impl<R: Runtime> Stream for LitePullConsumer<R> {
    type Item = Message;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        let this = self.get_mut();
        loop {
            if let Some(message) = this.buffer.pop_front() {
                return Poll::Ready(Some(message));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            let take = match &mut this.take {
                Some(take) => take,
                None => {
                    let (reply, answer) = oneshot::channel();
                    let asked =
                        this.spawned
                            .inputs
                            .unbounded_send(Input::Pull(PullCommand::Take {
                                max: this.batch,
                                reply,
                            }));
                    if asked.is_err() {
                        this.ended = true;
                        continue;
                    }
                    this.take.insert(answer)
                }
            };
            match take.poll_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(answer) => {
                    this.take = None;
                    match answer {
                        Ok(batch) => this.receive(batch),
                        Err(oneshot::Canceled) => this.ended = true,
                    }
                }
            }
        }
    }
}

impl<R: Runtime> FusedStream for LitePullConsumer<R> {
    fn is_terminated(&self) -> bool {
        self.ended && self.buffer.is_empty()
    }
}
