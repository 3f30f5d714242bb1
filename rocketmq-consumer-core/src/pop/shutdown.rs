//! Graceful shutdown: the drain (no more pops, what was not delivered released, running
//! handlers given `shutdown_drain_timeout`), unregistration, and the report.

use std::time::Instant;

use super::requests::Kind;
use super::{Lifecycle, PopConsumer, PopEvent, PopOutput, PopTimer};
use crate::membership;

impl PopConsumer {
    /// Starts the drain (see [`PopConsumer::shutdown`]): the pollers stop, waiting receives are
    /// answered with nothing, popped messages not delivered are released, and the wait for
    /// running handlers is bounded.
    pub(super) fn start_drain(&mut self, now: Instant) {
        self.lifecycle = Lifecycle::Draining;
        self.pollers.clear();
        for waiting in std::mem::take(&mut self.receives) {
            self.outputs.push_back(PopOutput::Event(PopEvent::Received {
                request: waiting.request,
                messages: Ok(Vec::new()),
            }));
        }
        for id in self.held.drain_ready() {
            self.release(now, id);
        }
        self.timers.set(
            now + self.config.shutdown_drain_timeout,
            PopTimer::ShutdownDrain,
        );
    }

    /// The drain is over (nothing left, or its time ran out): every broker is told this
    /// member leaves, and the consumer closes once they answered (or `request_timeout` passed).
    pub(super) fn finish_drain(&mut self, now: Instant) {
        self.report.abandoned = self.deliveries.len();
        self.lifecycle = Lifecycle::Finishing;
        let addrs = self.cluster.broker_addrs();
        self.timers
            .set(now + self.config.request_timeout, PopTimer::ShutdownFinish);
        if addrs.is_empty() {
            self.close();
            return;
        }
        for addr in addrs {
            let command = membership::unregister(&self.client_id, &self.config.group);
            self.request(now, &addr, command, Kind::Unregister);
        }
    }

    /// Closes every connection, forgets every request and timer, and reports.
    pub(super) fn close(&mut self) {
        if self.lifecycle == Lifecycle::Closed {
            return;
        }
        self.lifecycle = Lifecycle::Closed;
        self.timers.clear();
        self.link.close_all();
        self.report.acked = self.stats.acked;
        self.outputs
            .push_back(PopOutput::Event(PopEvent::Closed(self.report.clone())));
    }
}
