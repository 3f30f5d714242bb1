//! Deliveries in flight: messages handed to the application's handler and not yet completed,
//! whether they came from an owned queue or from a broker's `CONSUME_MESSAGE_DIRECTLY`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::message_trace::OpenTrace;
use crate::id::{Epoch, QueueKey};
use crate::output::{ConnId, DeliveryId};

/// Where a delivery came from, and so where its outcome goes.
#[derive(Debug)]
pub(crate) enum Source {
    /// Messages of an owned queue, in one life of it: the outcome settles their offsets.
    Queue {
        key: QueueKey,
        epoch: Epoch,
        offsets: Offsets,
    },
    /// A broker asked us to consume one message (`CONSUME_MESSAGE_DIRECTLY`): the outcome is
    /// the answer to that request, and no offset moves.
    Direct { conn: ConnId, opaque: i32 },
}

/// The queue offsets of a delivery's messages, lowest first. One message per delivery is the
/// default (`consume_batch_size` 1), and it needs no allocation.
#[derive(Debug)]
pub(crate) enum Offsets {
    One(i64),
    Many(Vec<i64>),
}

impl FromIterator<i64> for Offsets {
    fn from_iter<I: IntoIterator<Item = i64>>(offsets: I) -> Self {
        let mut offsets = offsets.into_iter();
        match (offsets.next(), offsets.next()) {
            (Some(only), None) => Self::One(only),
            (None, _) => Self::Many(Vec::new()),
            (Some(first), Some(second)) => {
                let mut all = Vec::with_capacity(2 + offsets.size_hint().0);
                all.extend([first, second]);
                all.extend(offsets);
                Self::Many(all)
            }
        }
    }
}

impl std::ops::Deref for Offsets {
    type Target = [i64];

    fn deref(&self) -> &[i64] {
        match self {
            Self::One(offset) => std::slice::from_ref(offset),
            Self::Many(offsets) => offsets,
        }
    }
}

/// One delivery in flight.
#[derive(Debug)]
pub(crate) struct Flight {
    pub(crate) source: Source,
    pub(crate) started: Instant,
    /// With message trace: what its `SubAfter` records need.
    pub(crate) trace: Option<OpenTrace>,
}

impl Flight {
    /// Whether this delivery holds messages of queue `key` in life `epoch`.
    fn holds(&self, key: QueueKey, epoch: Epoch) -> bool {
        matches!(self.source, Source::Queue { key: k, epoch: e, .. } if k == key && e == epoch)
    }
}

/// Every delivery in flight, by sequence number (which grows with dispatch time).
#[derive(Debug, Default)]
pub(crate) struct Deliveries {
    in_flight: BTreeMap<u64, Flight>,
    next_seq: u64,
}

impl Deliveries {
    /// Records a new delivery from `source`, handed out at `now`.
    pub(crate) fn start(
        &mut self,
        now: Instant,
        source: Source,
        trace: Option<OpenTrace>,
    ) -> DeliveryId {
        self.next_seq += 1;
        let seq = self.next_seq;
        self.in_flight.insert(
            seq,
            Flight {
                source,
                started: now,
                trace,
            },
        );
        DeliveryId { seq }
    }

    /// Ends delivery `id`; `None` when it is not in flight (completed already, expired, or
    /// abandoned at shutdown).
    pub(crate) fn finish(&mut self, id: DeliveryId) -> Option<Flight> {
        self.in_flight.remove(&id.seq)
    }

    pub(crate) fn get(&self, id: DeliveryId) -> Option<&Flight> {
        self.in_flight.get(&id.seq)
    }

    /// How many are in flight.
    pub(crate) fn len(&self) -> usize {
        self.in_flight.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// Whether any delivery holds messages of queue `key` in life `epoch`.
    pub(crate) fn any_of(&self, key: QueueKey, epoch: Epoch) -> bool {
        self.in_flight.values().any(|f| f.holds(key, epoch))
    }

    /// Ends every queue delivery handed out `timeout` before `now` or earlier, and returns
    /// them. Direct deliveries have no consume timeout: the broker that asked times out.
    pub(crate) fn take_expired(&mut self, now: Instant, timeout: Duration) -> Vec<Flight> {
        let expired: Vec<u64> = self
            .in_flight
            .iter()
            .take_while(|(_, f)| f.started + timeout <= now)
            .filter(|(_, f)| matches!(f.source, Source::Queue { .. }))
            .map(|(seq, _)| *seq)
            .collect();
        expired
            .into_iter()
            .filter_map(|seq| self.in_flight.remove(&seq))
            .collect()
    }

    /// Forgets every delivery (shutdown gave up waiting); returns how many there were.
    pub(crate) fn abandon_all(&mut self) -> usize {
        let count = self.in_flight.len();
        self.in_flight.clear();
        count
    }
}
