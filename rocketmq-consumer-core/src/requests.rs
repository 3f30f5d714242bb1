//! [`InFlight`]: the requests a client has in flight, by opaque, each with the connection it
//! went out on and its deadline: part of the request layer (`crate::link`) every client keeps,
//! each with its own request kind `K`.
//!
//! A request ends exactly once: answered on its connection, timed out, or failed with the
//! connection it went out on; the consumer's `answer` takes it from there. The table hands out
//! the opaques too, so no two requests in flight share one, on any connection.
//!
//! Generic over the time type `T` (the consumers' is [`Instant`]) only so that its own tests
//! run without a clock: the core has none to start one from.

use std::collections::BTreeMap;
use std::time::Instant;

use proto::Command;

use crate::conn::{Connections, Route};
use crate::output::ConnId;

/// A request in flight.
#[derive(Debug)]
pub(crate) struct Pending<K, T = Instant> {
    /// The connection it went out (or waits to go out) on.
    pub(crate) conn: ConnId,
    /// The address it was sent to.
    pub(crate) addr: String,
    /// What it is for, with what its answer needs.
    pub(crate) kind: K,
    /// When it was handed to the connection.
    pub(crate) sent: T,
    /// When it fails with [`FailureReason::Timeout`](crate::output::FailureReason::Timeout)
    /// unless answered.
    pub(crate) deadline: T,
}

/// A request placed on a connection by [`InFlight::place`]: what the caller still has to do.
#[derive(Debug)]
pub(crate) struct Placed {
    /// The connection it went out (or waits to go out) on.
    pub(crate) conn: ConnId,
    /// Its opaque, for its deadline's timer.
    pub(crate) opaque: i32,
    /// The command to write on `conn` now, when the connection is open.
    pub(crate) send: Option<Command>,
    /// Whether `conn` was opened for it just now: its connect deadline is to be set.
    pub(crate) opening: bool,
}

/// Where [`InFlight::place`] put a request.
#[derive(Debug)]
pub(crate) enum Placement<K> {
    /// On a connection, in flight.
    Placed(Placed),
    /// Nowhere: its address failed recently. The request, for the caller to fail at once.
    Unavailable(Pending<K>),
}

/// Every request in flight, by opaque (so in the order they were sent, until the opaques wrap).
#[derive(Debug)]
pub(crate) struct InFlight<K, T = Instant> {
    pending: BTreeMap<i32, Pending<K, T>>,
    next_opaque: i32,
}

impl<K, T> Default for InFlight<K, T> {
    fn default() -> Self {
        Self {
            pending: BTreeMap::new(),
            next_opaque: 1,
        }
    }
}

impl<K> InFlight<K> {
    /// Gives `command` a fresh opaque, routes it to `addr` on `conns` (opening a connection when
    /// there is none, queueing it while that opens) and records it in flight until `deadline`.
    /// An address that failed recently takes nothing: the request comes back
    /// ([`Placement::Unavailable`]), for the caller to fail at once.
    pub(crate) fn place(
        &mut self,
        conns: &mut Connections,
        now: Instant,
        addr: &str,
        mut command: Command,
        kind: K,
        deadline: Instant,
    ) -> Placement<K> {
        let opaque = self.next_opaque();
        command.opaque = opaque;
        let (route, send) = conns.route(now, addr, command);
        let (conn, opening) = match route {
            Route::Send(conn) => (conn, false),
            Route::Queued(conn) => (conn, false),
            Route::Opening(conn) => (conn, true),
            Route::Unavailable => {
                return Placement::Unavailable(Pending {
                    conn: ConnId(0),
                    addr: addr.to_owned(),
                    kind,
                    sent: now,
                    deadline,
                });
            }
        };
        self.insert(
            opaque,
            Pending {
                conn,
                addr: addr.to_owned(),
                kind,
                sent: now,
                deadline,
            },
        );
        Placement::Placed(Placed {
            conn,
            opaque,
            // Only an open connection gives the command back; a queued one holds it.
            send,
            opening,
        })
    }
}

impl<K, T: Ord> InFlight<K, T> {
    /// A fresh opaque (positive, wrapping before `i32::MAX`).
    pub(crate) fn next_opaque(&mut self) -> i32 {
        let opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.checked_add(1).unwrap_or(1);
        opaque
    }

    /// Records a request sent (or queued) with `opaque`.
    pub(crate) fn insert(&mut self, opaque: i32, pending: Pending<K, T>) {
        self.pending.insert(opaque, pending);
    }

    /// Ends and returns the request a response with `opaque` on `conn` answers; `None` when
    /// no request of ours on that connection has the opaque (the same opaque on another
    /// connection is not ours: that request stays in flight).
    pub(crate) fn answered(&mut self, conn: ConnId, opaque: i32) -> Option<Pending<K, T>> {
        if self.pending.get(&opaque)?.conn != conn {
            return None;
        }
        self.pending.remove(&opaque)
    }

