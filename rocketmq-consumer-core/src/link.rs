//! [`Link`]: the request layer each sans-IO client of the crate keeps one of (the push and lite
//! pull consumer, the pop consumer, the producer), so the rules of talking to a peer are
//! written once:
//!
//! - its connections ([`Connections`]): one per address, opened on demand, commands queued
//!   while one opens, a connection still opening at `connect_timeout` given up, an address
//!   that failed refused for `reconnect_backoff`, the liveness streak
//!   ([`crate::liveness::TimeoutStreak`]);
//! - its requests in flight ([`InFlight`]): opaques, kinds `K`, deadlines;
//! - its own deadlines (a request's answer, a connection's opening), which the client folds
//!   into its `poll_timeout` ([`Link::poll_timeout`]) and fires with [`Link::next_due`];
//! - the work it gives the driver on the connections ([`Wire`], which the client hands out
//!   first in its `poll_output`).
//!
//! The client asks it to send ([`Link::request`], [`Link::oneway`]), tells it what happened
//! ([`Link::connected`], [`Link::answered`], [`Link::disconnected`]) and takes from it the
//! requests that ended without an answer ([`Link::next_due`], [`Link::next_lost`]): what a
//! request's end means, and when a connection that keeps timing out is closed
//! ([`Link::close`]), stays the client's decision.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use proto::Command;

use crate::conn::{Connections, Route};
use crate::output::{ConnId, Wire};
use crate::requests::{InFlight, Pending, Placement};
use crate::stats::ConnectionStats;
use crate::timer::TimerQueue;

/// The rules of a link: the client's configuration of them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rules {
    /// A connection still opening after this long has failed.
    pub(crate) connect_timeout: Duration,
    /// An address whose connection failed is refused for this long.
    pub(crate) reconnect_backoff: Duration,
    /// Requests in a row that time out on one connection before the streak says to close it.
    pub(crate) close_after_timeouts: u32,
}

/// A deadline of the link's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Deadline {
    /// A request's answer, by opaque.
    Answer(i32),
    /// A connection's opening.
    Open(ConnId),
}

/// A deadline that passed ([`Link::next_due`]).
#[derive(Debug)]
pub(crate) enum Due<K> {
    /// A request went unanswered until its deadline; its connection's streak counted it.
    TimedOut(Pending<K>),
    /// A connection was still opening at its deadline: it is closed (and lost: its requests
    /// come from [`Link::next_lost`]).
    OpenTimedOut {
        /// The connection.
        conn: ConnId,
        /// Its address.
        addr: String,
    },
}

/// The connections, the requests in flight and the work for the driver.
#[derive(Debug)]
pub(crate) struct Link<K> {
    rules: Rules,
    conns: Connections,
    requests: InFlight<K>,
    deadlines: TimerQueue<Deadline>,
    wire: VecDeque<Wire>,
}

impl<K> Link<K> {
    pub(crate) fn new(rules: Rules) -> Self {
        Self {
            rules,
            conns: Connections::default(),
            requests: InFlight::default(),
            deadlines: TimerQueue::default(),
            wire: VecDeque::new(),
        }
    }

    // ----- sending -----

    /// Sends `command` to `addr` as a request of `kind`, answered within `timeout`, under a
    /// fresh opaque (opening a connection when there is none, queueing it while that opens).
    /// An address that failed recently takes nothing: the request comes back, for the client
    /// to fail at once.
    pub(crate) fn request(
        &mut self,
        now: Instant,
        addr: &str,
        command: Command,
        kind: K,
        timeout: Duration,
    ) -> Result<(), Pending<K>> {
        let deadline = now + timeout;
        match self
            .requests
            .place(&mut self.conns, now, addr, command, kind, deadline)
        {
            Placement::Placed(placed) => {
                if let Some(command) = placed.send {
                    self.wire.push_back(Wire::Send {
                        conn: placed.conn,
                        command,
                    });
                }
                if placed.opening {
                    self.opening(now, placed.conn);
                }
                self.deadlines
                    .set(deadline, Deadline::Answer(placed.opaque));
                Ok(())
            }
            Placement::Unavailable(pending) => Err(pending),
        }
    }

    /// Sends `command` to `addr` expecting no answer (nothing is tracked; to an address that
    /// failed recently it is dropped).
    pub(crate) fn oneway(&mut self, now: Instant, addr: &str, command: Command) {
        let mut command = command.oneway();
        command.opaque = self.requests.next_opaque();
        match self.conns.route(now, addr, command) {
            (Route::Send(conn), Some(command)) => {
                self.wire.push_back(Wire::Send { conn, command });
            }
            (Route::Opening(conn), _) => self.opening(now, conn),
            _ => {}
        }
    }

    /// A connection was asked for: it gets its opening deadline.
    fn opening(&mut self, now: Instant, conn: ConnId) {
        self.deadlines
            .set(now + self.rules.connect_timeout, Deadline::Open(conn));
    }

    // ----- what happened -----

    /// The connection `conn` opened: its address, and the commands queued while it opened
    /// (for the client to write with [`Link::write`], after whatever must go first).
    #[must_use]
    pub(crate) fn connected(
        &mut self,
        now: Instant,
        conn: ConnId,
    ) -> (Option<String>, Vec<Command>) {
        let queued = self.conns.connected(now, conn);
        (self.conns.addr(conn).map(str::to_owned), queued)
    }

    /// Writes `commands` on `conn` (what [`Link::connected`] gave back).
    pub(crate) fn write(&mut self, conn: ConnId, commands: Vec<Command>) {
        self.wire.extend(
            commands
                .into_iter()
                .map(|command| Wire::Send { conn, command }),
        );
    }

