//! The cache of one queue's pulled-but-unacknowledged messages (Java's `ProcessQueue`).

use std::collections::VecDeque;
use std::time::Instant;

use proto::message::Message;

use crate::messages::Messages;

/// Pulled messages of one queue, in offset order, and what has been acknowledged.
///
/// The committable offset is the lowest offset still cached (an unacknowledged message), or one
/// past the highest offset ever cached when the cache is empty, or the start offset before
/// anything arrived: committing it never skips a message that was not consumed.
///
/// Messages arrive in offset order and mostly leave in offset order, so they sit in a ring
/// buffer: putting, handing out and acknowledging are O(1) amortised (an acknowledgement finds
/// its message by binary search), and acknowledged messages leave from the front.
#[derive(Debug)]
pub struct ProcessQueue {
    entries: VecDeque<Entry>,
    /// No entry before this index is ready.
    ready_from: usize,
    ready: usize,
    in_flight: usize,
    waiting: usize,
    sending: usize,
    /// Entries not acknowledged.
    live: usize,
    cached_bytes: u64,
    /// One past the highest offset ever cached, or the start offset.
    high_water: i64,
}

#[derive(Debug)]
struct Entry {
    offset: i64,
    message: Message,
    bytes: u64,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    InFlight,
    /// Being sent back to the broker for a retry: not done until the broker stored it.
    SendingBack,
    Waiting(Instant),
    Acked,
}

impl ProcessQueue {
    /// An empty cache for a queue whose consumption starts at `start_offset`.
    pub fn new(start_offset: i64) -> Self {
        Self {
            entries: VecDeque::new(),
            ready_from: 0,
            ready: 0,
            in_flight: 0,
            waiting: 0,
            sending: 0,
            live: 0,
            cached_bytes: 0,
            high_water: start_offset,
        }
    }

    /// Caches pulled messages; offsets already cached or already acknowledged (anything below
    /// the highest offset seen) are ignored. Returns how many were added.
    pub fn put(&mut self, messages: impl IntoIterator<Item = Message>) -> usize {
        let mut added = 0;
        for message in messages {
            let offset = message.queue_offset();
            // Below the high water an offset is either cached already or was acknowledged.
            if offset < self.high_water {
                continue;
            }
            let entry = self.admit(message);
            self.entries.push_back(entry);
            self.high_water = offset + 1;
            added += 1;
        }
        added
    }

    /// Marks up to `max` ready messages in flight and returns them, lowest offset first.
    pub fn take_ready(&mut self, max: usize) -> Messages {
        if max == 1 {
            // One message a delivery, the default: no collection to grow.
            return self.take_one().map(Messages::from).unwrap_or_default();
        }
        let mut out = Messages::with_capacity(max.min(self.ready));
        let mut i = self.ready_from;
        while out.len() < max && self.ready > 0 {
            let Some(entry) = self.entries.get_mut(i) else {
                break;
            };
            if entry.state == State::Ready {
                entry.state = State::InFlight;
                self.ready -= 1;
                self.in_flight += 1;
                out.push(entry.message.clone());
            }
            i += 1;
        }
        self.ready_from = i;
        out
    }

    /// Marks the first ready message in flight and returns it.
    fn take_one(&mut self) -> Option<Message> {
        if self.ready == 0 {
            return None;
        }
        let mut i = self.ready_from;
        while let Some(entry) = self.entries.get_mut(i) {
            i += 1;
            if entry.state == State::Ready {
                entry.state = State::InFlight;
                self.ready -= 1;
                self.in_flight += 1;
                self.ready_from = i;
                return Some(entry.message.clone());
            }
        }
        self.ready_from = i;
        None
    }

    /// Acknowledges consumed messages: they leave the cache.
    pub fn ack(&mut self, offsets: &[i64]) {
        for &offset in offsets {
            let Some(entry) = self.find(offset) else {
                continue;
            };
            let (state, bytes) = (entry.state, entry.bytes);
            if state == State::Acked {
                continue;
            }
            entry.state = State::Acked;
            self.leave(state);
            self.live -= 1;
            self.cached_bytes -= bytes;
        }
        while self
            .entries
            .front()
            .is_some_and(|e| e.state == State::Acked)
        {
            self.entries.pop_front();
            self.ready_from = self.ready_from.saturating_sub(1);
        }
    }

    /// Puts messages taken with [`ProcessQueue::take_ready`] and acknowledged back at the
    /// front, ready, as if they had never been taken (poll mode: the reader did not get to
    /// them). They must fit there: returns false, changing nothing, unless `messages` are in
    /// ascending offset order and below the lowest cached offset (below the high water when
    /// nothing is cached). So several takes go back latest first.
    pub fn unread(&mut self, messages: Vec<Message>) -> bool {
        let limit = self.entries.front().map_or(self.high_water, |e| e.offset);
        let ascending = messages
            .windows(2)
            .all(|w| w[0].queue_offset() < w[1].queue_offset());
        if !ascending || messages.last().is_some_and(|m| m.queue_offset() >= limit) {
            return false;
        }
        for message in messages.into_iter().rev() {
            let entry = self.admit(message);
            self.entries.push_front(entry);
        }
        self.ready_from = 0;
        true
    }

