//! The queue table: every queue the consumer owns, by key and by name, the set of queues with
//! messages ready, and the cache totals over all of them.
//!
//! The totals and the ready set are kept true by the table itself: a queue's cache
//! ([`ProcessQueue`]) can only be changed through [`QueueTable::change_cache`], which
//! accounts for the change, and [`QueueTable::remove`] takes a queue's share away. Nobody
//! outside this module adds or subtracts a count.

use std::collections::BTreeMap;
use std::time::Instant;

use proto::MessageQueue;

use super::pull_template::PullTemplate;
use crate::id::{Epoch, QueueKey};
use crate::messages::Messages;
use crate::output::RequestId;
use crate::queue::ProcessQueue;

/// One owned queue.
#[derive(Debug)]
pub(crate) struct QueueState {
    pub(crate) mq: MessageQueue,
    pub(crate) key: QueueKey,
    pub(crate) epoch: Epoch,
    pub(crate) phase: Phase,
    /// Private: changed only through [`QueueTable::change_cache`], which keeps the totals.
    pq: ProcessQueue,
    pub(crate) next_offset: i64,
    pub(crate) pull_broker_id: i64,
    pub(crate) max_offset: i64,
    pub(crate) persisted: Option<i64>,
    /// A commit of this queue's life went to the broker: the periodic persist repeats it even
    /// unchanged (see `persist_offsets`); a queue that never moved commits nothing.
    pub(crate) committed_once: bool,
    /// A confirmed commit of this queue's life is in flight or held behind another to its
    /// broker: the next waits for its answer (see `commit_moved`).
    pub(crate) committing: bool,
    /// Orderly: the broker lock counts as held until then.
    pub(crate) lease: Option<Instant>,
    /// Poll mode without auto-commit: the position the application last committed.
    pub(crate) manual_commit: Option<i64>,
    /// When the last pull answer arrived (for stats).
    pub(crate) last_pull: Option<Instant>,
    /// Revoking with `revoke_hook`: the application's answer the final commit waits for.
    pub(crate) revoke_hook: Option<RequestId>,
    /// While a record does not decode: its offset (the queue's next) and the decoder's error.
    /// The queue cannot move on past it; reported once per offset, not at every re-pull.
    pub(crate) stuck: Option<(i64, String)>,
    /// Its pull request's header, built at its first pull.
    pub(crate) pull_template: Option<PullTemplate>,
}

impl QueueState {
    /// The queue's message cache (read only; see [`QueueTable::change_cache`]).
    pub(crate) fn pq(&self) -> &ProcessQueue {
        &self.pq
    }

    /// The offset a commit stores now: everything below it was consumed (or, with manual
    /// commits in poll mode, what the application committed).
    pub(crate) fn commit_point(&self) -> i64 {
        self.manual_commit.unwrap_or_else(|| self.pq.committable())
    }

    pub(crate) fn lease_valid(&self, now: Instant) -> bool {
        self.lease.is_some_and(|until| now < until)
    }

    /// The queue's position is at `offset` from now on: a fresh cache starting there, and the
    /// position the broker holds for the group.
    fn restart_at(&mut self, offset: i64) {
        self.pq = ProcessQueue::new(offset);
        self.next_offset = offset;
        self.persisted = Some(offset);
        if self.manual_commit.is_some() {
            self.manual_commit = Some(offset);
        }
    }
}

/// Where a queue's life stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Orderly: waiting for the broker's lock before anything else.
    Lock,
    /// The start offset must be asked for (when its timer fires).
    Resolve,
    /// A start-offset request is in flight.
    Resolving,
    /// The next pull waits for its timer.
    Idle,
    /// A pull is in flight.
    Pulling,
    /// Revoked: waiting for in-flight deliveries before committing and dropping.
    Revoking,
}