    /// A response with `opaque` arrived on `conn`: the request it answers, ended (the
    /// connection is alive); `None` when no request of ours on that connection has it.
    pub(crate) fn answered(
        &mut self,
        now: Instant,
        conn: ConnId,
        opaque: i32,
    ) -> Option<Pending<K>> {
        let pending = self.requests.answered(conn, opaque)?;
        self.conns.answered(now, conn);
        self.deadlines
            .remove(pending.deadline, Deadline::Answer(opaque));
        Some(pending)
    }

    /// `conn` failed to open, or was lost: it is forgotten and its address refused for the
    /// reconnect backoff. Returns its address (`None`: not ours, or already lost); its requests
    /// come from [`Link::next_lost`].
    pub(crate) fn disconnected(&mut self, now: Instant, conn: ConnId) -> Option<String> {
        let retry_at = now + self.rules.reconnect_backoff;
        self.conns
            .disconnected(conn, retry_at)
            .map(|(addr, _unsent)| addr)
    }

    /// Closes `conn` (it stopped answering, or will not open): the driver closes it, and it is
    /// lost as if the peer had closed it ([`Link::disconnected`]).
    pub(crate) fn close(&mut self, now: Instant, conn: ConnId) -> Option<String> {
        self.wire.push_back(Wire::Close { conn });
        self.disconnected(now, conn)
    }

    /// The next request still in flight on `conn`, which was lost: ended, for the client to
    /// fail. One at a time, as failing one may end others (a closing client clears them).
    pub(crate) fn next_lost(&mut self, conn: ConnId) -> Option<Pending<K>> {
        let (opaque, pending) = self.requests.next_lost_on(conn)?;
        self.deadlines
            .remove(pending.deadline, Deadline::Answer(opaque));
        Some(pending)
    }

    /// The earliest of the link's deadlines.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.next().map(|(at, _)| at)
    }

    /// The next deadline passed by `now`, if any: a request unanswered (counted in its
    /// connection's streak), or a connection that did not open in time (closed).
    pub(crate) fn next_due(&mut self, now: Instant) -> Option<Due<K>> {
        while let Some(deadline) = self.deadlines.pop_due(now) {
            match deadline {
                Deadline::Answer(opaque) => {
                    if let Some(pending) = self.requests.expired(opaque, now) {
                        return Some(Due::TimedOut(pending));
                    }
                }
                Deadline::Open(conn) => {
                    if self.conns.is_opening(conn)
                        && let Some(addr) = self.close(now, conn)
                    {
                        return Some(Due::OpenTimedOut { conn, addr });
                    }
                }
            }
        }
        None
    }

    /// The next piece of work for the driver: connections to open first (what is sent on one
    /// waits until it opens), then writes and closes in the order they came.
    pub(crate) fn poll_wire(&mut self) -> Option<Wire> {
        if let Some((conn, addr)) = self.conns.to_open.pop_front() {
            return Some(Wire::Connect { conn, addr });
        }
        self.wire.pop_front()
    }

    /// Closes every connection and forgets every request (the client is closing); returns
    /// the requests' kinds, in the order they were sent.
    pub(crate) fn close_all(&mut self) -> Vec<K> {
        for conn in self.conns.ids() {
            self.wire.push_back(Wire::Close { conn });
        }
        self.conns.clear();
        self.conns.to_open.clear();
        self.deadlines.clear();
        self.requests.clear()
    }

    // ----- the connections' state -----

    /// A request on `conn` timed out (see [`Due::TimedOut`]): whether its streak of timeouts
    /// says to close it.
    pub(crate) fn streak_says_close(&mut self, conn: ConnId) -> bool {
        self.conns.timed_out(conn, self.rules.close_after_timeouts)
    }

    /// Whether `conn` is still opening.
    pub(crate) fn is_opening(&self, conn: ConnId) -> bool {
        self.conns.is_opening(conn)
    }

    /// Whether a connection to `addr` is open.
    pub(crate) fn is_open(&self, addr: &str) -> bool {
        self.conns.is_open(addr)
    }

    /// Until when `addr` is refused after its last connection failed.
    pub(crate) fn down_until(&self, now: Instant, addr: &str) -> Option<Instant> {
        self.conns.down_until(now, addr)
    }

    /// How long `conn` has heard nothing.
    pub(crate) fn quiet_for(&self, now: Instant, conn: ConnId) -> Duration {
        self.conns.quiet_for(now, conn)
    }

    /// Whether a liveness probe is out on `conn`, unanswered.
    pub(crate) fn is_probing(&self, conn: ConnId) -> bool {
        self.conns.is_probing(conn)
    }

    /// The open connections to an address `probed` admits that have heard nothing for `quiet`
    /// while a request has been out on them as long, and have no probe out yet, marked as
    /// probed now (see [`Connections::due_probes`]).
    pub(crate) fn due_probes(
        &mut self,
        now: Instant,
        quiet: Duration,
        probed: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let requests = &self.requests;
        self.conns.due_probes(now, quiet, |conn, addr| {
            probed(addr)
                && requests
                    .any(|p| p.conn == conn && now.saturating_duration_since(p.sent) >= quiet)
        })
    }

    /// Whether a request in flight matches `wanted`.
    pub(crate) fn any(&self, wanted: impl Fn(&Pending<K>) -> bool) -> bool {
        self.requests.any(wanted)
    }

    /// Every connection's state, for stats.
    pub(crate) fn stats(&self) -> Vec<ConnectionStats> {
        self.conns.stats()
    }
}
