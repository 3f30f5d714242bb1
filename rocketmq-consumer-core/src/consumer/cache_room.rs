//! Queues waiting for room in the consumer-wide cache: their pull was held back because the
//! messages (or bytes) cached across all queues were over `max_cached_messages_total` (or
//! `max_cached_bytes_total`).
//!
//! A queue over a limit of its own waits `flow_control_backoff` (50 ms) before it asks again,
//! as Java's `PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL`: its own messages keep the consumer busy
//! meanwhile. The consumer-wide limit (Java has none) holds every queue back at once, and a
//! consumer drains a full cache of 10 000 messages in a few milliseconds: waiting out the
//! backoff left it idle most of the time (64 queues, pulls of 32, quick handlers: 0.3 M msg/s
//! where the broker served 3.9 M). So such a queue is also pulled again as soon as the cache
//! has room for its pull, oldest first; the backoff timer stays as it was, as a fallback, and
//! finds the queue pulling already.

use std::collections::VecDeque;

use crate::id::{Epoch, QueueKey};

/// The queue lives waiting for room, oldest first, each at most once.
#[derive(Debug, Default)]
pub(super) struct CacheRoom {
    waiting: VecDeque<(QueueKey, Epoch)>,
}

impl CacheRoom {
    /// Queue life `(key, epoch)` waits for room.
    pub(super) fn wait(&mut self, key: QueueKey, epoch: Epoch) {
        if !self.waiting.contains(&(key, epoch)) {
            self.waiting.push_back((key, epoch));
        }
    }

    /// Whether no queue waits.
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Up to `room` waiting queue lives, oldest first, taken out of the wait (their pull asks
    /// again, and a queue still held back waits anew).
    pub(super) fn take(&mut self, room: usize) -> Vec<(QueueKey, Epoch)> {
        let n = room.min(self.waiting.len());
        self.waiting.drain(..n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_first_each_once() {
        let mut room = CacheRoom::default();
        let (a, b) = ((QueueKey(1), Epoch(1)), (QueueKey(2), Epoch(2)));
        room.wait(a.0, a.1);
        room.wait(b.0, b.1);
        room.wait(a.0, a.1);
        assert_eq!(room.take(1), [a]);
        assert_eq!(room.take(5), [b]);
        assert!(room.is_empty());
    }
}