/// How a new queue life starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start {
    /// The phase it starts in.
    pub(crate) phase: Phase,
    /// The offset it starts at, when known (the broker holds it for the group).
    pub(crate) offset: Option<i64>,
    /// Orderly: a lease carried over from the queue's previous life.
    pub(crate) lease: Option<Instant>,
    /// Poll mode without auto-commit: commits are the application's.
    pub(crate) manual_commit: bool,
}

/// Every owned queue, with the ready set and the cache totals (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct QueueTable {
    by_key: Owned,
    by_queue: BTreeMap<MessageQueue, QueueKey>,
    /// Keys of queues that may have messages ready to deliver (a superset: a queue found with
    /// nothing ready when its turn comes is dropped from it then).
    ready: Turns,
    /// The queue served last: turns go round in key order from there.
    last_served: QueueKey,
    cached_messages: usize,
    cached_bytes: u64,
    next_key: u64,
    next_epoch: u64,
}

impl QueueTable {
    /// Starts a new life for `mq` under a fresh key and epoch.
    pub(crate) fn insert(&mut self, mq: MessageQueue, start: Start) -> (QueueKey, Epoch) {
        self.next_key += 1;
        let key = QueueKey(self.next_key);
        let epoch = self.new_epoch();
        let offset = start.offset.unwrap_or(0);
        self.by_queue.insert(mq.clone(), key);
        self.by_key.insert(QueueState {
            mq,
            key,
            epoch,
            phase: start.phase,
            pq: ProcessQueue::new(offset),
            next_offset: offset,
            pull_broker_id: 0,
            max_offset: 0,
            persisted: start.offset,
            committed_once: false,
            committing: false,
            lease: start.lease,
            manual_commit: start.manual_commit.then_some(offset),
            last_pull: None,
            revoke_hook: None,
            stuck: None,
            pull_template: None,
        });
        (key, epoch)
    }

    /// A fresh epoch, for a queue whose position restarts.
    pub(crate) fn new_epoch(&mut self) -> Epoch {
        self.next_epoch += 1;
        Epoch(self.next_epoch)
    }

    /// Forgets queue `key` and its share of the totals.
    pub(crate) fn remove(&mut self, key: QueueKey) -> Option<QueueState> {
        let state = self.by_key.remove(key)?;
        self.by_queue.remove(&state.mq);
        self.ready.remove(&key);
        self.cached_messages -= state.pq.len();
        self.cached_bytes -= state.pq.bytes();
        Some(state)
    }

    pub(crate) fn get(&self, key: QueueKey) -> Option<&QueueState> {
        self.by_key.get(key)
    }

    /// The queue's fields other than its cache (see [`QueueTable::change_cache`]).
    pub(crate) fn get_mut(&mut self, key: QueueKey) -> Option<&mut QueueState> {
        self.by_key.get_mut(key)
    }

    /// Queue `key` if it is still in life `epoch`.
    pub(crate) fn live(&self, key: QueueKey, epoch: Epoch) -> Option<&QueueState> {
        self.by_key.get(key).filter(|s| s.epoch == epoch)
    }

    /// Queue `key` if it is still in life `epoch`, for its fields other than the cache.
    pub(crate) fn live_mut(&mut self, key: QueueKey, epoch: Epoch) -> Option<&mut QueueState> {
        self.by_key.get_mut(key).filter(|s| s.epoch == epoch)
    }

    /// The key `mq` is owned under.
    pub(crate) fn key_of(&self, mq: &MessageQueue) -> Option<QueueKey> {
        self.by_queue.get(mq).copied()
    }

    /// The owned queue named `mq`.
    pub(crate) fn by_queue(&self, mq: &MessageQueue) -> Option<&QueueState> {
        self.key_of(mq).and_then(|key| self.by_key.get(key))
    }

