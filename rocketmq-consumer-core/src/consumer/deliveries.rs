//! Deliveries in flight: messages handed to the application's handler and not yet completed,
//! whether they came from an owned queue or from a broker's `CONSUME_MESSAGE_DIRECTLY`.

use std::collections::VecDeque;
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
    /// With message trace: what its `SubAfter` records need. Boxed: a flight is moved in and
    /// out of the ring at every delivery, traced or not, and this is most of its size.
    pub(crate) trace: Option<Box<OpenTrace>>,
}

impl Flight {
    /// Whether this delivery holds messages of queue `key` in life `epoch`.
    fn holds(&self, key: QueueKey, epoch: Epoch) -> bool {
        matches!(self.source, Source::Queue { key: k, epoch: e, .. } if k == key && e == epoch)
    }
}

/// Every delivery in flight, by sequence number (which grows with dispatch time).
///
/// Sequence numbers are handed out in order and deliveries mostly end in order, so they sit in
/// a ring from the oldest in flight on: a delivery that ends leaves a hole until those before
/// it ended too. The ring keeps its capacity, so a delivery costs no allocation (a `BTreeMap`
/// made and freed a node whenever the last delivery in flight ended, as an inline handler's
/// does before the next starts: 0.13 allocations a message).
#[derive(Debug, Default)]
pub(crate) struct Deliveries {
    /// `slots[i]` is delivery `first_seq + i`, `None` once it ended; never a `None` in front.
    slots: VecDeque<Option<Flight>>,
    first_seq: u64,
    /// The `Some` slots.
    live: usize,
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
        if self.slots.is_empty() {
            self.first_seq = seq;
        }
        self.slots.push_back(Some(Flight {
            source,
            started: now,
            trace: trace.map(Box::new),
        }));
        self.live += 1;
        DeliveryId { seq }
    }

    /// Ends delivery `id`; `None` when it is not in flight (completed already, expired, or
    /// abandoned at shutdown).
    pub(crate) fn finish(&mut self, id: DeliveryId) -> Option<Flight> {
        let index = self.index(id.seq)?;
        let flight = self.slots.get_mut(index)?.take()?;
        self.live -= 1;
        self.drop_ended_front();
        Some(flight)
    }

    pub(crate) fn get(&self, id: DeliveryId) -> Option<&Flight> {
        self.slots.get(self.index(id.seq)?)?.as_ref()
    }

    /// How many are in flight.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Whether any delivery holds messages of queue `key` in life `epoch`.
    pub(crate) fn any_of(&self, key: QueueKey, epoch: Epoch) -> bool {
        self.slots.iter().flatten().any(|f| f.holds(key, epoch))
    }

    /// Ends every queue delivery handed out `timeout` before `now` or earlier, and returns
    /// them. Direct deliveries have no consume timeout: the broker that asked times out.
    pub(crate) fn take_expired(&mut self, now: Instant, timeout: Duration) -> Vec<Flight> {
        let expired: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.as_ref().map(|f| (i, f)))
            .take_while(|(_, f)| f.started + timeout <= now)
            .filter(|(_, f)| matches!(f.source, Source::Queue { .. }))
            .map(|(i, _)| i)
            .collect();
        let taken: Vec<Flight> = expired
            .into_iter()
            .filter_map(|i| self.slots.get_mut(i).and_then(Option::take))
            .collect();
        self.live -= taken.len();
        self.drop_ended_front();
        taken
    }

    /// Forgets every delivery (shutdown gave up waiting); returns how many there were.
    pub(crate) fn abandon_all(&mut self) -> usize {
        let count = self.live;
        self.slots.clear();
        self.live = 0;
        count
    }

    /// Where delivery `seq` sits, if the ring reaches it.
    fn index(&self, seq: u64) -> Option<usize> {
        let index = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        (index < self.slots.len()).then_some(index)
    }

    fn drop_ended_front(&mut self) {
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.first_seq += 1;
        }
    }
}
