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
    /// A delivery from `source` handed out at `now`.
    #[inline]
    pub(crate) fn new(now: Instant, source: Source, trace: Option<Box<OpenTrace>>) -> Self {
        Self {
            source,
            started: now,
            trace,
        }
    }

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
/// does before the next starts: 0.13 allocations a message). A delivery whose handler
/// finished while it was handed out ([`Consumer::deliver_now`](super::Consumer::deliver_now))
/// takes a number but never enters the ring, so each slot names its number.
#[derive(Debug, Default)]
pub(crate) struct Deliveries {
    /// In ascending sequence order, `None` once ended; never a `None` in front.
    slots: VecDeque<Slot>,
    /// The `Some` slots.
    live: usize,
    next_seq: u64,
}

#[derive(Debug)]
struct Slot {
    seq: u64,
    flight: Option<Flight>,
}

impl Deliveries {
    /// Records a new delivery from `source`, handed out at `now`.
    pub(crate) fn start(
        &mut self,
        now: Instant,
        source: Source,
        trace: Option<Box<OpenTrace>>,
    ) -> DeliveryId {
        let id = self.next_id();
        self.insert(id, Flight::new(now, source, trace));
        id
    }

    /// The number of the next delivery; [`Deliveries::insert`] puts it in flight (or nothing
    /// does, when its handler finished as it was handed out).
    #[inline]
    pub(crate) fn next_id(&mut self) -> DeliveryId {
        self.next_seq += 1;
        DeliveryId { seq: self.next_seq }
    }

    /// Puts delivery `id` in flight: the newest number handed out, so it goes at the back.
    #[inline]
    pub(crate) fn insert(&mut self, id: DeliveryId, flight: Flight) {
        debug_assert!(self.slots.back().is_none_or(|last| last.seq < id.seq));
        self.slots.push_back(Slot {
            seq: id.seq,
            flight: Some(flight),
        });
        self.live += 1;
    }

    /// Ends delivery `id`; `None` when it is not in flight (completed already, expired, or
    /// abandoned at shutdown).
    pub(crate) fn finish(&mut self, id: DeliveryId) -> Option<Flight> {
        let index = self.index(id.seq)?;
        let flight = self.slots.get_mut(index)?.flight.take()?;
        self.live -= 1;
        self.drop_ended_front();
        Some(flight)
    }

    pub(crate) fn get(&self, id: DeliveryId) -> Option<&Flight> {
        self.slots.get(self.index(id.seq)?)?.flight.as_ref()
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
        self.slots
            .iter()
            .filter_map(|slot| slot.flight.as_ref())
            .any(|f| f.holds(key, epoch))
    }

    /// Ends every queue delivery handed out `timeout` before `now` or earlier, and returns
    /// them. Direct deliveries have no consume timeout: the broker that asked times out.
    pub(crate) fn take_expired(&mut self, now: Instant, timeout: Duration) -> Vec<Flight> {
        let expired: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.flight.as_ref().map(|f| (i, f)))
            .take_while(|(_, f)| f.started + timeout <= now)
            .filter(|(_, f)| matches!(f.source, Source::Queue { .. }))
            .map(|(i, _)| i)
            .collect();
        let taken: Vec<Flight> = expired
            .into_iter()
            .filter_map(|i| self.slots.get_mut(i).and_then(|slot| slot.flight.take()))
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

    /// Where delivery `seq` sits in the ring: mostly the oldest in flight, as deliveries end
    /// in about the order they started.
    #[inline]
    fn index(&self, seq: u64) -> Option<usize> {
        if self.slots.front()?.seq == seq {
            return Some(0);
        }
        self.slots.binary_search_by_key(&seq, |slot| slot.seq).ok()
    }

    #[inline]
    fn drop_ended_front(&mut self) {
        while self.slots.front().is_some_and(|slot| slot.flight.is_none()) {
            self.slots.pop_front();
        }
    }
}