    /// Every owned queue, by key.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &QueueState> + '_ {
        self.by_key.values()
    }

    /// Every owned queue, for their fields other than the cache.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut QueueState> + '_ {
        self.by_key.values_mut()
    }

    /// Every owned queue in Java's order of queue names.
    pub(crate) fn in_name_order(&self) -> impl Iterator<Item = &QueueState> + '_ {
        self.by_queue
            .values()
            .filter_map(|&key| self.by_key.get(key))
    }

    /// The keys of every owned queue.
    pub(crate) fn keys(&self) -> Vec<QueueKey> {
        self.by_key.keys().to_vec()
    }

    /// Messages and body bytes cached across all queues.
    pub(crate) fn cached(&self) -> (usize, u64) {
        (self.cached_messages, self.cached_bytes)
    }

    /// Changes queue `key`'s cache with `f`, then brings the totals up to date and puts the
    /// queue in the turns, or takes it out, by whether it has messages ready. `None` when there
    /// is no such queue.
    pub(crate) fn change_cache<R>(
        &mut self,
        key: QueueKey,
        f: impl FnOnce(&mut ProcessQueue) -> R,
    ) -> Option<R> {
        self.change_cache_if(key, |_| true, f)
            .map(|(result, _)| result)
    }

    /// As [`QueueTable::change_cache`], for queue `key` only while it is in life `epoch`;
    /// returns the queue's phase with `f`'s result. One lookup, as this runs for every
    /// completion.
    pub(crate) fn change_live_cache<R>(
        &mut self,
        key: QueueKey,
        epoch: Epoch,
        f: impl FnOnce(&mut ProcessQueue) -> R,
    ) -> Option<(R, Phase)> {
        self.change_cache_if(key, |state| state.epoch == epoch, f)
    }

    /// Changes queue `key`'s cache with `f` when `wanted` says so of the queue, and keeps the
    /// totals and the turns (see [`QueueTable::change_cache`]); returns `f`'s result and the
    /// queue's phase.
    #[inline]
    fn change_cache_if<R>(
        &mut self,
        key: QueueKey,
        wanted: impl FnOnce(&QueueState) -> bool,
        f: impl FnOnce(&mut ProcessQueue) -> R,
    ) -> Option<(R, Phase)> {
        let state = self.by_key.get_mut(key).filter(|s| wanted(s))?;
        let phase = state.phase;
        let (messages, bytes) = (state.pq.len(), state.pq.bytes());
        let result = f(&mut state.pq);
        self.cached_messages = self.cached_messages + state.pq.len() - messages;
        self.cached_bytes = self.cached_bytes + state.pq.bytes() - bytes;
        if state.pq.has_ready() {
            self.ready.insert(key);
        } else {
            self.ready.remove(&key);
        }
        Some((result, phase))
    }

    /// Restarts queue `key`'s position at `offset` (see [`QueueState::restart_at`]).
    pub(crate) fn restart_at(&mut self, key: QueueKey, offset: i64) {
        if let Some(state) = self.by_key.get(key) {
            self.cached_messages -= state.pq.len();
            self.cached_bytes -= state.pq.bytes();
        }
        if let Some(state) = self.by_key.get_mut(key) {
            state.restart_at(offset);
        }
    }

    /// Releases every queue's messages whose redelivery time has come; returns the earliest
    /// still waiting.
    pub(crate) fn release_due(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        for key in self.keys() {
            if let Some(Some(at)) = self.change_cache(key, |pq| pq.release_due(now)) {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next
    }

    /// The next queue's turn: the first ready queue after the one served last, wrapping
    /// around. Push deliveries and poll-mode takes share these turns. The caller calls
    /// [`QueueTable::not_ready`] for a queue it finds nothing to take from.
    pub(crate) fn next_turn(&mut self) -> Option<QueueKey> {
        let key = self.ready.next_after(self.last_served)?;
        self.last_served = key;
        Some(key)
    }

    /// Queue `key`'s turn: when `servable` says it may be served now, up to `max` of its ready
    /// messages are marked in flight and returned with the queue and its epoch (none when
    /// nothing is ready); otherwise the queue leaves the turns. One lookup, as this runs for
    /// every delivery. Taking leaves the totals as they are: taken messages stay cached until
    /// acknowledged.
    pub(crate) fn take_turn(
        &mut self,
        key: QueueKey,
        max: usize,
        servable: impl FnOnce(&QueueState) -> bool,
    ) -> Option<(MessageQueue, Epoch, Messages)> {
        let Some(state) = self.by_key.get_mut(key) else {
            self.ready.remove(&key);
            return None;
        };
        if !servable(state) {
            self.ready.remove(&key);
            return None;
        }
        let messages = state.pq.take_ready(max);
        if !state.pq.has_ready() {
            self.ready.remove(&key);
        }
        Some((state.mq.clone(), state.epoch, messages))
    }

    /// Marks queue `key` ready (it has messages to deliver again).
    pub(crate) fn mark_ready(&mut self, key: QueueKey) {
        if self.by_key.get(key).is_some() {
            self.ready.insert(key);
        }
    }

    /// Queue `key` has nothing to take now (or may not be served): out of the turns until
    /// its cache changes or it is marked ready.
    pub(crate) fn not_ready(&mut self, key: QueueKey) {
        self.ready.remove(&key);
    }
}

/// The owned queues in key order. Keys are handed out in increasing order, so a new queue goes
/// at the end; a queue is looked up twice a delivery (its turn, its completion), by a binary
/// search over the keys alone, which for a few dozen queues sit in one or two cache lines,
/// rather than down a tree.
///
/// A completion most often follows its queue's turn at once (a handler that finishes as it is
/// handed its messages), so the index last changed is tried before the search.
#[derive(Debug, Default)]
struct Owned {
    /// Sorted, and `states[i].key == keys[i]`.
    keys: Vec<QueueKey>,
    states: Vec<QueueState>,
    /// Where the queue last changed was: a guess, checked before it is used.
    last: usize,
}

impl Owned {
    fn insert(&mut self, state: QueueState) {
        match self.keys.binary_search(&state.key) {
            // Keys are not reused; were one to be, its new life replaces the old.
            Ok(at) => {
                if let Some(slot) = self.states.get_mut(at) {
                    *slot = state;
                }
            }
            Err(at) => {
                self.keys.insert(at, state.key);
                self.states.insert(at, state);
            }
        }
    }

    fn remove(&mut self, key: QueueKey) -> Option<QueueState> {
        let at = self.find(key)?;
        self.keys.remove(at);
        Some(self.states.remove(at))
    }

    #[inline]
    fn find(&self, key: QueueKey) -> Option<usize> {
        if self.keys.get(self.last) == Some(&key) {
            return Some(self.last);
        }
        self.keys.binary_search(&key).ok()
    }

    #[inline]
    fn get(&self, key: QueueKey) -> Option<&QueueState> {
        self.states.get(self.find(key)?)
    }

    #[inline]
    fn get_mut(&mut self, key: QueueKey) -> Option<&mut QueueState> {
        let at = self.find(key)?;
        self.last = at;
        self.states.get_mut(at)
    }

    fn keys(&self) -> &[QueueKey] {
        &self.keys
    }

    fn values(&self) -> std::slice::Iter<'_, QueueState> {
        self.states.iter()
    }

    fn values_mut(&mut self) -> std::slice::IterMut<'_, QueueState> {
        self.states.iter_mut()
    }
}

