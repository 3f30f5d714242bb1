//! The producer's driver task: owns the core's [`consumer_core::producer::Producer`] by value
//! and carries out its outputs, in the pattern of the consumers' drivers (`driver/mod.rs`,
//! `pop_driver.rs`): the connections it reads itself (the same `Conns`), one input channel,
//! one timer re-armed to `poll_timeout()` with the clock checked before waiting. Sends come in
//! with a reply channel, matched to their result by the core's `SendId`.

use std::collections::BTreeMap;
use std::time::Instant;

use consumer_core::producer::{
    Prepared, Producer as ProducerCore, ProducerOutput, SendError, SendId, SendResult,
};
use futures_channel::{mpsc, oneshot};
use futures_util::StreamExt;
use futures_util::future::{self, Either};

use crate::driver::conns::{ConnEvent, Conns};
use crate::runtime::{BoxFuture, Runtime};
use crate::transport::Connector;

/// A send's result, with the peer its last request went to.
pub(super) type Outcome = (Result<SendResult, SendError>, String);

/// What the producer task is told.
pub(super) enum ProducerInput {
    /// Send `prepared`, and answer `reply` when it is over.
    Send {
        /// Boxed: the channel's other inputs are small.
        prepared: Box<Prepared>,
        reply: oneshot::Sender<Outcome>,
    },
    /// The application rotated its ACL credentials.
    Credentials(Option<consumer_core::Credentials>),
    /// Close: sends in flight fail, the connections close, the task ends.
    Close,
}

/// Starts the task driving `core` on `runtime`; returns where its inputs go. The task ends
/// when told to close, or when every sender of its inputs is gone.
pub(super) fn spawn<R: Runtime>(
    runtime: &R,
    core: ProducerCore,
    tls: Option<Connector>,
) -> mpsc::UnboundedSender<ProducerInput> {
    let (inputs_tx, inputs) = mpsc::unbounded();
    let span = tracing::info_span!("rocketmq_producer", group = %core.config().group);
    let task = run(runtime.clone(), core, tls, inputs);
    runtime.spawn(Box::pin(tracing::Instrument::instrument(task, span)));
    inputs_tx
}

async fn run<R: Runtime>(
    runtime: R,
    mut core: ProducerCore,
    tls: Option<Connector>,
    mut inputs: mpsc::UnboundedReceiver<ProducerInput>,
) {
    let mut conns = Conns::new(runtime.clone(), tls);
    let mut waiting: BTreeMap<SendId, oneshot::Sender<Outcome>> = BTreeMap::new();
    let mut timer: Option<(Instant, BoxFuture<()>)> = None;
    let mut closing = false;
    loop {
        while let Some(output) = core.poll_output() {
            match output {
                ProducerOutput::Connect { conn, addr } => conns.open(conn, addr),
                ProducerOutput::Send { conn, command } => conns.send(conn, &command),
                ProducerOutput::Close { conn } => conns.close(conn),
                ProducerOutput::Sent { send, result, peer } => {
                    // The caller may have stopped waiting (its future dropped).
                    if let Some(reply) = waiting.remove(&send) {
                        let _ = reply.send((result, peer));
                    }
                }
            }
        }
        conns.flush().await;
        if closing {
            break;
        }
        let now = runtime.now();
        if core.poll_timeout().is_some_and(|at| at <= now) {
            core.handle_timeout(now);
            continue;
        }
        match core.poll_timeout() {
            Some(at) => {
                if timer.as_ref().is_none_or(|(armed, _)| *armed != at) {
                    timer = Some((at, runtime.sleep_until(at)));
                }
            }
            None => timer = None,
        }
        let woken = {
            let outside = future::select(inputs.next(), conns.next_event());
            match &mut timer {
                Some((_, sleep)) => match future::select(outside, sleep.as_mut()).await {
                    Either::Left((woken, _)) => Some(woken),
                    Either::Right(((), _)) => None,
                },
                None => Some(outside.await),
            }
        };
        let now = runtime.now();
        match woken {
            None => timer = None,
            Some(Either::Left((input, _))) => match input {
                Some(ProducerInput::Send { prepared, reply }) => {
                    let send = core.send(now, *prepared);
                    waiting.insert(send, reply);
                }
                Some(ProducerInput::Credentials(credentials)) => {
                    core.set_credentials(credentials);
                }
                // Closed, or every handle of the producer is gone.
                Some(ProducerInput::Close) | None => {
                    core.close();
                    closing = true;
                }
            },
            Some(Either::Right((event, _))) => {
                let Some((conn, event)) = event else { continue };
                match event {
                    ConnEvent::Connected => {
                        if conns.addr(conn).is_some() {
                            core.handle_connected(now, conn);
                        }
                    }
                    ConnEvent::Frame(command) => {
                        if conns.addr(conn).is_some() {
                            core.handle_command(now, conn, command);
                        }
                    }
                    ConnEvent::Lost(reason) => {
                        if let Some(addr) = conns.lost(conn) {
                            tracing::warn!(%addr, %reason, "producer connection lost or refused");
                            core.handle_disconnected(now, conn, &reason);
                        }
                    }
                }
            }
        }
    }
    conns.abort_all();
}
