//! The application's rebalance hooks: `on_revoke`, whose future a revoked queue's final
//! commit waits for (the core bounds the wait by `revoke_drain_timeout`), and `on_assigned`,
//! told of newly started queues once per pass over the consumer's outputs.
//!
//! Each hook runs on a task of its own, as handlers do; a panicking hook counts as done, so a
//! revoke never waits for a hook that will not answer (the deadline would end it anyway).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use consumer_core::output::RequestId;
use consumer_core::{Consumer, MessageQueue};
use futures_channel::mpsc;
use futures_util::FutureExt;

use crate::input::Input;
use crate::runtime::{BoxFuture, Runtime};

/// `on_revoke`: called with the queues a rebalance revoked.
pub(crate) type RevokeHook = Arc<dyn Fn(Vec<MessageQueue>) -> BoxFuture<()> + Send + Sync>;
/// `on_assigned`: called with newly owned queues and the offsets they start at.
pub(crate) type AssignedHook = Arc<dyn Fn(Vec<(MessageQueue, i64)>) -> BoxFuture<()> + Send + Sync>;

/// The hooks an application set (none by default).
#[derive(Clone, Default)]
pub(crate) struct RebalanceHooks {
    pub(crate) on_revoke: Option<RevokeHook>,
    pub(crate) on_assigned: Option<AssignedHook>,
}

impl std::fmt::Debug for RebalanceHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RebalanceHooks")
            .field("on_revoke", &self.on_revoke.is_some())
            .field("on_assigned", &self.on_assigned.is_some())
            .finish()
    }
}

/// Runs the hooks for one driver task.
pub(crate) struct Hooks<R: Runtime> {
    runtime: R,
    hooks: RebalanceHooks,
    inputs: mpsc::UnboundedSender<Input>,
    /// Queues started during this pass, for `on_assigned`.
    started: Vec<(MessageQueue, i64)>,
}

impl<R: Runtime> Hooks<R> {
    pub(crate) fn new(
        runtime: R,
        hooks: RebalanceHooks,
        inputs: mpsc::UnboundedSender<Input>,
    ) -> Self {
        Self {
            runtime,
            hooks,
            inputs,
            started: Vec::new(),
        }
    }

    /// `Output::Revoking`: runs `on_revoke`, answering the consumer when its future is done
    /// (at once without a hook).
    pub(crate) fn revoking(
        &mut self,
        consumer: &mut Consumer,
        request: RequestId,
        queues: Vec<MessageQueue>,
    ) {
        let Some(hook) = &self.hooks.on_revoke else {
            consumer.revoke_done(self.runtime.now(), request);
            return;
        };
        let run = AssertUnwindSafe(hook(queues)).catch_unwind();
        let inputs = self.inputs.clone();
        self.runtime.spawn(Box::pin(async move {
            if run.await.is_err() {
                tracing::error!("the on_revoke hook panicked; the revoke goes on");
            }
            let _ = inputs.unbounded_send(Input::RevokeDone(request));
        }));
    }

    /// `Event::QueueStarted`: remembered for the end of the pass.
    pub(crate) fn started(&mut self, queue: &MessageQueue, offset: i64) {
        if self.hooks.on_assigned.is_some() {
            self.started.push((queue.clone(), offset));
        }
    }

    /// The end of a pass: runs `on_assigned` with the queues started in it.
    pub(crate) fn end_pass(&mut self) {
        let Some(hook) = &self.hooks.on_assigned else {
            return;
        };
        if self.started.is_empty() {
            return;
        }
        let run = AssertUnwindSafe(hook(std::mem::take(&mut self.started))).catch_unwind();
        self.runtime.spawn(Box::pin(async move {
            if run.await.is_err() {
                tracing::error!("the on_assigned hook panicked");
            }
        }));
    }
}
