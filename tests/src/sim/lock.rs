//! [`LockTable`]: one broker's queue locks for orderly consumption (Java
//! `RebalanceLockManager`).
//!
//! Per (group, queue) one owner client id and the time it last locked. A lock is granted when
//! the queue is free, already the caller's (the time is refreshed), or expired (older than the
//! lifetime, 60 s by default). Unlocking removes only the caller's entries, expired or not.
//! Locks outlive connections: a crashed client's locks free up only by expiry.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proto::MessageQueue;

#[derive(Clone, Debug)]
struct LockEntry {
    client_id: String,
    last_update: Instant,
}

impl LockEntry {
    /// `LockEntry.isExpired`: `now - lastUpdateTimestamp > lifetime`.
    fn is_expired(&self, now: Instant, lifetime: Duration) -> bool {
        now.saturating_duration_since(self.last_update) > lifetime
    }
}

/// The lock table of one broker.
#[derive(Clone, Debug, Default)]
pub(crate) struct LockTable {
    locks: BTreeMap<(String, MessageQueue), LockEntry>,
}

impl LockTable {
    /// `RebalanceLockManager.tryLockBatch`: the queues now held by `client_id`.
    pub(crate) fn try_lock_batch(
        &mut self,
        group: &str,
        client_id: &str,
        queues: &BTreeSet<MessageQueue>,
        now: Instant,
        lifetime: Duration,
    ) -> BTreeSet<MessageQueue> {
        let mut granted = BTreeSet::new();
        for mq in queues {
            let key = (group.to_owned(), mq.clone());
            let grant = match self.locks.get(&key) {
                None => true,
                Some(entry) => entry.client_id == client_id || entry.is_expired(now, lifetime),
            };
            if grant {
                self.locks.insert(
                    key,
                    LockEntry {
                        client_id: client_id.to_owned(),
                        last_update: now,
                    },
                );
                granted.insert(mq.clone());
            }
        }
        granted
    }

    /// `RebalanceLockManager.unlockBatch`: removes the queues' locks held by `client_id`.
    pub(crate) fn unlock_batch(
        &mut self,
        group: &str,
        client_id: &str,
        queues: &BTreeSet<MessageQueue>,
    ) {
        for mq in queues {
            let key = (group.to_owned(), mq.clone());
            if self
                .locks
                .get(&key)
                .is_some_and(|entry| entry.client_id == client_id)
            {
                self.locks.remove(&key);
            }
        }
    }

    /// The unexpired owner of `mq` for `group` at `now`.
    pub(crate) fn owner(
        &self,
        group: &str,
        mq: &MessageQueue,
        now: Instant,
        lifetime: Duration,
    ) -> Option<&str> {
        self.locks
            .get(&(group.to_owned(), mq.clone()))
            .filter(|entry| !entry.is_expired(now, lifetime))
            .map(|entry| entry.client_id.as_str())
    }

    /// `RebalanceLockManager.isLockAllExpired`: whether `group` holds no unexpired lock.
    pub(crate) fn all_expired(&self, group: &str, now: Instant, lifetime: Duration) -> bool {
        !self
            .locks
            .iter()
            .any(|((g, _), entry)| g == group && !entry.is_expired(now, lifetime))
    }

    /// Forgets every lock (a broker restart: the table lives in memory only).
    pub(crate) fn clear(&mut self) {
        self.locks.clear();
    }
}
