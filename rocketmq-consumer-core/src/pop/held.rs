//! [`Held`]: the popped messages this consumer holds until they are settled (acked, made
//! invisible for a retry, dead-lettered, released), with the totals flow control reads. The
//! totals change only through `insert` and `remove`, so they always equal the table's sums.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use proto::headers::ReceiptHandle;
use proto::message::Message;

use super::output::PopDeliveryId;

/// Names one held message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct HeldId(pub(crate) u64);

/// Where a held message is in its life.
#[derive(Debug)]
pub(crate) enum Stage {
    /// Popped, waiting for a handler slot.
    Ready(Box<Message>),
    /// With the handler.
    Handling(PopDeliveryId),
    /// Its ack, retry, dead letter or release is on its way.
    Settling,
}

/// What is to become of a message once its handler is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Settle {
    /// Consumed: ack it.
    Ack,
    /// Failed: invisible for this long, then delivered again.
    Retry(std::time::Duration),
    /// Failed too often: to the dead-letter queue, then ack.
    DeadLetter,
}

/// One held message.
#[derive(Debug)]
pub(crate) struct HeldMessage {
    /// The subscribed topic (wire name).
    pub(crate) topic: String,
    pub(crate) handle: ReceiptHandle,
    /// When the broker makes it visible again, at the latest as far as we know: the send time
    /// of the request that set its invisibility plus that invisibility (the broker's clock
    /// started later).
    pub(crate) visible_until: Instant,
    pub(crate) bytes: usize,
    pub(crate) reconsume_times: i32,
    /// Commit-log offset and id, for the dead-letter send-back.
    pub(crate) commit_log_offset: i64,
    pub(crate) msg_id: String,
    pub(crate) stage: Stage,
    /// A renewal is on its way: its answer brings the handle to settle with.
    pub(crate) renewing: bool,
    /// The handler finished while a renewal was on its way.
    pub(crate) settle_after_renewal: Option<Settle>,
    /// Failed settle attempts (timeouts, lost connections), retried while still invisible.
    pub(crate) attempts: u32,
}

/// The held messages and their totals.
#[derive(Debug, Default)]
pub(crate) struct Held {
    messages: BTreeMap<HeldId, HeldMessage>,
    /// Ready messages in pop order.
    ready: VecDeque<HeldId>,
    bytes: usize,
    next: u64,
}

impl Held {
    pub(crate) fn insert(&mut self, message: HeldMessage) -> HeldId {
        self.next += 1;
        let id = HeldId(self.next);
        self.bytes += message.bytes;
        if matches!(message.stage, Stage::Ready(_)) {
            self.ready.push_back(id);
        }
        self.messages.insert(id, message);
        id
    }

    pub(crate) fn remove(&mut self, id: HeldId) -> Option<HeldMessage> {
        let message = self.messages.remove(&id)?;
        self.bytes -= message.bytes;
        if matches!(message.stage, Stage::Ready(_)) {
            self.ready.retain(|r| *r != id);
        }
        Some(message)
    }

    pub(crate) fn get(&self, id: HeldId) -> Option<&HeldMessage> {
        self.messages.get(&id)
    }

    pub(crate) fn get_mut(&mut self, id: HeldId) -> Option<&mut HeldMessage> {
        self.messages.get_mut(&id)
    }

    /// The oldest ready message, moved to `Handling(delivery)`, with its message.
    pub(crate) fn take_ready(&mut self, delivery: PopDeliveryId) -> Option<(HeldId, Message)> {
        while let Some(id) = self.ready.pop_front() {
            let Some(held) = self.messages.get_mut(&id) else {
                continue;
            };
            if let Stage::Ready(_) = held.stage
                && let Stage::Ready(message) =
                    std::mem::replace(&mut held.stage, Stage::Handling(delivery))
            {
                return Some((id, *message));
            }
        }
        None
    }

    /// The oldest ready message `wanted` accepts, moved to `Handling(delivery)`, with its
    /// message; the ready messages before it stay ready, in their order.
    pub(crate) fn take_ready_where(
        &mut self,
        delivery: PopDeliveryId,
        wanted: impl Fn(&HeldMessage) -> bool,
    ) -> Option<(HeldId, Message)> {
        let position = self.ready.iter().position(|id| {
            self.messages
                .get(id)
                .is_some_and(|m| matches!(m.stage, Stage::Ready(_)) && wanted(m))
        })?;
        let id = self.ready.remove(position)?;
        let held = self.messages.get_mut(&id)?;
        match std::mem::replace(&mut held.stage, Stage::Handling(delivery)) {
            Stage::Ready(message) => Some((id, *message)),
            other => {
                held.stage = other;
                None
            }
        }
    }

    /// The ready messages `wanted` accepts, taken out of the ready list and moved to
    /// `Settling`.
    pub(crate) fn drain_ready_where(
        &mut self,
        wanted: impl Fn(&HeldMessage) -> bool,
    ) -> Vec<HeldId> {
        let mut taken = Vec::new();
        let messages = &mut self.messages;
        self.ready.retain(|id| {
            let Some(held) = messages.get_mut(id) else {
                return false;
            };
            if wanted(held) {
                held.stage = Stage::Settling;
                taken.push(*id);
                false
            } else {
                true
            }
        });
        taken
    }

    /// Every ready message, taken out of the ready list and moved to `Settling`.
    pub(crate) fn drain_ready(&mut self) -> Vec<HeldId> {
        let ids: Vec<HeldId> = self.ready.drain(..).collect();
        for id in &ids {
            if let Some(held) = self.messages.get_mut(id) {
                held.stage = Stage::Settling;
            }
        }
        ids
    }

    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Held messages of delivery `delivery`.
    pub(crate) fn of_delivery(&self, delivery: PopDeliveryId) -> Vec<HeldId> {
        self.messages
            .iter()
            .filter(|(_, m)| matches!(m.stage, Stage::Handling(d) if d == delivery))
            .map(|(id, _)| *id)
            .collect()
    }
}
