//! The request layer: every request in flight by opaque, with its kind and deadline (in the
//! crate's [`InFlight`] table, which the pop consumer keeps its own in too), and the confirmed
//! commits held back until the one in flight to their broker is answered.
//!
//! A request ends exactly once: answered on its connection, timed out, or failed with the
//! connection it went out on ([`Requests::lost_on`]); the consumer's `answer` takes it from
//! there.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use proto::{Command, MessageQueue};

use super::send_back::SendBack;
use crate::id::{Epoch, QueueKey};
use crate::output::{ConnId, RequestId};
use crate::requests::InFlight;

/// A request in flight.
pub(crate) type Pending = crate::requests::Pending<PendingKind>;

/// What a request is for, with what its answer needs.
#[derive(Debug, Clone)]
pub(crate) enum PendingKind {
    Route(String),
    Heartbeat,
    ConsumerList(String),
    QueryOffset(QueueKey, Epoch),
    MaxOffset(QueueKey, Epoch),
    SearchOffset(QueueKey, Epoch),
    Pull {
        key: QueueKey,
        epoch: Epoch,
        offset: i64,
    },
    FinalCommit(MessageQueue, i64),
    Unregister,
    /// Orderly: `LOCK_BATCH_MQ` for these `(key, epoch)` queues.
    Lock(Vec<(QueueKey, Epoch)>),
    /// Orderly shutdown: `UNLOCK_BATCH_MQ`.
    Unlock,
    /// A failed message on its way back to the broker.
    SendBack(Box<SendBack>),
    /// Poll mode: the queue's first or last offset, to seek to.
    SeekBound {
        request: RequestId,
        key: QueueKey,
        epoch: Epoch,
    },
    /// Poll mode: `offset_for_timestamp` request `.0`.
    Search(RequestId, MessageQueue),
    /// Poll mode: a commit the application asked for.
    Commit {
        request: RequestId,
        queue: MessageQueue,
        offset: i64,
    },
    /// `CHECK_CLIENT_CONFIG` for an SQL92 subscription of this topic.
    CheckClient(String),
}

impl PendingKind {
    /// The topic the request is about, or the queue whose topic it is (looked up by the
    /// caller); `None` for group-wide requests.
    pub(crate) fn topic(&self) -> Result<Option<&str>, QueueKey> {
        match self {
            Self::Route(topic) | Self::ConsumerList(topic) | Self::CheckClient(topic) => {
                Ok(Some(topic))
            }
            Self::FinalCommit(queue, _) | Self::Search(_, queue) | Self::Commit { queue, .. } => {
                Ok(Some(queue.topic()))
            }
            Self::SendBack(back) => Ok(Some(back.queue.topic())),
            Self::QueryOffset(key, _)
            | Self::MaxOffset(key, _)
            | Self::SearchOffset(key, _)
            | Self::Pull { key, .. }
            | Self::SeekBound { key, .. } => Err(*key),
            Self::Heartbeat | Self::Unregister | Self::Lock(_) | Self::Unlock => Ok(None),
        }
    }

    /// A confirmed `UPDATE_CONSUMER_OFFSET`, one at a time per broker (see [`Requests::hold_commit`]).
    pub(crate) fn is_commit(&self) -> bool {
        matches!(self, Self::Commit { .. } | Self::FinalCommit(..))
    }

    /// The request's name in [`Event::RequestFailed`](crate::output::Event::RequestFailed).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Route(_) => "GET_ROUTEINFO_BY_TOPIC",
            Self::Heartbeat => "HEART_BEAT",
            Self::ConsumerList(_) => "GET_CONSUMER_LIST_BY_GROUP",
            Self::QueryOffset(..) => "QUERY_CONSUMER_OFFSET",
            Self::MaxOffset(..) => "GET_MAX_OFFSET",
            Self::SearchOffset(..) => "SEARCH_OFFSET_BY_TIMESTAMP",
            Self::Pull { .. } => "PULL_MESSAGE",
            Self::FinalCommit(..) | Self::Commit { .. } => "UPDATE_CONSUMER_OFFSET",
            Self::Unregister => "UNREGISTER_CLIENT",
            Self::Lock(_) => "LOCK_BATCH_MQ",
            Self::Unlock => "UNLOCK_BATCH_MQ",
            Self::SendBack(back) => back.request_name(),
            Self::SeekBound { .. } => "GET_MIN_OFFSET/GET_MAX_OFFSET",
            Self::Search(..) => "SEARCH_OFFSET_BY_TIMESTAMP",
            Self::CheckClient(_) => "CHECK_CLIENT_CONFIG",
        }
    }
}