    /// Ends request `opaque` if its deadline has passed at `now`.
    pub(crate) fn expired(&mut self, opaque: i32, now: T) -> Option<Pending<K, T>> {
        if self.pending.get(&opaque)?.deadline <= now {
            self.pending.remove(&opaque)
        } else {
            None
        }
    }

    /// Ends the first request still in flight on `conn` (it was lost), with its opaque: one at
    /// a time, for a caller whose failing of one may end others (closing the consumer clears
    /// the table), which must then not fail as well.
    pub(crate) fn next_lost_on(&mut self, conn: ConnId) -> Option<(i32, Pending<K, T>)> {
        let opaque = self
            .pending
            .iter()
            .find(|(_, p)| p.conn == conn)
            .map(|(opaque, _)| *opaque)?;
        self.pending.remove(&opaque).map(|p| (opaque, p))
    }

    /// Whether a request in flight matches `wanted`.
    pub(crate) fn any(&self, wanted: impl Fn(&Pending<K, T>) -> bool) -> bool {
        self.pending.values().any(wanted)
    }

    /// Forgets every request (the consumer closed); returns their kinds, in the order they were
    /// sent.
    pub(crate) fn clear(&mut self) -> Vec<K> {
        std::mem::take(&mut self.pending)
            .into_values()
            .map(|p| p.kind)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole seconds stand in for the clock.
    type Table = InFlight<&'static str, u64>;

    /// A table with `kinds` sent at second 0 in order on the connections given, each to be
    /// answered by second 3.
    fn table(kinds: &[(u64, &'static str)]) -> (Table, Vec<i32>) {
        let mut table = Table::default();
        let opaques = kinds
            .iter()
            .map(|&(conn, kind)| {
                let opaque = table.next_opaque();
                let pending = Pending {
                    conn: ConnId(conn),
                    addr: format!("10.0.0.{conn}:10911"),
                    kind,
                    sent: 0,
                    deadline: 3,
                };
                table.insert(opaque, pending);
                opaque
            })
            .collect();
        (table, opaques)
    }

    #[test]
    fn opaques_are_positive_and_distinct_across_the_wrap() {
        let mut table = Table::default();
        assert_eq!((table.next_opaque(), table.next_opaque()), (1, 2));
        table.next_opaque = i32::MAX;
        assert_eq!((table.next_opaque(), table.next_opaque()), (i32::MAX, 1));
    }

    #[test]
    fn an_answer_ends_its_request_only_on_its_own_connection() {
        let (mut table, opaques) = table(&[(1, "route"), (2, "pop")]);
        assert!(table.answered(ConnId(2), opaques[0]).is_none());
        assert!(table.any(|p| p.kind == "route"));
        let route = table.answered(ConnId(1), opaques[0]).map(|p| p.kind);
        assert_eq!(route, Some("route"));
        assert!(
            table.answered(ConnId(1), opaques[0]).is_none(),
            "it ends once"
        );
        assert!(!table.any(|p| p.kind == "route"));
        assert!(table.any(|p| p.kind == "pop"));
    }

    #[test]
    fn a_request_expires_at_its_deadline_not_before() {
        let (mut table, opaques) = table(&[(1, "heartbeat")]);
        assert!(table.expired(opaques[0], 2).is_none());
        assert_eq!(
            table.expired(opaques[0], 3).map(|p| p.kind),
            Some("heartbeat")
        );
        assert!(table.expired(opaques[0], 9).is_none(), "it ends once");
    }

    #[test]
    fn a_lost_connection_fails_its_requests_in_the_order_sent() {
        let kinds = [(1, "a"), (2, "b"), (1, "c"), (1, "d")];
        let (mut one_at_a_time, opaques) = table(&kinds);
        let first = one_at_a_time.next_lost_on(ConnId(1));
        assert_eq!(first.map(|(o, p)| (o, p.kind)), Some((opaques[0], "a")));
        // Failing "a" ended "c" meanwhile: it is not failed again.
        assert!(one_at_a_time.answered(ConnId(1), opaques[2]).is_some());
        let next = one_at_a_time.next_lost_on(ConnId(1));
        assert_eq!(next.map(|(o, p)| (o, p.kind)), Some((opaques[3], "d")));
        assert!(one_at_a_time.next_lost_on(ConnId(1)).is_none());
        assert!(one_at_a_time.any(|p| p.kind == "b"));
        assert_eq!(one_at_a_time.clear(), ["b"]);
    }

    #[test]
    fn clearing_returns_every_kind_in_the_order_sent() {
        let (mut table, _) = table(&[(2, "x"), (1, "y"), (2, "z")]);
        assert_eq!(table.clear(), ["x", "y", "z"]);
        assert!(!table.any(|_| true));
    }
}
