//! [`Fault`]: knobs a test turns to make the cluster misbehave the way real ones do.
//!
//! Faults are one-shot or counted, consumed as matching traffic arrives. Crash-like faults
//! (a broker restarting or going down) are methods of
//! [`SimCluster`](super::SimCluster) instead, since they also act on connections.

use std::collections::VecDeque;

use proto::{RequestCode, ResponseCode};

/// A fault to inject with [`SimCluster::inject`](super::SimCluster::inject).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The next `count` requests to `broker` are answered `SYSTEM_BUSY` (remark
    /// `[REJECTREQUEST]system busy, ...`, as a flow-controlling broker does) without being
    /// processed. A oneway request counts too, and is dropped unprocessed.
    SystemBusy {
        /// The broker name.
        broker: String,
        /// How many requests.
        count: u32,
    },
    /// The next pull of the queue (`topic`, `queue_id`) on `broker`, first processing or a
    /// long-poll re-run, answers `PULL_OFFSET_MOVED` with `next_begin_offset` (what a 5.x
    /// broker does after a server-side offset reset, store status `OFFSET_RESET`).
    OffsetMoved {
        /// The broker name.
        broker: String,
        /// The topic.
        topic: String,
        /// The queue id.
        queue_id: i32,
        /// The offset the response tells the client to continue from.
        next_begin_offset: i64,
    },
    /// The next `count` responses anywhere in the cluster (name server included) are
    /// processed but never sent: the client must time out. Broker-initiated requests are not
    /// affected.
    DropResponses {
        /// How many responses.
        count: u32,
    },
    /// The next `count` requests with code `request` to `broker` are answered with code
    /// `response` (remark `"injected fault"`, no header) without being processed: for
    /// example `FLOW_CONTROL` on pulls, or `SYSTEM_ERROR` on lock requests. Oneway requests
    /// count and are dropped.
    RespondWith {
        /// The broker name.
        broker: String,
        /// Which requests.
        request: RequestCode,
        /// The answer's code.
        response: ResponseCode,
        /// How many requests.
        count: u32,
    },
}

/// The pending faults of one broker.
#[derive(Debug, Default)]
pub(crate) struct BrokerFaults {
    pub(crate) busy: u32,
    /// `(topic, queue id, next begin offset)`, in injection order.
    offset_moved: VecDeque<(String, i32, i64)>,
    /// `(request, response, remaining)`, in injection order.
    respond_with: Vec<(RequestCode, ResponseCode, u32)>,
}

impl BrokerFaults {
    pub(crate) fn add_offset_moved(&mut self, topic: String, queue_id: i32, next: i64) {
        self.offset_moved.push_back((topic, queue_id, next));
    }

    pub(crate) fn add_respond_with(
        &mut self,
        request: RequestCode,
        response: ResponseCode,
        n: u32,
    ) {
        if n > 0 {
            self.respond_with.push((request, response, n));
        }
    }

    /// Consumes the oldest pending offset move for the queue.
    pub(crate) fn take_offset_moved(&mut self, topic: &str, queue_id: i32) -> Option<i64> {
        let index = self
            .offset_moved
            .iter()
            .position(|(t, q, _)| t == topic && *q == queue_id)?;
        self.offset_moved.remove(index).map(|(_, _, next)| next)
    }

    /// Consumes one use of the oldest pending canned answer for `request`.
    pub(crate) fn take_respond_with(&mut self, request: RequestCode) -> Option<ResponseCode> {
        let index = self
            .respond_with
            .iter()
            .position(|(code, _, _)| *code == request)?;
        let entry = self.respond_with.get_mut(index)?;
        entry.2 -= 1;
        let response = entry.1;
        if entry.2 == 0 {
            self.respond_with.remove(index);
        }
        Some(response)
    }
}
