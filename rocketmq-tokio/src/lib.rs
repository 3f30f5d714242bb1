//! The tokio adapter for `rocketmq-consumer-core`.
//!
//! All the driving (connections, the one timer, the handler tasks) lives once in
//! `rocketmq-driver`; this crate only says how tokio does each of the four things that driver
//! needs, in [`TokioRuntime`], and names the API for it:
//!
//! ```no_run
//! use rocketmq_tokio::{ConsumeFrom, ConsumeOutcome, PushConsumer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let consumer = PushConsumer::builder("my-group")
//!     .name_server("127.0.0.1:9876")
//!     .subscribe("TopicTest", "TagA || TagB")
//!     .consume_from(ConsumeFrom::First)
//!     .build()?;
//! let running = consumer.start_concurrently(|messages| async move {
//!     for message in &messages {
//!         println!("{} bytes", message.body().len());
//!     }
//!     ConsumeOutcome::Success
//! });
//! // ...
//! let report = running.shutdown().await?;
//! println!("committed {:?}", report.committed);
//! # Ok(())
//! # }
//! ```
//!
//! The [`Producer`] sends and waits for the broker to store each message:
//!
//! ```no_run
//! use rocketmq_tokio::{Producer, ProducerMessage};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let producer = Producer::builder("my-producers")
//!     .name_server("127.0.0.1:9876")
//!     .build()?;
//! // Round robin over the topic's queues:
//! producer.send("TopicTest", "hello").await?;
//! // Every message of order 42 on one queue, in the order sent:
//! let message = ProducerMessage::new("paid").with_tag("TagA").with_sharding_key("order-42");
//! let result = producer.send("TopicTest", message).await?;
//! println!("stored at {:?} #{}", result.queue, result.queue_offset);
//! # Ok(())
//! # }
//! ```
//!
//! A [`LitePullConsumer`] is a `futures::Stream` of messages, with `seek`, `pause`, `commit`:
//!
//! ```no_run
//! use futures_util::StreamExt;
//! use rocketmq_tokio::{ConsumeFrom, LitePullConsumer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut pull = LitePullConsumer::builder("my-group")
//!     .name_server("127.0.0.1:9876")
//!     .subscribe("TopicTest", "*")
//!     .consume_from(ConsumeFrom::First)
//!     .build()?;
//! while let Some(message) = pull.next().await {
//!     println!("#{}: {} bytes", message.queue_offset(), message.body().len());
//! }
//! pull.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Start consumers and producers inside a tokio runtime (with the `time` and `io` drivers
//! enabled): the driver spawns its tasks with `tokio::spawn`. Tokio's clock is used
//! throughout, so a runtime with paused time drives the consumer consistently.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use driver::BoxFuture;
use driver::bytes::BytesMut;
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt};

pub use driver::prelude::*;

/// A push consumer on tokio.
pub type PushConsumer = driver::PushConsumer<TokioRuntime>;

/// The builder of a [`PushConsumer`] on tokio.
pub type PushConsumerBuilder = driver::PushConsumerBuilder<TokioRuntime>;

/// A producer on tokio.
pub type Producer = driver::Producer<TokioRuntime>;

/// The builder of a [`Producer`] on tokio.
pub type ProducerBuilder = driver::ProducerBuilder<TokioRuntime>;

/// A lite pull consumer on tokio: a `futures::Stream` of messages with seek, pause and commit.
pub type LitePullConsumer = driver::LitePullConsumer<TokioRuntime>;

/// The builder of a [`LitePullConsumer`] on tokio.
pub type LitePullConsumerBuilder = driver::LitePullConsumerBuilder<TokioRuntime>;

/// A push consumer in pop mode (RocketMQ 5.x brokers) on tokio.
pub type PopConsumer = driver::PopConsumer<TokioRuntime>;

/// The builder of a [`PopConsumer`] or a [`SimpleConsumer`] on tokio.
pub type PopConsumerBuilder = driver::PopConsumerBuilder<TokioRuntime>;

/// A running [`PopConsumer`] on tokio.
pub type RunningPopConsumer = driver::RunningPopConsumer<TokioRuntime>;

/// A simple (explicit receive and ack) pop consumer on tokio, also a `futures::Stream`.
pub type SimpleConsumer = driver::SimpleConsumer<TokioRuntime>;

pub use driver::{
    PopEvent, PopMessage, PopShutdownReport, PopStats, Receipt, ReceiptHandle, SimpleError,
};

/// The consumer's runtime on tokio: `tokio::spawn`, tokio's timer and clock, and
/// `tokio::net::TcpStream` seen through `tokio_util::compat` as a `futures-io` stream.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioRuntime;

impl Runtime for TokioRuntime {
    type Stream = Compat<TcpStream>;

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep_until(&self, deadline: Instant) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep_until(deadline.into()))
    }

    fn spawn(&self, task: BoxFuture<()>) {
        // Detached: the driver reports its end over its own channel.
        drop(tokio::spawn(task));
    }

    fn connect(&self, addr: String) -> BoxFuture<io::Result<Self::Stream>> {
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            driver::socket::configure_tcp(&stream)?;
            Ok(stream.compat())
        })
    }

    /// Reads into `buf`'s spare capacity through tokio's `ReadBuf`, which takes memory not yet
    /// initialized: no copy from a buffer of the driver's own.
    fn poll_read_in_place(
        stream: Pin<&mut Self::Stream>,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Option<Poll<io::Result<usize>>> {
        let stream = Pin::into_inner(stream).get_mut();
        Some(tokio_util::io::poll_read_buf(Pin::new(stream), cx, buf))
    }
}
