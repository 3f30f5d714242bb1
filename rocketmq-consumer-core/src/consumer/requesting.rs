//! Sending: requests (routed to a connection, given an opaque and a deadline), oneway commands,
//! and what a lost or dropped connection means for the requests that were on it.

use std::time::{Duration, Instant};

use proto::Command;

use super::requests::PendingKind;
use super::{Consumer, Lifecycle};
use crate::link::Due;
use crate::output::{ConnId, FailureReason};
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
        let timeout = self.timeout_of(&kind);
        if let Err(pending) = self.link.request(now, addr, command, kind, timeout) {
            self.answer(now, pending, Err(FailureReason::Disconnected));
        }
    }

    pub(super) fn oneway(&mut self, now: Instant, addr: &str, command: Command) {
        self.link.oneway(now, addr, command);
    }

    /// A deadline of the request layer passed: a request that timed out fails, and its
    /// connection is closed when that is the end of it; a connection that did not open in time
    /// is lost.
    pub(super) fn request_due(&mut self, now: Instant, due: Due<PendingKind>) {
        match due {
            Due::TimedOut(pending) => {
                let conn = pending.conn;
                // An unanswered probe is the connection's end: it heard nothing for
                // `probe_after` and then not even a heartbeat answer.
                let probe_lost =
                    matches!(pending.kind, PendingKind::Heartbeat) && self.link.is_probing(conn);
                // A request unanswered on a connection that has heard nothing at all for
                // `probe_after` is the probe's verdict without a probe: short requests
                // (heartbeats, member lists) never stay out long enough to be probed.
                let silent = self.link.quiet_for(now, conn) >= self.config.probe_after;
                self.answer(now, pending, Err(FailureReason::Timeout));
                if self.link.streak_says_close(conn) || probe_lost || silent {
                    self.drop_connection(now, conn);
                }
            }
            Due::OpenTimedOut { conn, addr } => self.lost(now, conn, &addr),
        }
    }

    /// `conn` is gone: its requests fail, its address waits `reconnect_backoff`, a lost
    /// broker's leases lapse and the routes are looked at soon.
    pub(super) fn connection_lost(&mut self, now: Instant, conn: ConnId) {
        if let Some(addr) = self.link.disconnected(now, conn) {
            self.lost(now, conn, &addr);
        }
    }

    /// Gives up on `conn` (it did not open in time, or stopped answering): the driver closes
    /// it, and it is lost as if the peer had closed it; the next request opens a new one.
    pub(super) fn drop_connection(&mut self, now: Instant, conn: ConnId) {
        if let Some(addr) = self.link.close(now, conn) {
            self.lost(now, conn, &addr);
        }
    }

    /// What losing `conn` to `addr` means beyond the link.
    fn lost(&mut self, now: Instant, conn: ConnId, addr: &str) {
        while let Some(pending) = self.link.next_lost(conn) {
            self.answer(now, pending, Err(FailureReason::Disconnected));
        }
        // A broker that restarted forgot its locks, and this is all we see of a restart.
        self.lose_leases_on(now, addr);
        // A lost broker may have left its routes (a master gone, its slave to read from now):
        // look soon rather than at the next 30 s refresh. While it stays away this repeats at
        // most every few seconds, as its reconnects fail.
        if self.cluster.is_broker(addr) && self.lifecycle == Lifecycle::Running {
            self.timers
                .reset_earlier(now + self.config.rebalance_retry * 3, Timer::RouteRefresh);
        }
    }
}
