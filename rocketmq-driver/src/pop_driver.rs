//! The driver task of a pop consumer (push or simple mode): owns the core's
//! [`consumer_core::pop::PopConsumer`] by value and carries out its outputs, in the pattern of
//! `driver/mod.rs`: the connections it reads itself (the same `Conns`), one input channel, one
//! timer re-armed to `poll_timeout()` with the clock checked before waiting.
//!
//! Push mode runs each delivery's handler on its own task (a panicking handler counts as
//! `ReconsumeLater`, as in the push consumer); simple mode answers the application's receives,
//! acks and invisibility changes by matching the core's request ids.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use consumer_core::output::RequestId;
use consumer_core::pop::{
    PopConsumer, PopDeliveryId, PopEvent, PopMessage, PopOutput, PopShutdownReport, PopStats,
    Receipt,
};
use consumer_core::{ConsumeOutcome, FailureReason, Messages};
use futures_channel::{mpsc, oneshot};
use futures_util::FutureExt;

use crate::driver::conns::Conns;
use crate::driver::wake::{self, Wake, Woken};
use crate::runtime::{BoxFuture, Runtime};
use crate::transport::Connector;

/// A push-mode handler, boxed once.
pub(crate) type PopHandler = Arc<dyn Fn(Messages) -> BoxFuture<ConsumeOutcome> + Send + Sync>;

/// An observer of the pop consumer's events.
pub(crate) type PopEventSink = Arc<dyn Fn(&PopEvent) + Send + Sync>;

/// What the pop driver task is told.
pub(crate) enum PopInput {
    Completed(PopDeliveryId, ConsumeOutcome),
    Shutdown,
    /// Stop at once, as a crash would: nothing more is sent.
    Abort,
    Receive {
        max: u32,
        invisible: Duration,
        reply: oneshot::Sender<Result<Vec<PopMessage>, FailureReason>>,
    },
    Ack {
        receipt: Receipt,
        reply: oneshot::Sender<Result<(), FailureReason>>,
    },
    Change {
        receipt: Receipt,
        invisible: Duration,
        reply: oneshot::Sender<Result<Receipt, FailureReason>>,
    },
    Stats(oneshot::Sender<PopStats>),
}

/// The application's end of a pop driver task.
pub(crate) struct PopSpawned {
    pub(crate) inputs: mpsc::UnboundedSender<PopInput>,
    report: Option<oneshot::Receiver<PopShutdownReport>>,
}

impl PopSpawned {
    /// Spawns the driver of `pop` on `runtime`.
    pub(crate) fn spawn<R: Runtime>(
        runtime: &R,
        pop: PopConsumer,
        tls: Option<Connector>,
        handler: Option<PopHandler>,
        events: Option<PopEventSink>,
    ) -> Self {
        let (inputs_tx, inputs) = mpsc::unbounded();
        let (done, report) = oneshot::channel();
        let span = tracing::info_span!(
            "rocketmq_pop_consumer",
            group = %pop.config().group,
            client_id = %pop.client_id(),
        );
        let driver = PopDriver {
            runtime: runtime.clone(),
            pop,
            tls,
            handler,
            events,
            inputs_tx: inputs_tx.clone(),
            inputs,
            done,
        };
        runtime.spawn_driver(Box::pin(tracing::Instrument::instrument(
            driver.run(),
            span,
        )));
        Self {
            inputs: inputs_tx,
            report: Some(report),
        }
    }

    /// Sends an input made around a reply channel and waits for the reply; `None` when the
    /// driver stopped.
    pub(crate) async fn ask<T>(
        &self,
        input: impl FnOnce(oneshot::Sender<T>) -> PopInput,
    ) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        self.inputs.unbounded_send(input(reply)).ok()?;
        answer.await.ok()
    }

    /// Stops the driver at once (see `RunningPopConsumer::abort`).
    pub(crate) fn abort(&mut self) {
        let _ = self.inputs.unbounded_send(PopInput::Abort);
        self.report = None;
    }

    /// Asks for a graceful shutdown and waits for its report.
    pub(crate) async fn shutdown(&mut self) -> Result<PopShutdownReport, crate::DriverStopped> {
        let _ = self.inputs.unbounded_send(PopInput::Shutdown);
        match self.report.take() {
            Some(report) => report.await.map_err(|_| crate::DriverStopped),
            None => Err(crate::DriverStopped),
        }
    }
}

impl Drop for PopSpawned {
    fn drop(&mut self) {
        if self.report.is_some() {
            let _ = self.inputs.unbounded_send(PopInput::Shutdown);
        }
    }
}

struct PopDriver<R: Runtime> {
    runtime: R,
    pop: PopConsumer,
    /// TLS for every connection, when the consumer has it.
    tls: Option<Connector>,
    handler: Option<PopHandler>,
    events: Option<PopEventSink>,
    inputs_tx: mpsc::UnboundedSender<PopInput>,
    inputs: mpsc::UnboundedReceiver<PopInput>,
    done: oneshot::Sender<PopShutdownReport>,
}

