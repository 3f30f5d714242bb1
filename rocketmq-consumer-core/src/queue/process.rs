//! The cache of one queue's pulled-but-unacknowledged messages (Java's `ProcessQueue`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use proto::message::Message;

/// Pulled messages of one queue, keyed by queue offset, and what has been acknowledged.
///
/// The committable offset is the lowest offset still cached (an unacknowledged message), or one
/// past the highest offset ever cached when the cache is empty, or the start offset before
/// anything arrived: committing it never skips a message that was not consumed.
#[derive(Debug)]
pub struct ProcessQueue {
    cached: BTreeMap<i64, Entry>,
    /// Offsets ready to deliver (not in flight, not waiting to be redelivered).
    ready: BTreeSet<i64>,
    /// Offsets waiting for a redelivery time.
    waiting: BTreeMap<i64, Instant>,
    cached_bytes: u64,
    /// One past the highest offset ever cached, or the start offset.
    high_water: i64,
}

#[derive(Debug)]
struct Entry {
    message: Message,
    bytes: u64,
    in_flight: bool,
}

impl ProcessQueue {
    /// An empty cache for a queue whose consumption starts at `start_offset`.
    pub fn new(start_offset: i64) -> Self {
        Self {
            cached: BTreeMap::new(),
            ready: BTreeSet::new(),
            waiting: BTreeMap::new(),
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
            let bytes = message.body().len() as u64;
            self.cached.insert(
                offset,
                Entry {
                    message,
                    bytes,
                    in_flight: false,
                },
            );
            self.ready.insert(offset);
            self.cached_bytes += bytes;
            self.high_water = self.high_water.max(offset + 1);
            added += 1;
        }
        added
    }

    /// Marks up to `max` ready messages in flight and returns them, lowest offset first.
    pub fn take_ready(&mut self, max: usize) -> Vec<Message> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(offset) = self.ready.pop_first() else {
                break;
            };
            if let Some(entry) = self.cached.get_mut(&offset) {
                entry.in_flight = true;
                out.push(entry.message.clone());
            }
        }
        out
    }

    /// Acknowledges consumed messages: they leave the cache.
    pub fn ack(&mut self, offsets: &[i64]) {
        for offset in offsets {
            if let Some(entry) = self.cached.remove(offset) {
                self.cached_bytes -= entry.bytes;
            }
            self.ready.remove(offset);
            self.waiting.remove(offset);
        }
    }

    /// Puts in-flight messages back to be delivered again at `at`; they stay cached, so the
    /// committable offset cannot pass them.
    pub fn retry_at(&mut self, offsets: &[i64], at: Instant) {
        for offset in offsets {
            if let Some(entry) = self.cached.get_mut(offset) {
                entry.in_flight = false;
                self.waiting.insert(*offset, at);
            }
        }
    }

    /// Moves messages whose redelivery time has come back to ready; returns the earliest
    /// redelivery time still pending.
    pub fn release_due(&mut self, now: Instant) -> Option<Instant> {
        let due: Vec<i64> = self
            .waiting
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(o, _)| *o)
            .collect();
        for offset in due {
            self.waiting.remove(&offset);
            self.ready.insert(offset);
        }
        self.waiting.values().min().copied()
    }

    /// Returns in-flight messages to ready (their delivery was abandoned).
    pub fn requeue_in_flight(&mut self) {
        for (offset, entry) in &mut self.cached {
            if entry.in_flight {
                entry.in_flight = false;
                self.ready.insert(*offset);
            }
        }
    }

    /// The offset to commit: nothing below it is unacknowledged.
    pub fn committable(&self) -> i64 {
        self.cached
            .first_key_value()
            .map_or(self.high_water, |(&offset, _)| offset)
    }

    /// Moves the start point when nothing is cached (a pull found nothing, or the broker
    /// corrected the offset); ignored while messages are cached.
    pub fn advance_empty(&mut self, offset: i64) {
        if self.cached.is_empty() {
            self.high_water = self.high_water.max(offset);
        }
    }

    /// Cached messages.
    pub fn len(&self) -> usize {
        self.cached.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.cached.is_empty()
    }

    /// Cached body bytes.
    pub fn bytes(&self) -> u64 {
        self.cached_bytes
    }

    /// Highest minus lowest cached offset (Java's `getMaxSpan`).
    pub fn span(&self) -> i64 {
        match (self.cached.first_key_value(), self.cached.last_key_value()) {
            (Some((&first, _)), Some((&last, _))) => last - first,
            _ => 0,
        }
    }

    /// Messages handed out and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.cached.values().filter(|e| e.in_flight).count()
    }

    /// Whether some message is ready to deliver.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }
}