/// The keys of the queues in the turns, in key order: a few dozen at most, looked at three
/// times a delivery (a completion puts its queue back, a turn finds and may drop it), so a
/// sorted vector, searched in place, rather than a tree.
#[derive(Debug, Default)]
struct Turns(Vec<QueueKey>);

impl Turns {
    fn insert(&mut self, key: QueueKey) {
        if let Err(at) = self.0.binary_search(&key) {
            self.0.insert(at, key);
        }
    }

    fn remove(&mut self, key: &QueueKey) {
        if let Ok(at) = self.0.binary_search(key) {
            self.0.remove(at);
        }
    }

    /// The first key after `last`, wrapping around to the first of all.
    fn next_after(&self, last: QueueKey) -> Option<QueueKey> {
        let after = self.0.partition_point(|&key| key <= last);
        self.0.get(after).or_else(|| self.0.first()).copied()
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use proto::message::{DecodeOptions, Message, StoredMessage, decode_messages, encode_stored};

    use super::*;

    /// `count` messages from `first` on, each with a body of `size` bytes.
    fn messages(first: i64, count: i64, size: usize) -> Vec<Message> {
        let mut buf = BytesMut::new();
        for offset in first..first + count {
            let stored = StoredMessage {
                queue_offset: offset,
                body: vec![0u8; size].into(),
                topic: "T".into(),
                ..StoredMessage::default()
            };
            encode_stored(&stored, &mut buf).expect("a valid record");
        }
        decode_messages(&buf.freeze(), &DecodeOptions::default()).messages
    }

    fn start() -> Start {
        Start {
            phase: Phase::Idle,
            offset: Some(0),
            lease: None,
            manual_commit: false,
        }
    }

    #[test]
    fn totals_follow_every_change_and_removal() {
        let mut table = QueueTable::default();
        let (a, _) = table.insert(MessageQueue::new("T", "b", 0), start());
        let (b, _) = table.insert(MessageQueue::new("T", "b", 1), start());
        assert_eq!(table.cached(), (0, 0));
        table.change_cache(a, |pq| pq.put(messages(0, 3, 10)));
        table.change_cache(b, |pq| pq.put(messages(0, 2, 10)));
        assert_eq!(table.cached(), (5, 50));
        table.change_cache(a, |pq| {
            let taken = pq.take_ready(2);
            let offsets: Vec<i64> = taken.iter().map(|m| m.queue_offset()).collect();
            pq.ack(&offsets);
        });
        assert_eq!(table.cached(), (3, 30));
        table.restart_at(b, 7);
        assert_eq!(table.cached(), (1, 10));
        table.remove(a);
        assert_eq!(table.cached(), (0, 0));
        assert!(table.key_of(&MessageQueue::new("T", "b", 0)).is_none());
    }

    #[test]
    fn queues_stay_found_by_key_after_one_in_the_middle_leaves() {
        let mut table = QueueTable::default();
        let keys: Vec<QueueKey> = (0..5)
            .map(|id| table.insert(MessageQueue::new("T", "b", id), start()).0)
            .collect();
        assert!(table.remove(keys[2]).is_some());
        assert!(table.get(keys[2]).is_none(), "gone");
        assert!(table.remove(keys[2]).is_none(), "removed once");
        for (id, &key) in keys.iter().enumerate().filter(|&(id, _)| id != 2) {
            let state = table.get(key).expect("still owned");
            assert_eq!(state.mq, MessageQueue::new("T", "b", id as i32));
        }
        let (late, _) = table.insert(MessageQueue::new("T", "b", 2), start());
        assert!(late > keys[4], "a new life gets a new, larger key");
        assert_eq!(table.keys(), vec![keys[0], keys[1], keys[3], keys[4], late]);
        let ids: Vec<i32> = table.iter().map(|s| s.mq.queue_id()).collect();
        assert_eq!(ids, vec![0, 1, 3, 4, 2], "in key order");
    }

    #[test]
    fn turns_go_round_the_ready_queues() {
        let mut table = QueueTable::default();
        let keys: Vec<QueueKey> = (0..3)
            .map(|id| table.insert(MessageQueue::new("T", "b", id), start()).0)
            .collect();
        for &key in &keys {
            table.change_cache(key, |pq| pq.put(messages(0, 1, 1)));
        }
        let turns: Vec<QueueKey> = (0..4).filter_map(|_| table.next_turn()).collect();
        assert_eq!(turns, vec![keys[0], keys[1], keys[2], keys[0]]);
        table.not_ready(keys[1]);
        let turns: Vec<QueueKey> = (0..2).filter_map(|_| table.next_turn()).collect();
        assert_eq!(turns, vec![keys[2], keys[0]]);
    }
}
