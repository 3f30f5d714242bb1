//! The producer's driver task: owns the core's [`consumer_core::producer::Producer`] by value
//! and carries out its outputs, in the pattern of the consumers' drivers (`driver/mod.rs`,
//! `pop_driver.rs`): the connections it reads itself (the same `Conns`), one input channel,
//! one timer re-armed to `poll_timeout()` with the clock checked before waiting. Sends come in
//! with a reply channel, matched to their result by the core's `SendId`.

use std::collections::BTreeMap;

use consumer_core::producer::{
    Prepared, Producer as ProducerCore, ProducerOutput, SendError, SendId, SendResult,
};
use futures_channel::{mpsc, oneshot};

use crate::driver::conns::Conns;
use crate::driver::wake::{self, Wake, Woken};
use crate::runtime::Runtime;
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
    runtime.spawn_driver(Box::pin(tracing::Instrument::instrument(task, span)));
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
    let mut wake = Wake::new(runtime.clone());
    let mut closing = false;
    loop {
        while let Some(output) = core.poll_output() {
            match output {
                ProducerOutput::Wire(wire) => conns.carry(wire),
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
        match wake
            .next(core.poll_timeout(), &mut inputs, &mut conns)
            .await
        {
            Woken::Due(now) => core.handle_timeout(now),
            Woken::Input(Some(ProducerInput::Send { prepared, reply })) => {
                let send = core.send(runtime.now(), *prepared);
                waiting.insert(send, reply);
            }
            Woken::Input(Some(ProducerInput::Credentials(credentials))) => {
                core.set_credentials(credentials);
            }
            // Closed, or every handle of the producer is gone.
            Woken::Input(Some(ProducerInput::Close) | None) => {
                core.close();
                closing = true;
            }
            Woken::Conn(conn, event) => wake::feed(&mut core, runtime.now(), conn, event),
        }
    }
    conns.abort_all();
}
