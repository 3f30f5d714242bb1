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
use std::sync::Arc;
use std::task::{Context, Poll};

use consumer_core::config::ConsumeMode;
use consumer_core::output::Polled;
use consumer_core::{ConfigError, ConsumerStats, Event, MessageQueue, ShutdownReport};
use futures_channel::oneshot;
use futures_util::FutureExt;
use futures_util::stream::{FusedStream, Stream};
use proto::message::Message;

use crate::DriverStopped;
use crate::control::{CommitReport, ControlError};
use crate::input::{EventSink, Input, PullCommand};
use crate::runtime::Runtime;
use crate::setup::{Setup, Spawned, setup_setters};
#[cfg(doc)]
use crate::{ConsumeFrom, ConsumerConfig};

/// Messages the stream takes from the core at a time, by default.
const DEFAULT_POLL_BATCH: usize = 32;

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
        let mut setup = Setup::new(group.into());
        setup.config.consume_mode = ConsumeMode::Poll;
        LitePullConsumerBuilder {
            setup,
            assigned: Vec::new(),
            batch: DEFAULT_POLL_BATCH,
            events: None,
            _runtime: PhantomData,
        }
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

/// Configures a [`LitePullConsumer`].
pub struct LitePullConsumerBuilder<R: Runtime> {
    setup: Setup,
    assigned: Vec<MessageQueue>,
    batch: usize,
    events: Option<EventSink>,
    _runtime: PhantomData<R>,
}

impl<R: Runtime> std::fmt::Debug for LitePullConsumerBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LitePullConsumerBuilder")
            .field("config", &self.setup.config)
            .field("subscriptions", &self.setup.subscriptions)
            .field("assigned", &self.assigned)
            .field("poll_batch_size", &self.batch)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> LitePullConsumerBuilder<R> {
    setup_setters! {
        /// Adds a name server address (`host:port`); call again for more.
        name_server;

        /// Subscribes to `topic` with a tag expression (`*`, or `TagA || TagB`): the group's
        /// members share its queues by rebalance. Call again for more topics. With
        /// [`LitePullConsumerBuilder::assign`] on the same topic, the expression filters the
        /// assigned queues.
        subscribe;

        /// Subscribes to `topic` with an SQL92 expression over message properties, evaluated by
        /// the broker (see `PushConsumerBuilder::subscribe_sql92`).
        subscribe_sql92;
    }

    /// Reads exactly `queues`, without rebalancing them (Java's `assign`).
    #[must_use]
    pub fn assign(mut self, queues: impl IntoIterator<Item = MessageQueue>) -> Self {
        self.assigned.extend(queues);
        self
    }

    setup_setters! {
        /// Where queues without a committed offset start ([`ConsumeFrom::Last`] by default).
        consume_from;

        /// Whether what the stream took is committed every `persist_interval` (5 s) on its own
        /// and at shutdown (on by default). Off, only [`LitePullConsumer::commit`] commits:
        /// shutdown stores what it committed last, nothing further (as Java's).
        auto_commit;
    }

    /// The most messages the stream takes from the consumer at a time (32 by default); see
    /// the module docs for what that means for auto-commit.
    #[must_use]
    pub fn poll_batch_size(mut self, messages: usize) -> Self {
        self.batch = messages;
        self
    }

    setup_setters! {
        /// Every member reads every message, keeping its offsets in a local file (see
        /// `PushConsumerBuilder::broadcasting`).
        broadcasting;

        /// The directory of broadcasting offset files (`$HOME/.rocketmq_offsets` by default).
        offset_dir;

        /// The IP address in the client id (see `PushConsumerBuilder::client_ip`).
        client_ip;

        /// The instance name in the client id (see `PushConsumerBuilder::instance_name`).
        instance_name;

        /// Credentials for a cluster with ACL (see `PushConsumerBuilder::credentials`).
        credentials;

        /// The tenant namespace (see `PushConsumerBuilder::namespace`).
        namespace;

        /// TLS for every connection (see `PushConsumerBuilder::tls`).
        tls;

        /// How the group's members share a topic's queues (every member must use the same):
        /// [`Strategy::Averagely`](crate::Strategy::Averagely) by default, as Java; also by
        /// circle, by config, by machine room, machine room nearby (with a
        /// [`MachineRoomResolver`](crate::MachineRoomResolver) such as
        /// [`RoomPrefix`](crate::RoomPrefix)), and consistent hash, each as its Java
        /// `AllocateMessageQueueStrategy`.
        allocation;

        /// Export the consumer's stats through the `metrics` facade every `every` (the
        /// `metrics` feature; names and labels in [`crate::metrics`]), for the
        /// recorder the application installed. Costs nothing per message.
        metrics;

        /// At most this many messages (and, with
        /// [`RateLimit::with_bytes`](crate::RateLimit::with_bytes), body bytes) a second reach
        /// the application, over all queues. Messages beyond it wait in the cache, and a
        /// queue caching one second of the limit stops pulling; nothing is dropped. Bursts of
        /// up to 100 ms of the rate pass at once; `stats()` counts how often the limit held
        /// messages back. Unlimited by default; zero fails `build`.
        rate_limit;

        /// A rate limit for `topic` alone (as subscribed), on top of [`Self::rate_limit`]; call
        /// again for more topics.
        topic_rate_limit;
    }

    /// Calls `observer` with every [`Event`] the consumer reports, on the driver task: it must
    /// return quickly.
    #[must_use]
    pub fn on_event(mut self, observer: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(observer));
        self
    }

    setup_setters! {
        /// Adjusts any other knob of the core's [`ConsumerConfig`] (cache limits, intervals...).
        /// The consume mode stays poll mode.
        configure;
    }

    /// Checks the configuration, creates the consumer and starts it: spawns its driver task
    /// on the runtime (call it inside a tokio runtime for `rocketmq-tokio`). Messages arrive
    /// as the stream is read.
    pub fn build(mut self) -> Result<LitePullConsumer<R>, ConfigError> {
        if self.setup.subscriptions.is_empty() && self.assigned.is_empty() {
            return Err(ConfigError(
                "subscribe to a topic or assign queues".to_owned(),
            ));
        }
        if self.batch == 0 {
            return Err(ConfigError("poll_batch_size must be at least 1".to_owned()));
        }
        self.setup.config.consume_mode = ConsumeMode::Poll;
        let checked = self.setup.check()?;
        let runtime = R::default();
        let now = runtime.now();
        let mut consumer = checked.consumer(ConsumeMode::Poll, now)?;
        if !self.assigned.is_empty() {
            consumer.assign(now, self.assigned)?;
        }
        let spawned = checked.spawn(&runtime, consumer, None, self.events);
        Ok(LitePullConsumer {
            spawned,
            client_id: checked.client_id,
            batch: self.batch,
            buffer: VecDeque::new(),
            current: None,
            take: None,
            ended: false,
            _runtime: PhantomData,
        })
    }
}
