//! [`Store`]: one broker's topics, consume queues, commit log and delayed messages.
//!
//! Only what a consumer can observe is modelled: queue offsets from 0 with a movable minimum
//! (expired files), a commit-log offset per record that grows by the record's length (a real
//! broker's physical offsets), and delay levels as "visible at time T" (the message gets its
//! queue offset when it becomes due, as `ScheduleMessageService` writes it then).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Instant;

use proto::message::MessageEncodeError;

use super::message::{Draft, Placement, StoredMessageInfo};

/// A topic's configuration on one broker (`TopicConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopicConfig {
    pub(crate) read_queue_nums: i32,
    pub(crate) write_queue_nums: i32,
    pub(crate) perm: i32,
}

impl TopicConfig {
    /// Read-write with `queues` queues (perm 6, the default).
    pub(crate) fn read_write(queues: i32) -> Self {
        Self {
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: proto::body::PERM_READ | proto::body::PERM_WRITE,
        }
    }
}

/// One consume queue: the messages by offset, the ones below `min_offset` expired.
#[derive(Debug, Default)]
pub(crate) struct ConsumeQueue {
    min_offset: i64,
    entries: Vec<StoredMessageInfo>,
}

impl ConsumeQueue {
    pub(crate) fn min_offset(&self) -> i64 {
        self.min_offset
    }

    /// The next offset to be written.
    pub(crate) fn max_offset(&self) -> i64 {
        i64::try_from(self.entries.len()).unwrap_or(i64::MAX)
    }

    /// The live message at `offset` (none below the minimum or at/after the maximum).
    pub(crate) fn get(&self, offset: i64) -> Option<&StoredMessageInfo> {
        if offset < self.min_offset {
            return None;
        }
        self.entries.get(usize::try_from(offset).ok()?)
    }

    /// Every message ever stored, expired ones included.
    pub(crate) fn all(&self) -> &[StoredMessageInfo] {
        &self.entries
    }
}

/// One broker's storage.
#[derive(Debug)]
pub(crate) struct Store {
    topics: BTreeMap<String, TopicConfig>,
    queues: BTreeMap<(String, i32), ConsumeQueue>,
    /// Commit-log offset -> (topic, queue id, queue offset).
    commit_log: BTreeMap<i64, (String, i32, i64)>,
    next_commit_log_offset: i64,
    /// `(due, sequence)` -> message.
    scheduled: BTreeMap<(Instant, u64), Draft>,
    /// The next offset of each `SCHEDULE_TOPIC_XXXX` queue (queue id = level - 1).
    schedule_queue_offsets: BTreeMap<i32, i64>,
    next_sequence: u64,
    store_host: SocketAddr,
}

impl Store {
    pub(crate) fn new(store_host: SocketAddr) -> Self {
        Self {
            topics: BTreeMap::new(),
            queues: BTreeMap::new(),
            commit_log: BTreeMap::new(),
            next_commit_log_offset: 0,
            scheduled: BTreeMap::new(),
            schedule_queue_offsets: BTreeMap::new(),
            next_sequence: 0,
            store_host,
        }
    }

    pub(crate) fn store_host(&self) -> SocketAddr {
        self.store_host
    }

    pub(crate) fn topic(&self, topic: &str) -> Option<&TopicConfig> {
        self.topics.get(topic)
    }

