//! Sending: requests (routed to a connection, given an opaque and a deadline), oneway commands,
//! and what a lost or dropped connection means for the requests that were on it.

use std::time::{Duration, Instant};

use proto::Command;

use super::requests::PendingKind;
use super::{Consumer, Lifecycle};
use crate::conn::Route;
use crate::output::{ConnId, FailureReason, Output};
use crate::requests::Placement;
use crate::timer::Timer;

impl Consumer {
    pub(super) fn timeout_of(&self, kind: &PendingKind) -> Duration {
        match kind {
            PendingKind::Pull { .. } => self.config.pull_timeout,
            _ => self.config.request_timeout,
        }
    }

    pub(super) fn request(
        &mut self,
        now: Instant,
        addr: &str,
        command: Command,
        kind: PendingKind,
    ) {
        let deadline = now + self.timeout_of(&kind);
        match self
            .requests
            .place(&mut self.conns, now, addr, command, kind, deadline)
        {
            Placement::Placed(placed) => {
                if let Some(command) = placed.send {
                    self.outputs.push_back(Output::Send {
                        conn: placed.conn,
                        command,
                    });
                }
                if placed.opening {
                    self.timers.set(
                        now + self.config.connect_timeout,
                        Timer::Connect(placed.conn),
                    );
                }
                self.timers
                    .set(deadline, Timer::Request(placed.conn.0, placed.opaque));
            }
            Placement::Unavailable(pending) => {
                self.answer(now, pending, Err(FailureReason::Disconnected))
            }
        }
    }

    pub(super) fn oneway(&mut self, now: Instant, addr: &str, command: Command) {
        let mut command = command.oneway();
        command.opaque = self.requests.next_opaque();
        match self.conns.route(now, addr, command) {
            (Route::Send(conn), Some(command)) => {
                self.outputs.push_back(Output::Send { conn, command });
            }
            (Route::Opening(conn), _) => {
                self.timers
                    .set(now + self.config.connect_timeout, Timer::Connect(conn));
            }
            _ => {}
        }
    }

    /// `conn` is gone: its requests fail, its address waits `reconnect_backoff`, a lost
    /// broker's leases lapse and the routes are looked at soon.
    pub(super) fn connection_lost(&mut self, now: Instant, conn: ConnId) {
        let retry_at = now + self.config.reconnect_backoff;
        let Some((addr, _unsent)) = self.conns.disconnected(conn, retry_at) else {
            return;
        };
        for pending in self.requests.lost_on(conn) {
            self.answer(now, pending, Err(FailureReason::Disconnected));
        }
        // A broker that restarted forgot its locks, and this is all we see of a restart.
        self.lose_leases_on(now, &addr);
        // A lost broker may have left its routes (a master gone, its slave to read from now):
        // look soon rather than at the next 30 s refresh. While it stays away this repeats at
        // most every few seconds, as its reconnects fail.
        if self.cluster.is_broker(&addr) && self.lifecycle == Lifecycle::Running {
            self.timers
                .reset_earlier(now + self.config.rebalance_retry * 3, Timer::RouteRefresh);
        }
    }

    /// Gives up on `conn` (it did not open in time, or stopped answering): the driver closes
    /// it, and it is lost as if the peer had closed it; the next request opens a new one.
    pub(super) fn drop_connection(&mut self, now: Instant, conn: ConnId) {
        self.outputs.push_back(Output::Close { conn });
        self.connection_lost(now, conn);
    }
}
