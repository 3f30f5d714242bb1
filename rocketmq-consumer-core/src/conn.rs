//! Connections by address: at most one per address, opened on demand, with commands queued
//! while it opens, and a pause before reconnecting to an address that just failed.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use proto::Command;

use crate::liveness::{AfterTimeout, TimeoutStreak};
use crate::output::ConnId;
use crate::stats::{ConnectionState, ConnectionStats};

#[derive(Debug)]
enum State {
    Connecting(Vec<Command>),
    Connected,
}

#[derive(Debug)]
struct Entry {
    id: ConnId,
    state: State,
    /// Requests on it that timed out since its last answer.
    timeouts: TimeoutStreak,
    /// When it last answered anything (or opened).
    heard: Instant,
    /// A liveness probe went out on it since it last answered.
    probing: bool,
}

/// What to do with a command for an address.
#[derive(Debug)]
pub(crate) enum Route {
    /// Write it on this open connection.
    Send(ConnId),
    /// Queued until this connection opens.
    Queued(ConnId),
    /// Queued on this connection, opened for it just now.
    Opening(ConnId),
    /// The address failed recently; fail the request now.
    Unavailable,
}

#[derive(Debug, Default)]
pub(crate) struct Connections {
    by_addr: BTreeMap<String, Entry>,
    by_id: BTreeMap<ConnId, String>,
    down_until: BTreeMap<String, Instant>,
    next_id: u64,
    /// Connect requests for the driver.
    pub(crate) to_open: VecDeque<(ConnId, String)>,
}

impl Connections {
    /// Where `command` for `addr` goes; opens a connection when there is none.
    pub(crate) fn route(
        &mut self,
        now: Instant,
        addr: &str,
        command: Command,
    ) -> (Route, Option<Command>) {
        if let Some(entry) = self.by_addr.get_mut(addr) {
            return match &mut entry.state {
                State::Connected => (Route::Send(entry.id), Some(command)),
                State::Connecting(queue) => {
                    queue.push(command);
                    (Route::Queued(entry.id), None)
                }
            };
        }
        if self.down_until.get(addr).is_some_and(|until| now < *until) {
            return (Route::Unavailable, Some(command));
        }
        self.down_until.remove(addr);
        self.next_id += 1;
        let id = ConnId(self.next_id);
        self.by_addr.insert(
            addr.to_owned(),
            Entry {
                id,
                state: State::Connecting(vec![command]),
                timeouts: TimeoutStreak::default(),
                heard: now,
                probing: false,
            },
        );
        self.by_id.insert(id, addr.to_owned());
        self.to_open.push_back((id, addr.to_owned()));
        (Route::Opening(id), None)
    }

    /// The connection opened: returns the commands queued for it.
    pub(crate) fn connected(&mut self, now: Instant, id: ConnId) -> Vec<Command> {
        let Some(addr) = self.by_id.get(&id) else {
            return Vec::new();
        };
        let Some(entry) = self.by_addr.get_mut(addr) else {
            return Vec::new();
        };
        entry.heard = now;
        match std::mem::replace(&mut entry.state, State::Connected) {
            State::Connecting(queued) => queued,
            State::Connected => Vec::new(),
        }
    }

    /// The connection failed or closed: forget it, refuse its address until `retry_at`, and
    /// return its address and the commands that never left.
    pub(crate) fn disconnected(
        &mut self,
        id: ConnId,
        retry_at: Instant,
    ) -> Option<(String, Vec<Command>)> {
        let addr = self.by_id.remove(&id)?;
        let entry = self.by_addr.remove(&addr)?;
        self.down_until.insert(addr.clone(), retry_at);
        let unsent = match entry.state {
            State::Connecting(queued) => queued,
            State::Connected => Vec::new(),
        };
        Some((addr, unsent))
    }

    /// Until when `addr` is refused after its last connection failed (see
    /// [`Route::Unavailable`]); `None` when it may be dialled now or has no failure.
    pub(crate) fn down_until(&self, now: Instant, addr: &str) -> Option<Instant> {
        self.down_until
            .get(addr)
            .copied()
            .filter(|until| now < *until)
    }