    pub(crate) fn topics(&self) -> impl Iterator<Item = (&String, &TopicConfig)> + '_ {
        self.topics.iter()
    }

    /// Creates or replaces a topic's configuration.
    pub(crate) fn put_topic(&mut self, topic: &str, config: TopicConfig) {
        self.topics.insert(topic.to_owned(), config);
    }

    /// Creates a topic unless it exists (`createTopicInSendMessageBackMethod`).
    pub(crate) fn ensure_topic(&mut self, topic: &str, queues: i32) {
        self.topics
            .entry(topic.to_owned())
            .or_insert_with(|| TopicConfig::read_write(queues));
    }

    pub(crate) fn queue(&self, topic: &str, queue_id: i32) -> Option<&ConsumeQueue> {
        self.queues.get(&(topic.to_owned(), queue_id))
    }

    /// `(min, max)` offsets of a queue; `(0, 0)` for a queue never written.
    pub(crate) fn bounds(&self, topic: &str, queue_id: i32) -> (i64, i64) {
        self.queue(topic, queue_id)
            .map_or((0, 0), |q| (q.min_offset(), q.max_offset()))
    }

    /// Appends `draft` to its queue at `now`: returns the stored message.
    pub(crate) fn append(
        &mut self,
        draft: Draft,
        now: Instant,
        now_millis: i64,
    ) -> Result<&StoredMessageInfo, MessageEncodeError> {
        let key = (draft.topic.clone(), draft.queue_id);
        let queue = self.queues.entry(key.clone()).or_default();
        let placement = Placement {
            queue_offset: queue.max_offset(),
            commit_log_offset: self.next_commit_log_offset,
            store_timestamp: now_millis,
            stored_at: now,
            store_host: self.store_host,
        };
        let stored = draft.store(&placement)?;
        let len = i64::try_from(stored.record().len()).unwrap_or(i64::MAX);
        self.next_commit_log_offset = self.next_commit_log_offset.saturating_add(len);
        self.commit_log.insert(
            placement.commit_log_offset,
            (key.0, key.1, placement.queue_offset),
        );
        queue.entries.push(stored);
        Ok(queue
            .entries
            .last()
            .expect("the message was pushed just above"))
    }

    /// The end of the commit log (`CommitLog.getMaxOffset`): where the next record goes.
    pub(crate) fn commit_log_end(&self) -> i64 {
        self.next_commit_log_offset
    }

    /// The records from commit-log offset `from` on, in commit-log order, expired ones
    /// included: what a slave copies (`HAService` streams the commit log as written).
    pub(crate) fn records_from(&self, from: i64) -> impl Iterator<Item = &StoredMessageInfo> + '_ {
        self.commit_log
            .range(from..)
            .filter_map(|(_, (topic, queue_id, queue_offset))| {
                let queue = self.queues.get(&(topic.clone(), *queue_id))?;
                queue.entries.get(usize::try_from(*queue_offset).ok()?)
            })
    }

    /// Appends a copy of a master's record at the master's place (a slave's
    /// `ReputMessageService` building its consume queues from the copied commit log): same
    /// queue offset, commit-log offset and bytes. Records come in the master's commit-log
    /// order, so each lands at its queue's end.
    ///
    /// # Panics
    ///
    /// When the record is not the next of its queue: copies came out of order, a simulator
    /// bug.
    pub(crate) fn append_copy(&mut self, record: &StoredMessageInfo) {
        let key = (record.topic.clone(), record.queue_id);
        let queue = self.queues.entry(key.clone()).or_default();
        assert_eq!(
            queue.max_offset(),
            record.queue_offset,
            "a copied record lands at its queue's end"
        );
        queue.entries.push(record.clone());
        let len = i64::try_from(record.record().len()).unwrap_or(i64::MAX);
        self.next_commit_log_offset = self
            .next_commit_log_offset
            .max(record.commit_log_offset.saturating_add(len));
        self.commit_log.insert(
            record.commit_log_offset,
            (key.0, key.1, record.queue_offset),
        );
    }

    /// Takes `master`'s topic table as it is (`SlaveSynchronize.syncTopicConfig`: cleared and
    /// refilled when the master's data version differs).
    pub(crate) fn sync_topics(&mut self, master: &Self) {
        if self.topics != master.topics {
            self.topics.clone_from(&master.topics);
        }
    }

    /// Parks `draft` in `SCHEDULE_TOPIC_XXXX` level `level` until `due`. Returns the schedule
    /// queue offset and the commit-log offset of the parked copy, which a send answers with.
    pub(crate) fn schedule(&mut self, draft: Draft, level: i32, due: Instant) -> (i64, i64) {
        let commit_log_offset = self.next_commit_log_offset;
        let len = i64::try_from(draft.encoded_len()).unwrap_or(i64::MAX);
        self.next_commit_log_offset = self.next_commit_log_offset.saturating_add(len);
        let queue_offset = self.schedule_queue_offsets.entry(level - 1).or_insert(0);
        let offset = *queue_offset;
        *queue_offset += 1;
        self.scheduled.insert((due, self.next_sequence), draft);
        self.next_sequence += 1;
        (offset, commit_log_offset)
    }

    /// When the next delayed message is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.scheduled.keys().next().map(|(due, _)| *due)
    }

    /// The oldest delayed message due at `now`, taken out of the schedule.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Draft> {
        let (&(due, sequence), _) = self.scheduled.iter().next()?;
        if due > now {
            return None;
        }
        self.scheduled.remove(&(due, sequence))
    }

    /// Delayed messages not yet due.
    pub(crate) fn scheduled_len(&self) -> usize {
        self.scheduled.len()
    }

    /// The live message at commit-log offset `offset` (`lookMessageByOffset`).
    pub(crate) fn lookup(&self, offset: i64) -> Option<&StoredMessageInfo> {
        let (topic, queue_id, queue_offset) = self.commit_log.get(&offset)?;
        self.queue(topic, *queue_id)?.get(*queue_offset)
    }

    /// Expires every message of the queue below `min_offset` (clamped to the queue's end).
    pub(crate) fn truncate(&mut self, topic: &str, queue_id: i32, min_offset: i64) {
        let queue = self.queues.entry((topic.to_owned(), queue_id)).or_default();
        let max = queue.max_offset();
        queue.min_offset = queue.min_offset.max(min_offset.min(max));
    }

    /// `ConsumeQueue.getOffsetInQueueByTime`, simplified: the first live offset whose store
    /// timestamp is at least `timestamp` (lower boundary), or the last one at most
    /// `timestamp` (upper boundary); the maximum offset when no message is that late, the
    /// minimum when none is that early.
    pub(crate) fn search(&self, topic: &str, queue_id: i32, timestamp: i64, upper: bool) -> i64 {
        let Some(queue) = self.queue(topic, queue_id) else {
            return 0;
        };
        let (min, max) = (queue.min_offset(), queue.max_offset());
        let live = usize::try_from(min)
            .ok()
            .and_then(|start| queue.entries.get(start..))
            .unwrap_or_default();
        if upper {
            let after = live.partition_point(|m| m.store_timestamp <= timestamp);
            if after == 0 {
                return min;
            }
            min + i64::try_from(after).unwrap_or(i64::MAX) - 1
        } else {
            let first = live.partition_point(|m| m.store_timestamp < timestamp);
            if first == live.len() {
                return max;
            }
            min + i64::try_from(first).unwrap_or(i64::MAX)
        }
    }
}
