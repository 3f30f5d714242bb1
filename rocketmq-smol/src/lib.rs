//! The smol adapter for `rocketmq-consumer-core`; it also runs under async-std.
//!
//! The shared driver (`rocketmq-driver`) does the work; [`SmolRuntime`] tells it how smol
//! keeps time, sleeps, spawns and connects:
//!
//! ```no_run
//! use rocketmq_smol::{ConsumeFrom, ConsumeOutcome, PushConsumer};
//!
//! smol::block_on(async {
//!     let running = PushConsumer::builder("my-group")
//!         .name_server("127.0.0.1:9876")
//!         .subscribe("TopicTest", "*")
//!         .consume_from(ConsumeFrom::Last)
//!         .build()?
//!         .start_concurrently(|batch| async move {
//!             println!("got {} message(s)", batch.len());
//!             ConsumeOutcome::Success
//!         });
//!     let report = running.shutdown().await?;
//!     println!("{} queue offsets committed", report.committed.len());
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! The [`Producer`] has the same API as on tokio:
//!
//! ```no_run
//! use rocketmq_smol::{Producer, ProducerMessage};
//!
//! smol::block_on(async {
//!     let producer = Producer::builder("my-producers")
//!         .name_server("127.0.0.1:9876")
//!         .build()?;
//!     let batch = (0..10).map(|i| ProducerMessage::new(format!("step {i}")).with_sharding_key("job-7"));
//!     let result = producer.send_batch("TopicTest", batch).await?;
//!     println!("{} messages from #{}", result.msg_ids.len(), result.queue_offset);
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! A [`LitePullConsumer`] is read as a stream:
//!
//! ```no_run
//! use rocketmq_smol::{ConsumeFrom, LitePullConsumer};
//! use smol::stream::StreamExt;
//!
//! smol::block_on(async {
//!     let mut pull = LitePullConsumer::builder("my-group")
//!         .name_server("127.0.0.1:9876")
//!         .subscribe("TopicTest", "*")
//!         .consume_from(ConsumeFrom::First)
//!         .auto_commit(false)
//!         .build()?;
//!     while let Some(message) = pull.next().await {
//!         println!("#{}: {} bytes", message.queue_offset(), message.body().len());
//!         # break;
//!     }
//!     pull.commit().await?;
//!     pull.shutdown().await?;
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! Tasks go to `smol::spawn`: smol's global executor, which runs on its own threads (see
//! `SMOL_THREADS`). So the consumer needs no particular executor around it: it works from
//! `smol::block_on`, from async-std's `task::block_on` or `#[async_std::main]`, or from a plain
//! thread. Sockets and timers are `async-io`'s, driven by its reactor thread.

use std::sync::{Arc, Mutex};
use std::{io, time::Instant};

use driver::BoxFuture;
use smol::net::TcpStream;

pub use driver::prelude::*;

/// A push consumer on smol (or async-std).
pub type PushConsumer = driver::PushConsumer<SmolRuntime>;

/// How a smol [`PushConsumer`] is configured.
pub type PushConsumerBuilder = driver::PushConsumerBuilder<SmolRuntime>;

/// A producer on smol (or async-std).
pub type Producer = driver::Producer<SmolRuntime>;

/// How a smol [`Producer`] is configured.
pub type ProducerBuilder = driver::ProducerBuilder<SmolRuntime>;

/// A lite pull consumer on smol (or async-std): a `futures::Stream` of messages with seek,
/// pause and commit.
pub type LitePullConsumer = driver::LitePullConsumer<SmolRuntime>;

/// How a smol [`LitePullConsumer`] is configured.
pub type LitePullConsumerBuilder = driver::LitePullConsumerBuilder<SmolRuntime>;

/// A push consumer in pop mode (RocketMQ 5.x brokers) on smol (or async-std).
pub type PopConsumer = driver::PopConsumer<SmolRuntime>;

/// The builder of a [`PopConsumer`] or a [`SimpleConsumer`] on smol.
pub type PopConsumerBuilder = driver::PopConsumerBuilder<SmolRuntime>;

/// A running [`PopConsumer`] on smol.
pub type RunningPopConsumer = driver::RunningPopConsumer<SmolRuntime>;

/// A simple (explicit receive and ack) pop consumer on smol, also a `futures::Stream`.
pub type SimpleConsumer = driver::SimpleConsumer<SmolRuntime>;

pub use driver::{
    PopEvent, PopMessage, PopShutdownReport, PopStats, Receipt, ReceiptHandle, SimpleError,
};

/// The consumer's runtime on smol: the global executor, `async-io` timers, the system clock,
/// and `async-net` TCP streams (already `futures-io` streams).
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolRuntime;

impl Runtime for SmolRuntime {
    type Stream = TcpStream;

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep_until(&self, deadline: Instant) -> BoxFuture<()> {
        let timer = smol::Timer::at(deadline);
        Box::pin(async move {
            timer.await;
        })
    }

    fn spawn(&self, task: BoxFuture<()>) {
        smol::spawn(task).detach();
    }

    /// On a thread of its own that drives `async-io`'s reactor while the task waits
    /// (`smol::block_on`): a socket's readiness then wakes the task where it runs, where on the
    /// global executor every pull answer would wake an executor thread from the reactor's. The
    /// handlers it spawns still run on the global executor's threads.
    fn spawn_driver(&self, task: BoxFuture<()>) {
        // Kept reachable, so that a thread that cannot be made leaves the task to the executor.
        let slot = Arc::new(Mutex::new(Some(task)));
        let mine = Arc::clone(&slot);
        let started = std::thread::Builder::new()
            .name("rocketmq-driver".to_owned())
            .spawn(move || {
                let task = mine.lock().ok().and_then(|mut slot| slot.take());
                if let Some(task) = task {
                    smol::block_on(task);
                }
            });
        if started.is_err() {
            let task = slot.lock().ok().and_then(|mut slot| slot.take());
            if let Some(task) = task {
                smol::spawn(task).detach();
            }
        }
    }

    fn connect(&self, addr: String) -> BoxFuture<io::Result<TcpStream>> {
        Box::pin(async move {
            let socket = TcpStream::connect(addr.as_str()).await?;
            driver::socket::configure_tcp(&socket)?;
            Ok(socket)
        })
    }
}