    /// Whether a connection to `addr` is open (not opening, not failed).
    pub(crate) fn is_open(&self, addr: &str) -> bool {
        self.by_addr
            .get(addr)
            .is_some_and(|e| matches!(e.state, State::Connected))
    }

    /// Whether connection `id` is still opening.
    pub(crate) fn is_opening(&self, id: ConnId) -> bool {
        self.entry(id)
            .is_some_and(|e| matches!(e.state, State::Connecting(_)))
    }

    /// An answer arrived on connection `id`: it is alive.
    pub(crate) fn answered(&mut self, now: Instant, id: ConnId) {
        if let Some(entry) = self.entry_mut(id) {
            entry.timeouts.handle_answer();
            entry.heard = now;
            entry.probing = false;
        }
    }

    /// The open connections among `busy` that have heard nothing for `quiet` and have no probe
    /// out yet, marked as probed now: each gets one request whose answer shows it is alive.
    ///
    /// A long-polled pull keeps a healthy connection quiet for up to the broker's suspend
    /// time, and its own timeout is longer still, so a connection that went dead without a
    /// FIN (a firewall that dropped its state, a black-holed route) would stall its queues
    /// until every pull on it timed out. A quick request shows the difference sooner.
    pub(crate) fn due_probes(
        &mut self,
        now: Instant,
        quiet: Duration,
        busy: impl Fn(ConnId, &str) -> bool,
    ) -> Vec<String> {
        self.by_addr
            .iter_mut()
            .filter(|(addr, e)| {
                matches!(e.state, State::Connected) && !e.probing && busy(e.id, addr)
            })
            .filter(|(_, e)| now.saturating_duration_since(e.heard) >= quiet)
            .map(|(addr, e)| {
                e.probing = true;
                addr.clone()
            })
            .collect()
    }

    /// How long connection `id` has heard nothing (since it opened or last answered).
    pub(crate) fn quiet_for(&self, now: Instant, id: ConnId) -> Duration {
        self.entry(id)
            .map_or(Duration::ZERO, |e| now.saturating_duration_since(e.heard))
    }

    /// Whether a liveness probe is out on connection `id`, unanswered.
    pub(crate) fn is_probing(&self, id: ConnId) -> bool {
        self.entry(id).is_some_and(|e| e.probing)
    }

    /// A request on connection `id` timed out: whether the connection is to be closed, now
    /// that `limit` have in a row ([`TimeoutStreak`]).
    pub(crate) fn timed_out(&mut self, id: ConnId, limit: u32) -> bool {
        self.entry_mut(id).is_some_and(|entry| {
            matches!(entry.timeouts.handle_timeout(limit), AfterTimeout::Close(_))
        })
    }

    fn entry(&self, id: ConnId) -> Option<&Entry> {
        self.by_id.get(&id).and_then(|addr| self.by_addr.get(addr))
    }

    fn entry_mut(&mut self, id: ConnId) -> Option<&mut Entry> {
        let addr = self.by_id.get(&id)?;
        self.by_addr.get_mut(addr)
    }

    /// The address of connection `id`.
    pub(crate) fn addr(&self, id: ConnId) -> Option<&str> {
        self.by_id.get(&id).map(String::as_str)
    }

    /// Every open or opening connection.
    pub(crate) fn ids(&self) -> Vec<ConnId> {
        self.by_id.keys().copied().collect()
    }

    /// Every connection, and every address that failed and was not reopened since, in address
    /// order.
    pub(crate) fn stats(&self) -> Vec<ConnectionStats> {
        let open = self.by_addr.iter().map(|(addr, entry)| ConnectionStats {
            addr: addr.clone(),
            state: match entry.state {
                State::Connecting(_) => ConnectionState::Connecting,
                State::Connected => ConnectionState::Connected,
            },
            timeouts: entry.timeouts.count(),
        });
        let down = self
            .down_until
            .iter()
            .map(|(addr, &until)| ConnectionStats {
                addr: addr.clone(),
                state: ConnectionState::Down { until },
                timeouts: 0,
            });
        let mut all: Vec<_> = open.chain(down).collect();
        all.sort_by(|a, b| a.addr.cmp(&b.addr));
        all
    }

    /// Forgets every connection (after the consumer closed them).
    pub(crate) fn clear(&mut self) {
        self.by_addr.clear();
        self.by_id.clear();
    }
}
