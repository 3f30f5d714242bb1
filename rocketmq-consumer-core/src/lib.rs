//! The sans-IO RocketMQ push consumer.
//!
//! [`Consumer`] is a state machine in the manner of `quinn-proto`: it performs no I/O, reads
//! no clock and starts no threads. The driver (an adapter crate, or your own loop) feeds it
//! inputs and carries out its outputs:
//!
//! - inputs, each with the current time: [`Consumer::handle_connected`],
//!   [`Consumer::handle_disconnected`], [`Consumer::handle_command`] (every frame that arrives),
//!   [`Consumer::handle_timeout`]; and the application's [`Consumer::subscribe`],
//!   [`Consumer::complete`], [`Consumer::shutdown`];
//! - outputs, drained after every input: [`Consumer::poll_output`] ([`Output::Wire`]: open,
//!   write or close a connection; [`Output::Deliver`], [`Output::Event`], ...) and
//!   [`Consumer::poll_timeout`], the time at which to call `handle_timeout` next.
//!
//! Time must not go backwards between calls; calling `handle_timeout` early is harmless.
//! The workspace's `rocketmq-examples` crate drives a consumer and a producer this way on plain
//! threads and `std::net` sockets, without any async runtime (README, "Embedding the consumer
//! core", lists what a runtime must provide).
//!
//! ```no_run
//! use std::time::{Instant, SystemTime, UNIX_EPOCH};
//! use rocketmq_consumer_core::{Consumer, ConsumerConfig, Output, Wire};
//!
//! let config = ConsumerConfig::new("my-group", vec!["127.0.0.1:9876".into()]);
//! let unix_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
//! let mut consumer = Consumer::new(config, "10.0.0.5@1234#1", Instant::now(), unix_ms)?;
//! consumer.subscribe(Instant::now(), "TopicTest", "TagA || TagB")?;
//! loop {
//!     while let Some(output) = consumer.poll_output() {
//!         match output {
//!             Output::Wire(Wire::Connect { .. }) => { /* open a socket, then handle_connected */ }
//!             Output::Wire(Wire::Send { .. }) => { /* frame::encode and write it */ }
//!             Output::Deliver(delivery) => { /* run the handler, then complete(..) */ }
//!             _ => {}
//!         }
//!     }
//!     // wait for a frame, a completion, or poll_timeout(); feed it back with handle_*
//!     # break;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It covers clustering and broadcasting ([`MessageModel`]) with concurrent, orderly or poll
//! consumption ([`ConsumeMode`]): routes, heartbeats, rebalance, long-polling pulls, flow
//! control, offsets (on the brokers, or handed to the driver with [`Output::StoreOffsets`] in
//! broadcasting), orderly queue leases, send-back retries and dead letters, the requests
//! brokers send to clients, and graceful shutdown. Poll mode is Java's lite pull consumer: no
//! deliveries, the application takes messages with [`Consumer::poll_messages`].

pub mod config;
mod conn;
mod consumer;
mod error;
mod id;
mod link;
mod liveness;
mod membership;
pub mod messages;
pub mod namespace;
pub mod output;
pub mod pop;
pub mod producer;
mod pull;
pub mod queue;
pub mod rate;
pub mod rebalance;
mod requests;
mod signer;
pub mod stats;
mod timer;

pub use config::{ConfigError, ConsumeFrom, ConsumeMode, ConsumerConfig, MessageModel};
pub use consumer::{Consumer, RETRY_TOPIC_PREFIX};
pub use messages::Messages;
pub use output::{
    ConnId, ConsumeOutcome, Delivery, DeliveryId, Event, FailureReason, Handled, Output, Polled,
    RequestId, ShutdownReport, Wire,
};
pub use pop::{PopConfig, PopConsumer, PopMode};
pub use proto::MessageQueue;
pub use proto::acl::{Credentials, SignatureAlgorithm};
pub use signer::is_access_refusal;
pub use stats::{
    ConnectionState, ConnectionStats, ConsumerStats, Latency, LatencyBuckets, QueueStats,
};

/// Java's instance name for a clustering consumer: `pid#startNanos`, unique per process
/// (`ClientConfig.changeInstanceNameToPID`), so two containers with the same pid still differ.
pub fn default_instance_name(pid: u32, start_nanos: u128) -> String {
    format!("{pid}#{start_nanos}")
}

/// A client id as brokers know it: `ip@instanceName` (`ClientConfig.buildMQClientId`).
pub fn client_id(ip: &str, instance_name: &str) -> String {
    format!("{ip}@{instance_name}")
}