/// Every request in flight, and the held-back commits.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    in_flight: InFlight<PendingKind>,
    /// Confirmed commits waiting for the one in flight to their broker, by address.
    held_commits: BTreeMap<String, VecDeque<(Command, PendingKind)>>,
}

impl Requests {
    /// A fresh opaque (positive, wrapping before `i32::MAX`).
    pub(crate) fn next_opaque(&mut self) -> i32 {
        self.in_flight.next_opaque()
    }

    /// Places a request on a connection ([`InFlight::place`]).
    pub(crate) fn place(
        &mut self,
        conns: &mut crate::conn::Connections,
        now: Instant,
        addr: &str,
        command: Command,
        kind: PendingKind,
        deadline: Instant,
    ) -> crate::requests::Placement<PendingKind> {
        self.in_flight
            .place(conns, now, addr, command, kind, deadline)
    }

    /// Ends and returns the request a response with `opaque` on `conn` answers; `None` when
    /// no request of ours on that connection has the opaque (the same opaque on another
    /// connection is not ours: that request stays in flight).
    pub(crate) fn answered(&mut self, conn: ConnId, opaque: i32) -> Option<Pending> {
        self.in_flight.answered(conn, opaque)
    }

    /// Ends request `opaque` if its deadline has passed at `now`.
    pub(crate) fn expired(&mut self, opaque: i32, now: Instant) -> Option<Pending> {
        self.in_flight.expired(opaque, now)
    }

    /// Ends every request that went out on `conn` (it was lost).
    pub(crate) fn lost_on(&mut self, conn: ConnId) -> Vec<Pending> {
        self.in_flight.lost_on(conn)
    }

    /// Whether a request in flight matches `wanted`.
    pub(crate) fn any(&self, wanted: impl Fn(&Pending) -> bool) -> bool {
        self.in_flight.any(wanted)
    }

    /// Holds a confirmed commit to `addr` back while another is in flight there; gives it
    /// back when it may go now.
    ///
    /// One at a time per broker because Apache 4.9's `ConsumerOffsetManager.commitOffset`
    /// creates a group's per-topic offset map with a plain get-then-put: two first commits of
    /// one topic handled at once by the broker's 32 consume-manage threads can each make a map,
    /// and one replaces the other with its queue's offset lost (the broker then answers "no
    /// offset" for that queue). Seen with four pipelined commits of a lite pull consumer. The
    /// answer of one commit is the broker's word that it is stored, so the next cannot race it.
    pub(crate) fn hold_commit(
        &mut self,
        addr: &str,
        command: Command,
        kind: PendingKind,
    ) -> Option<(Command, PendingKind)> {
        let in_flight = self.any(|p| p.addr == addr && p.kind.is_commit());
        if in_flight {
            self.held_commits
                .entry(addr.to_owned())
                .or_default()
                .push_back((command, kind));
            None
        } else {
            Some((command, kind))
        }
    }

    /// The commit in flight to `addr` ended: the next one held for it, to send now.
    pub(crate) fn next_commit(&mut self, addr: &str) -> Option<(Command, PendingKind)> {
        let chain = self.held_commits.get_mut(addr)?;
        let next = chain.pop_front();
        if chain.is_empty() {
            self.held_commits.remove(addr);
        }
        next
    }

    /// Whether any confirmed commit is held back.
    pub(crate) fn holds_commits(&self) -> bool {
        !self.held_commits.is_empty()
    }

    /// Forgets everything (the consumer closed); returns the kinds of the requests still in
    /// flight and of the commits never sent.
    pub(crate) fn clear(&mut self) -> Vec<PendingKind> {
        let held = std::mem::take(&mut self.held_commits);
        let mut kinds = self.in_flight.clear();
        kinds.extend(held.into_values().flatten().map(|(_, kind)| kind));
        kinds
    }
}
