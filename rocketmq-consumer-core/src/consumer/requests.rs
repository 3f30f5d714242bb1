//! The push consumer's requests: what each is for ([`PendingKind`]), over the crate's request
//! layer (`crate::link`, which the pop consumer and the producer keep one of too), and the
//! confirmed commits held back until the one in flight to their broker is answered
//! ([`HeldCommits`]).
//!
//! A request ends exactly once: answered on its connection, timed out, or failed with the
//! connection it went out on; the consumer's `answer` takes it from there.

use std::collections::{BTreeMap, VecDeque};

use proto::{Command, MessageQueue};

use super::send_back::SendBack;
use crate::id::{Epoch, QueueKey};
use crate::output::RequestId;

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
    /// The periodic or acknowledgement-driven commit of a running queue's offset.
    Persist(QueueKey, Epoch),
    /// Orderly: the commit of a revoked queue, whose lock is released once it is answered.
    HandOverCommit(MessageQueue, i64),
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
            Self::FinalCommit(queue, _)
            | Self::HandOverCommit(queue, _)
            | Self::Search(_, queue)
            | Self::Commit { queue, .. } => Ok(Some(queue.topic())),
            Self::SendBack(back) => Ok(Some(back.queue.topic())),
            Self::QueryOffset(key, _)
            | Self::MaxOffset(key, _)
            | Self::SearchOffset(key, _)
            | Self::Pull { key, .. }
            | Self::SeekBound { key, .. }
            | Self::Persist(key, _) => Err(*key),
            Self::Heartbeat | Self::Unregister | Self::Lock(_) | Self::Unlock => Ok(None),
        }
    }

    /// A confirmed `UPDATE_CONSUMER_OFFSET`, one at a time per broker (see [`HeldCommits::hold`]).
    pub(crate) fn is_commit(&self) -> bool {
        matches!(
            self,
            Self::Commit { .. }
                | Self::FinalCommit(..)
                | Self::HandOverCommit(..)
                | Self::Persist(..)
        )
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
            Self::FinalCommit(..)
            | Self::HandOverCommit(..)
            | Self::Commit { .. }
            | Self::Persist(..) => "UPDATE_CONSUMER_OFFSET",
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

/// The confirmed commits held back until the one in flight to their broker is answered.
#[derive(Debug, Default)]
pub(crate) struct HeldCommits {
    /// Commits waiting for the one in flight to their broker, by address.
    held: BTreeMap<String, VecDeque<(Command, PendingKind)>>,
}

impl HeldCommits {
    /// Holds a confirmed commit to `addr` back while another is in flight there; gives it
    /// back when it may go now.
    ///
    /// One at a time per broker because Apache 4.9's `ConsumerOffsetManager.commitOffset`
    /// creates a group's per-topic offset map with a plain get-then-put: two first commits of
    /// one topic handled at once by the broker's 32 consume-manage threads can each make a map,
    /// and one replaces the other with its queue's offset lost (the broker then answers "no
    /// offset" for that queue). Seen with four pipelined commits of a lite pull consumer. The
    /// answer of one commit is the broker's word that it is stored, so the next cannot race it.
    /// `in_flight` says whether a commit to `addr` is in flight now.
    pub(crate) fn hold(
        &mut self,
        addr: &str,
        command: Command,
        kind: PendingKind,
        in_flight: bool,
    ) -> Option<(Command, PendingKind)> {
        if in_flight {
            self.held
                .entry(addr.to_owned())
                .or_default()
                .push_back((command, kind));
            None
        } else {
            Some((command, kind))
        }
    }

    /// The commit in flight to `addr` ended: the next one held for it, to send now.
    pub(crate) fn next(&mut self, addr: &str) -> Option<(Command, PendingKind)> {
        let chain = self.held.get_mut(addr)?;
        let next = chain.pop_front();
        if chain.is_empty() {
            self.held.remove(addr);
        }
        next
    }

    /// Whether any confirmed commit is held back.
    pub(crate) fn any(&self) -> bool {
        !self.held.is_empty()
    }

    /// Forgets every held commit (the consumer closed); returns them.
    pub(crate) fn clear(&mut self) -> Vec<PendingKind> {
        std::mem::take(&mut self.held)
            .into_values()
            .flatten()
            .map(|(_, kind)| kind)
            .collect()
    }
}
