//! The pop consumer's requests: what each is for ([`Kind`]), and how one goes out and ends
//! without an answer, over the crate's request layer (`crate::link`, which the push consumer
//! and the producer keep one of too).

use std::time::{Duration, Instant};

use proto::headers::ReceiptHandle;
use proto::{Command, MessageQueue};

use super::PopConsumer;
use super::held::HeldId;
use crate::link::Due;
use crate::output::{ConnId, FailureReason, RequestId};

/// A request in flight.
pub(super) type Pending = crate::requests::Pending<Kind>;

/// What a request is for, with what its answer needs.
#[derive(Debug)]
pub(super) enum Kind {
    /// `GET_ROUTEINFO_BY_TOPIC` for this wire topic.
    Route(String),
    /// `HEART_BEAT` to one broker.
    Heartbeat,
    /// `SET_MESSAGE_REQUEST_MODE` to POP for one topic on one broker.
    SetMode,
    /// `QUERY_ASSIGNMENT` for this wire topic.
    Assignment(String),
    /// `POP_MESSAGE` of one queue, for a poller (push mode) or a receive (simple mode).
    Pop {
        queue: MessageQueue,
        /// The subscribed topic (wire name).
        topic: String,
        /// Push mode: the poller's sequence number.
        poller: Option<u64>,
        /// Simple mode: the receive it answers.
        receive: Option<RequestId>,
    },
    /// The ack of these held messages (a batch ack when several).
    Ack(Vec<HeldId>),
    /// A failed message made invisible for its retry backoff.
    Retry(HeldId),
    /// A running delivery's message kept invisible.
    Renew(HeldId),
    /// A message out of attempts on its way to `%DLQ%<group>`.
    DeadLetter(HeldId),
    /// A message not delivered made visible again (or, orderly, held back).
    Release(HeldId),
    /// Simple mode: the application's ack.
    AppAck(RequestId),
    /// Simple mode: the application's invisibility change of the message (topic, handle).
    AppChange(RequestId, String, ReceiptHandle),
    /// `UNREGISTER_CLIENT` at shutdown.
    Unregister,
}

impl Kind {
    /// The request's name in [`PopEvent::RequestFailed`](super::PopEvent::RequestFailed) and
    /// [`PopEvent::SettleFailed`](super::PopEvent::SettleFailed).
    pub(super) fn name(&self) -> &'static str {
        match self {
            Self::Route(_) => "GET_ROUTEINFO_BY_TOPIC",
            Self::Heartbeat => "HEART_BEAT",
            Self::SetMode => "SET_MESSAGE_REQUEST_MODE",
            Self::Assignment(_) => "QUERY_ASSIGNMENT",
            Self::Pop { .. } => "POP_MESSAGE",
            Self::Ack(ids) if ids.len() > 1 => "BATCH_ACK_MESSAGE",
            Self::Ack(_) | Self::AppAck(_) => "ACK_MESSAGE",
            Self::Retry(_) | Self::Renew(_) | Self::Release(_) | Self::AppChange(..) => {
                "CHANGE_MESSAGE_INVISIBLETIME"
            }
            Self::DeadLetter(_) => "CONSUMER_SEND_MSG_BACK",
            Self::Unregister => "UNREGISTER_CLIENT",
        }
    }
}

impl PopConsumer {
    /// How long a request of `kind` may go unanswered: a pop, the long poll and some grace.
    fn timeout_of(&self, kind: &Kind) -> Duration {
        match kind {
            Kind::Pop { .. } => self.config.poll_time + self.config.poll_grace,
            _ => self.config.request_timeout,
        }
    }

    /// Sends `command` to `addr` as a request of `kind` under a fresh opaque (opening a
    /// connection when there is none), and sets its deadline; an address that failed recently
    /// fails it at once.
    pub(super) fn request(&mut self, now: Instant, addr: &str, command: Command, kind: Kind) {
        let timeout = self.timeout_of(&kind);
        if let Err(pending) = self.link.request(now, addr, command, kind, timeout) {
            self.answer(now, pending, Err(FailureReason::Disconnected));
        }
    }

    /// A request that could not even be sent (no address for its broker).
    pub(super) fn answer_unsent(&mut self, now: Instant, kind: Kind) {
        let pending = Pending {
            conn: ConnId(0),
            addr: String::new(),
            kind,
            sent: now,
            deadline: now,
        };
        self.answer(now, pending, Err(FailureReason::Disconnected));
    }

    /// A deadline of the request layer passed: a request that timed out fails (and a
    /// connection whose requests keep timing out is replaced: a peer that keeps the socket
    /// open but stopped answering is not waited on for ever); a connection that did not open
    /// in time fails its requests.
    pub(super) fn request_due(&mut self, now: Instant, due: Due<Kind>) {
        match due {
            Due::TimedOut(pending) => {
                let conn = pending.conn;
                let give_up = self.link.streak_says_close(conn);
                self.answer(now, pending, Err(FailureReason::Timeout));
                if give_up && self.link.close(now, conn).is_some() {
                    self.fail_lost(now, conn);
                }
            }
            Due::OpenTimedOut { conn, .. } => self.fail_lost(now, conn),
        }
    }

    /// `conn` is gone: its address waits `reconnect_backoff`, and its requests fail.
    pub(super) fn connection_lost(&mut self, now: Instant, conn: ConnId) {
        if self.link.disconnected(now, conn).is_some() {
            self.fail_lost(now, conn);
        }
    }

    /// Fails the requests still in flight on the lost `conn`, one at a time: failing one may
    /// close the consumer, which ends the others.
    fn fail_lost(&mut self, now: Instant, conn: ConnId) {
        while let Some(pending) = self.link.next_lost(conn) {
            self.answer(now, pending, Err(FailureReason::Disconnected));
        }
    }
}