    /// Puts in-flight (or being-sent-back) messages back to be delivered again at `at`, with
    /// their reconsume count raised by one as Java does; they stay cached, so the committable
    /// offset cannot pass them.
    pub fn retry_at(&mut self, offsets: &[i64], at: Instant) {
        for &offset in offsets {
            let Some(entry) = self.find(offset) else {
                continue;
            };
            let state = entry.state;
            if matches!(state, State::InFlight | State::SendingBack) {
                entry.state = State::Waiting(at);
                let times = entry.message.reconsume_times().saturating_add(1);
                entry.message.set_reconsume_times(times);
                self.leave(state);
                self.waiting += 1;
            }
        }
    }

    /// Marks in-flight messages as being sent back and returns them; offsets no longer cached
    /// or not in flight are skipped, so a message is never sent back twice.
    pub fn mark_sending(&mut self, offsets: &[i64]) -> Vec<Message> {
        let mut out = Vec::new();
        for &offset in offsets {
            let Some(entry) = self.find(offset) else {
                continue;
            };
            if entry.state == State::InFlight {
                entry.state = State::SendingBack;
                out.push(entry.message.clone());
                self.in_flight -= 1;
                self.sending += 1;
            }
        }
        out
    }

    /// Whether any message is handed out, being sent back or waiting for redelivery: an
    /// orderly queue delivers nothing else until it is not.
    pub fn is_busy(&self) -> bool {
        self.in_flight + self.waiting + self.sending > 0
    }

    /// The cached message at `offset`.
    pub fn get(&self, offset: i64) -> Option<&Message> {
        let index = self
            .entries
            .binary_search_by_key(&offset, |e| e.offset)
            .ok()?;
        self.entries
            .get(index)
            .filter(|e| e.state != State::Acked)
            .map(|e| &e.message)
    }

    /// The lowest and highest cached offsets.
    pub fn offset_range(&self) -> Option<(i64, i64)> {
        let first = self.entries.front()?.offset;
        let last = self
            .entries
            .iter()
            .rev()
            .find(|e| e.state != State::Acked)?
            .offset;
        Some((first, last))
    }

    /// Moves messages whose redelivery time has come back to ready; returns the earliest
    /// redelivery time still pending.
    pub fn release_due(&mut self, now: Instant) -> Option<Instant> {
        if self.waiting == 0 {
            return None;
        }
        let mut next = None;
        for (i, entry) in self.entries.iter_mut().enumerate() {
            if let State::Waiting(at) = entry.state {
                if at <= now {
                    entry.state = State::Ready;
                    self.waiting -= 1;
                    self.ready += 1;
                    self.ready_from = self.ready_from.min(i);
                } else {
                    next = Some(next.map_or(at, |n: Instant| n.min(at)));
                }
            }
        }
        next
    }

    /// The offset to commit: nothing below it is unacknowledged.
    pub fn committable(&self) -> i64 {
        // Acknowledged entries leave from the front, so the front is unacknowledged.
        self.entries.front().map_or(self.high_water, |e| e.offset)
    }

    /// Moves the start point when nothing is cached (a pull found nothing, or the broker
    /// corrected the offset); ignored while messages are cached.
    pub fn advance_empty(&mut self, offset: i64) {
        if self.live == 0 {
            self.high_water = self.high_water.max(offset);
        }
    }

    /// Cached messages.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Cached body bytes.
    pub fn bytes(&self) -> u64 {
        self.cached_bytes
    }

    /// Highest minus lowest cached offset (Java's `getMaxSpan`).
    pub fn span(&self) -> i64 {
        self.offset_range().map_or(0, |(first, last)| last - first)
    }

    /// Messages handed out and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether some message is ready to deliver.
    pub fn has_ready(&self) -> bool {
        self.ready > 0
    }

    /// A ready entry for `message`, counted as cached; the caller places it.
    fn admit(&mut self, message: Message) -> Entry {
        let bytes = message.body().len() as u64;
        self.ready += 1;
        self.live += 1;
        self.cached_bytes += bytes;
        Entry {
            offset: message.queue_offset(),
            message,
            bytes,
            state: State::Ready,
        }
    }

    fn find(&mut self, offset: i64) -> Option<&mut Entry> {
        // Offsets are usually consecutive (a tag filter leaves gaps): try the entry as far from
        // the front as the offset is, and search only when it is not there.
        let front = self.entries.front()?.offset;
        let guess = usize::try_from(offset - front).ok()?;
        let index = if self.entries.get(guess).is_some_and(|e| e.offset == offset) {
            guess
        } else {
            self.entries
                .binary_search_by_key(&offset, |e| e.offset)
                .ok()?
        };
        self.entries.get_mut(index)
    }

    fn leave(&mut self, state: State) {
        match state {
            State::Ready => self.ready -= 1,
            State::InFlight => self.in_flight -= 1,
            State::Waiting(_) => self.waiting -= 1,
            State::SendingBack => self.sending -= 1,
            State::Acked => {}
        }
    }
}
