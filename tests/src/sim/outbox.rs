//! [`Outbox`]: what the cluster has to tell the test world, in order: commands to deliver to
//! client connections, and connections the cluster closed.

use std::collections::VecDeque;

use proto::Command;

use super::ConnKey;

/// Commands for clients and closed connections, plus the response-dropping fault (it acts
/// where responses leave the cluster, whoever produced them).
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    commands: VecDeque<(ConnKey, Command)>,
    closed: VecDeque<ConnKey>,
    /// Responses still to swallow ([`Fault::DropResponses`](super::Fault::DropResponses)).
    pub(crate) drop_responses: u64,
    /// Responses swallowed so far, for inspection.
    pub(crate) dropped: u64,
}

impl Outbox {
    /// Answers `request` on `conn`. A oneway request never gets an answer, not even an error
    /// (`NettyRemotingAbstract.processRequestCommand` only writes responses of non-oneway
    /// requests).
    pub(crate) fn respond(&mut self, conn: ConnKey, request: &Command, mut response: Command) {
        if request.is_oneway() {
            return;
        }
        if self.drop_responses > 0 {
            self.drop_responses -= 1;
            self.dropped += 1;
            return;
        }
        response.opaque = request.opaque;
        response.flag |= proto::command::FLAG_RESPONSE;
        self.commands.push_back((conn, response));
    }

    /// Sends a broker-initiated request on `conn`.
    pub(crate) fn send(&mut self, conn: ConnKey, request: Command) {
        self.commands.push_back((conn, request));
    }

    /// Records that the cluster closed `conn`; whatever was still queued for it is lost with
    /// the connection.
    pub(crate) fn close(&mut self, conn: ConnKey) {
        self.forget(conn);
        self.closed.push_back(conn);
    }

    /// Drops what is queued for `conn` (the client closed it).
    pub(crate) fn forget(&mut self, conn: ConnKey) {
        self.commands.retain(|(c, _)| *c != conn);
    }

    pub(crate) fn pop_command(&mut self) -> Option<(ConnKey, Command)> {
        self.commands.pop_front()
    }

    pub(crate) fn pop_closed(&mut self) -> Option<ConnKey> {
        self.closed.pop_front()
    }

    pub(crate) fn pending(&self) -> usize {
        self.commands.len()
    }
}
