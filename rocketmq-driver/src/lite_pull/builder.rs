//! [`LitePullConsumerBuilder`]: the lite pull consumer's configuration, checked and turned into
//! a running [`LitePullConsumer`] with its driver task.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

use consumer_core::config::ConsumeMode;
use consumer_core::{ConfigError, Event, MessageQueue};

use super::LitePullConsumer;
use crate::input::EventSink;
use crate::runtime::Runtime;
use crate::setup::{Setup, setup_setters};
#[cfg(doc)]
use crate::{ConsumeFrom, ConsumerConfig};

/// Messages the stream takes from the core at a time, by default.
const DEFAULT_POLL_BATCH: usize = 32;

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
    /// A builder for a lite pull consumer of `group`, with Java's defaults.
    pub(super) fn new(group: String) -> Self {
        let mut setup = Setup::new(group);
        setup.config.consume_mode = ConsumeMode::Poll;
        Self {
            setup,
            assigned: Vec::new(),
            batch: DEFAULT_POLL_BATCH,
            events: None,
            _runtime: PhantomData,
        }
    }

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