/// Replies waiting for the core's answers, by request id.
#[derive(Default)]
struct Waiters {
    receives: BTreeMap<RequestId, oneshot::Sender<Result<Vec<PopMessage>, FailureReason>>>,
    acks: BTreeMap<RequestId, oneshot::Sender<Result<(), FailureReason>>>,
    changes: BTreeMap<RequestId, oneshot::Sender<Result<Receipt, FailureReason>>>,
}

impl<R: Runtime> PopDriver<R> {
    async fn run(self) {
        let Self {
            runtime,
            mut pop,
            tls,
            handler,
            events,
            inputs_tx,
            mut inputs,
            done,
        } = self;
        let mut conns = Conns::new(runtime.clone(), tls);
        let mut waiters = Waiters::default();
        let mut report = None;
        let mut wake = Wake::new(runtime.clone());
        loop {
            while let Some(output) = pop.poll_output() {
                match output {
                    PopOutput::Wire(wire) => conns.carry(wire),
                    PopOutput::Deliver(delivery) => {
                        let Some(handler) = &handler else { continue };
                        let handler = Arc::clone(handler);
                        let tx = inputs_tx.clone();
                        let id = delivery.id;
                        let messages: Messages =
                            delivery.messages.into_iter().map(|m| m.message).collect();
                        runtime.spawn(Box::pin(async move {
                            let outcome = AssertUnwindSafe(async move { handler(messages).await })
                                .catch_unwind()
                                .await
                                .unwrap_or(ConsumeOutcome::ReconsumeLater);
                            let _ = tx.unbounded_send(PopInput::Completed(id, outcome));
                        }));
                    }
                    PopOutput::Event(event) => {
                        trace(&event);
                        if let Some(sink) = &events {
                            sink(&event);
                        }
                        match event {
                            PopEvent::Received { request, messages } => {
                                if let Some(reply) = waiters.receives.remove(&request) {
                                    let _ = reply.send(messages);
                                }
                            }
                            PopEvent::Acked { request, result } => {
                                if let Some(reply) = waiters.acks.remove(&request) {
                                    let _ = reply.send(result);
                                }
                            }
                            PopEvent::InvisibilityChanged { request, receipt } => {
                                if let Some(reply) = waiters.changes.remove(&request) {
                                    let _ = reply.send(receipt);
                                }
                            }
                            PopEvent::Closed(r) => report = Some(r),
                            _ => {}
                        }
                    }
                }
            }
            conns.flush().await;
            if pop.is_closed() {
                break;
            }
            match wake.next(pop.poll_timeout(), &mut inputs, &mut conns).await {
                Woken::Due(now) => pop.handle_timeout(now),
                Woken::Input(input) => {
                    // The driver holds a sender itself, so the channel never ends while it runs.
                    let Some(input) = input else { break };
                    if matches!(input, PopInput::Abort) {
                        break;
                    }
                    handle(&mut pop, &mut waiters, runtime.now(), input);
                }
                Woken::Conn(conn, event) => wake::feed(&mut pop, runtime.now(), conn, event),
            }
        }
        conns.abort_all();
        let _ = done.send(report.unwrap_or_default());
    }
}

fn handle(pop: &mut PopConsumer, waiters: &mut Waiters, now: Instant, input: PopInput) {
    match input {
        PopInput::Completed(id, outcome) => pop.complete(now, id, outcome),
        PopInput::Shutdown => pop.shutdown(now),
        // The run loop stops before it gets here.
        PopInput::Abort => {}
        PopInput::Receive {
            max,
            invisible,
            reply,
        } => {
            let request = pop.receive(now, max, invisible);
            waiters.receives.insert(request, reply);
        }
        PopInput::Ack { receipt, reply } => {
            let request = pop.ack(now, &receipt);
            waiters.acks.insert(request, reply);
        }
        PopInput::Change {
            receipt,
            invisible,
            reply,
        } => {
            let request = pop.change_invisible_duration(now, &receipt, invisible);
            waiters.changes.insert(request, reply);
        }
        PopInput::Stats(reply) => {
            let _ = reply.send(pop.stats());
        }
    }
}

/// What an operator sees: assignment changes, refusals, failed settles, dead letters.
fn trace(event: &PopEvent) {
    match event {
        PopEvent::Assigned { topic, queues } => {
            tracing::info!(%topic, queues = ?queues, "pop assignment");
        }
        PopEvent::RequestFailed {
            addr,
            request,
            reason,
        } => tracing::debug!(%addr, request, ?reason, "request failed"),
        PopEvent::SettleFailed {
            receipt,
            request,
            reason,
        } => tracing::warn!(
            topic = %receipt.topic,
            handle = %receipt.handle,
            request,
            ?reason,
            "a popped message could not be settled; it comes back after its invisibility"
        ),
        PopEvent::DeadLettered { receipt } => {
            tracing::warn!(topic = %receipt.topic, handle = %receipt.handle, "dead-lettered");
        }
        _ => {}
    }
}
