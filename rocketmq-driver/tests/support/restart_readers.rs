//! The other consumer kinds of the `broker_restart` scenario: a lite pull consumer, and on
//! Apache's 5.x broker a pop consumer (4.9 has no pop; the Rust broker's pop revive is broken,
//! README Compatibility 10), each reading the scenario's topic in a group of its own through
//! the restart, so the recovery after it is measured for every kind of consumer.
//!
//! The lite pull consumer starts from the first offset and must read every stored message. A
//! new pop group starts where the queue ends when it first pops, so the pop consumer is held
//! to the messages stored after the crash (the ones the recovery is about).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use driver::prelude::*;
use driver::{LitePullConsumer, PopConsumer, RunningPopConsumer};
use futures_channel::oneshot;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::{BrokerImpl, broker_impl, unique};

use super::broker_scenario::{Topic, body_of, wait_for};

/// How long a popped message stays invisible: what a pop cut off by the crash costs before
/// the broker hands its message out again.
const POP_INVISIBLE: Duration = Duration::from_secs(20);

/// Each message a reader got, with when its handler (or `next`) had it.
type Reads = Arc<Mutex<Vec<(String, Instant)>>>;

/// A consumer of another kind, running.
pub(crate) struct Reader<R: Runtime> {
    /// Its kind, as the report names it.
    pub(crate) kind: &'static str,
    /// Whether it must read every stored message (else those stored after the crash).
    reads_all: bool,
    reads: Reads,
    running: Running<R>,
}

enum Running<R: Runtime> {
    /// The task reading the stream: told to stop, it shuts the consumer down and says how
    /// that went.
    LitePull {
        stop: oneshot::Sender<()>,
        done: oneshot::Receiver<Result<ShutdownReport, DriverStopped>>,
    },
    Pop(RunningPopConsumer<R>),
}

/// Starts the readers the local broker serves: lite pull always, pop on Apache's 5.x broker.
pub(crate) fn start<R: Runtime>(topic: &Topic) -> Vec<Reader<R>> {
    let mut readers = vec![lite_pull::<R>(topic)];
    if broker_impl() == BrokerImpl::Java5 {
        readers.push(pop::<R>(topic));
    }
    readers
}

fn lite_pull<R: Runtime>(topic: &Topic) -> Reader<R> {
    let mut pull = LitePullConsumer::<R>::builder(unique("restart-lite"))
        .name_server(topic.namesrv.clone())
        .subscribe(topic.name.clone(), "*")
        .consume_from(ConsumeFrom::First)
        .build()
        .expect("the lite pull consumer's configuration is valid");
    let reads = Reads::default();
    let log = Arc::clone(&reads);
    let (stop, mut stopped) = oneshot::channel::<()>();
    let (report, done) = oneshot::channel();
    R::default().spawn(Box::pin(async move {
        // Until told to stop (or the stream ends).
        while let Either::Left((Some(message), _)) = future::select(pull.next(), &mut stopped).await
        {
            if let Ok(mut log) = log.lock() {
                log.push((body_of(&message), Instant::now()));
            }
        }
        let _ = report.send(pull.shutdown().await);
    }));
    Reader {
        kind: "lite pull",
        reads_all: true,
        reads,
        running: Running::LitePull { stop, done },
    }
}

fn pop<R: Runtime>(topic: &Topic) -> Reader<R> {
    let reads = Reads::default();
    let log = Arc::clone(&reads);
    let running = PopConsumer::<R>::builder(unique("restart-pop"))
        .name_server(&topic.namesrv)
        .subscribe(&topic.name, "*")
        .invisible_time(POP_INVISIBLE)
        .build()
        .expect("the pop consumer's configuration is valid")
        .start(move |messages: Messages| {
            if let Ok(mut log) = log.lock() {
                log.extend(messages.iter().map(|m| (body_of(m), Instant::now())));
            }
            future::ready(ConsumeOutcome::Success)
        })
        .expect("the pop consumer starts");
    Reader {
        kind: "pop",
        reads_all: false,
        reads,
        running: Running::Pop(running),
    }
}

impl<R: Runtime> Reader<R> {
    /// Waits (bounded by the scenario's `WAIT`) until it read every message it must of
    /// `stored`, those stored after the crash being `after_crash`; then returns when it first
    /// read one of `after_crash`.
    pub(crate) async fn first_after_crash(
        &self,
        stored: &BTreeSet<&String>,
        after_crash: &BTreeSet<&String>,
    ) -> Instant {
        let must = if self.reads_all { stored } else { after_crash };
        let read = || -> BTreeSet<String> {
            let reads = self.reads.lock().map(|r| r.clone()).unwrap_or_default();
            reads.into_iter().map(|(body, _)| body).collect()
        };
        wait_for::<R>(
            &format!("the {} consumer reads every message", self.kind),
            || {
                let read = read();
                must.iter().all(|b| read.contains(*b))
            },
        )
        .await;
        let reads = self.reads.lock().map(|r| r.clone()).unwrap_or_default();
        reads
            .iter()
            .filter(|(body, _)| after_crash.contains(body))
            .map(|(_, at)| *at)
            .min()
            .expect("it read the messages stored after the crash")
    }

    /// Shuts it down, failing the test if that fails.
    pub(crate) async fn shutdown(self) {
        match self.running {
            Running::LitePull { stop, done } => {
                let _ = stop.send(());
                let report = done.await.expect("the lite pull task reports its shutdown");
                assert!(
                    report.is_ok(),
                    "the lite pull consumer shuts down: {report:?}"
                );
            }
            Running::Pop(running) => {
                let report = running.shutdown().await;
                assert!(report.is_ok(), "the pop consumer shuts down: {report:?}");
            }
        }
    }
}
