//! The async driver shared by the runtime adapters (`rocketmq-tokio`, `rocketmq-smol`).
//!
//! [`consumer_core::Consumer`] decides everything: what to connect to, what to send, when to
//! retry, which offsets to commit. This crate only carries out its outputs, once, generic over a
//! small [`Runtime`] trait (clock, timer, spawn, TCP connect), the way quinn shares its endpoint
//! driver between runtimes:
//!
//! - one task owns the `Consumer` by value (no locks) and feeds it every input (the pop
//!   consumer and the producer have a task each in the same shape);
//! - that task reads and writes its connections itself (`Output::Wire`: open, write, close),
//!   so a pull answer and the next pull request cross no thread; a connection that fails to
//!   open or breaks is reported with `handle_disconnected`;
//! - one timer, re-armed to `poll_timeout()`, with the clock checked before waiting;
//! - each `Output::Deliver` runs the user's handler on its own task, but for a handler that
//!   finishes at its first poll while handlers are cheap (first polls averaging under 5 µs):
//!   that poll happens on the driver task, which saves a task and a thread hand-off per
//!   delivery. The core bounds deliveries
//!   in flight (`max_in_flight_deliveries`, 20 by default), so that bounds the handlers too;
//!   in orderly mode it also hands out one delivery per queue at a time, under the queue's
//!   broker lock, so per-queue order needs nothing more here;
//! - broadcasting's `Output::StoreOffsets` replaces the group's local offset file
//!   (`<offset_dir>/<ip>@<instance>/<group>/offsets.json`, Java's path and format, locked
//!   while the consumer runs) atomically;
//! - poll mode (the [`LitePullConsumer`]) has no handler: the application's stream takes
//!   messages from the core only when it is read, and its seeks, pauses and commits reach the
//!   core through the same input channel.
//!
//! The driver logs with `tracing` what changes a consumer's shape (assignments, offset
//! corrections, lock changes, lost connections, failed send-backs), inside a
//! `rocketmq_consumer` span naming the group and client id; nothing per message.
//!
//! Pop consumption (RocketMQ 5.x) has its own core state machine
//! ([`consumer_core::pop::PopConsumer`]) and driver task (`pop_driver`, the same loop over the
//! same connections): [`PopConsumer`] runs a handler, [`SimpleConsumer`] leaves receiving and
//! acking to the application.
//!
//! The [`Producer`] is shared the same way: `consumer_core::producer` decides routes, queues,
//! requests and retries; this crate sends the requests and waits for the answers.
//!
//! Users reach this through an adapter crate: `rocketmq_tokio::PushConsumer::builder("g")`,
//! `rocketmq_tokio::Producer::builder("g")`.

mod connection;
mod control;
mod driver;
mod handler;
mod host;
mod input;
mod lite_pull;
#[cfg(feature = "metrics")]
pub mod metrics;
mod offset_file;
mod pop;
mod pop_driver;
mod producer;
mod push;
mod runtime;
mod setup;
mod simple;
pub mod socket;
#[cfg(feature = "tls")]
mod tls;
mod trace_dispatch;
mod transport;

/// The `bytes` crate this one uses: [`Runtime::poll_read_in_place`] reads into its `BytesMut`.
pub use bytes;
pub use consumer_core::is_access_refusal;
pub use consumer_core::namespace::Namespace;
pub use consumer_core::pop::{PopEvent, PopMessage, PopShutdownReport, PopStats, Receipt};
pub use consumer_core::producer::{
    DEFAULT_TOPIC, ProducerConfig, ProducerMessage, SendError, SendResult, SendStatus,
};
pub use consumer_core::rate::RateLimit;
pub use consumer_core::rebalance::{
    DEFAULT_VIRTUAL_NODES, MachineRoomResolver, RoomPrefix, Strategy,
};
pub use consumer_core::stats::{
    ConnectionState, ConnectionStats, ConsumerStats, Latency, QueueStats,
};
pub use consumer_core::{
    ConfigError, ConsumeFrom, ConsumeOutcome, ConsumerConfig, Credentials, Event, FailureReason,
    MessageQueue, Messages, ShutdownReport, SignatureAlgorithm,
};
pub use control::{CommitReport, ControlError};
/// The rustls the `tls` feature uses, for [`Tls::rustls_client_config`]'s types.
#[cfg(feature = "tls")]
pub use futures_rustls::rustls;
pub use lite_pull::{LitePullConsumer, LitePullConsumerBuilder};
pub use pop::{PopConsumer, PopConsumerBuilder, RunningPopConsumer};
pub use producer::{Producer, ProducerBuilder};
pub use proto::headers::ReceiptHandle;
pub use proto::message::Message;
pub use push::{PushConsumer, PushConsumerBuilder, RunningConsumer};
pub use runtime::{BoxFuture, Runtime};
pub use simple::{SimpleConsumer, SimpleError};
#[cfg(feature = "tls")]
pub use tls::Tls;

/// The names an application needs, for the adapters to re-export in one line.
pub mod prelude {
    #[cfg(feature = "tls")]
    pub use crate::Tls;
    pub use crate::{
        CommitReport, ConfigError, ConnectionState, ConnectionStats, ConsumeFrom, ConsumeOutcome,
        ConsumerConfig, ConsumerStats, ControlError, Credentials, DriverStopped, Event,
        FailureReason, Latency, Message, MessageQueue, Messages, ProducerConfig, ProducerMessage,
        QueueStats, RateLimit, RunningConsumer, Runtime, SendError, SendResult, SendStatus,
        ShutdownReport, SignatureAlgorithm, Strategy,
    };
}

/// The driver task ended without a shutdown report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverStopped;

impl std::fmt::Display for DriverStopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the consumer's driver task stopped before the consumer closed")
    }
}

impl std::error::Error for DriverStopped {}
