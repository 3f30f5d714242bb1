//! [`HoldService`]: one broker's parked long-poll pulls (Java `PullRequestHoldService`).
//!
//! A pull that found nothing, with the suspend bit, on its first processing is parked with no
//! response. It is re-run once (suspension no longer allowed) when:
//!
//! - a message arrives in its queue past its offset and matches its tag filter
//!   (`notifyMessageArriving` with the new message's tags code), or
//! - a periodic check (every `long_poll_check`, 5 s like the Java service) finds its queue
//!   grown past its offset (any message; the re-run may then answer `PULL_RETRY_IMMEDIATELY`)
//!   or its `suspendTimeoutMillis` elapsed. So a 15 s hold is answered after 15 to 20 s.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proto::Command;

use super::ConnKey;
use super::pull::TagFilter;

/// One parked pull.
#[derive(Clone, Debug)]
pub(crate) struct HeldPull {
    pub(crate) conn: ConnKey,
    /// The original request, re-run as is (same opaque).
    pub(crate) request: Command,
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) offset: i64,
    pub(crate) filter: TagFilter,
    /// `None` when `suspendTimeoutMillis` is too large to represent: only a message wakes it.
    pub(crate) deadline: Option<Instant>,
}

/// The parked pulls of one broker, in arrival order.
#[derive(Clone, Debug, Default)]
pub(crate) struct HoldService {
    held: BTreeMap<u64, HeldPull>,
    next_sequence: u64,
    next_check: Option<Instant>,
}

impl HoldService {
    /// Parks `pull`; arms the periodic check if it was idle.
    pub(crate) fn hold(&mut self, pull: HeldPull, now: Instant, period: Duration) {
        self.held.insert(self.next_sequence, pull);
        self.next_sequence += 1;
        if self.next_check.is_none() {
            self.next_check = now.checked_add(period);
        }
    }

    /// When the periodic check runs next.
    pub(crate) fn next_check(&self) -> Option<Instant> {
        self.next_check
    }

    /// Takes the pulls a message with `tags_code` arriving in (`topic`, `queue_id`), now ending
    /// at `max_offset`, wakes.
    pub(crate) fn take_arrived(
        &mut self,
        topic: &str,
        queue_id: i32,
        max_offset: i64,
        tags_code: i32,
    ) -> Vec<HeldPull> {
        let woken = self.take_where(|p| {
            p.topic == topic
                && p.queue_id == queue_id
                && max_offset > p.offset
                && p.filter.matches(tags_code)
        });
        if self.held.is_empty() {
            self.next_check = None;
        }
        woken
    }

    /// Runs the periodic check at `now` when it is due: takes the pulls whose queue grew past
    /// their offset (`max_offset` tells a queue's end) or whose hold expired, and re-arms.
    pub(crate) fn take_checked(
        &mut self,
        now: Instant,
        period: Duration,
        max_offset: impl Fn(&str, i32) -> i64,
    ) -> Vec<HeldPull> {
        if self.next_check.is_none_or(|at| at > now) {
            return Vec::new();
        }
        let woken = self.take_where(|p| {
            max_offset(&p.topic, p.queue_id) > p.offset || p.deadline.is_some_and(|d| d <= now)
        });
        self.next_check = if self.held.is_empty() {
            None
        } else {
            now.checked_add(period)
        };
        woken
    }

    /// Drops the pulls of a closed connection.
    pub(crate) fn drop_conn(&mut self, conn: ConnKey) {
        self.held.retain(|_, p| p.conn != conn);
        if self.held.is_empty() {
            self.next_check = None;
        }
    }

    /// Drops every parked pull (a broker restart).
    pub(crate) fn clear(&mut self) {
        self.held.clear();
        self.next_check = None;
    }

    /// How many pulls are parked.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    fn take_where(&mut self, mut wake: impl FnMut(&HeldPull) -> bool) -> Vec<HeldPull> {
        let keys: Vec<u64> = self
            .held
            .iter()
            .filter(|(_, p)| wake(p))
            .map(|(k, _)| *k)
            .collect();
        keys.into_iter()
            .filter_map(|k| self.held.remove(&k))
            .collect()
    }
}
