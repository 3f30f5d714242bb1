//! Broadcasting's local offset table (see [`LocalOffsets`]).

use std::collections::BTreeMap;

use proto::MessageQueue;

/// Broadcasting's offset table: the next offset to consume of every queue ever consumed, kept
/// for queues that are absent for a while; what `Output::StoreOffsets` hands out.
#[derive(Debug, Default)]
pub(super) struct LocalOffsets {
    table: BTreeMap<MessageQueue, i64>,
    /// Changed since it was last handed out.
    changed: bool,
}

impl LocalOffsets {
    /// The stored offset of `mq`.
    pub(super) fn get(&self, mq: &MessageQueue) -> Option<i64> {
        self.table.get(mq).copied()
    }

    /// Offsets stored at the last run; they are not handed out again until something moves.
    pub(super) fn load(&mut self, mq: MessageQueue, offset: i64) {
        self.table.insert(mq, offset);
    }

    /// `mq`'s next offset is `offset` now.
    pub(super) fn record(&mut self, mq: &MessageQueue, offset: i64) {
        if self.table.insert(mq.clone(), offset) != Some(offset) {
            self.changed = true;
        }
    }

    /// The whole table, when it changed since it was last handed out.
    pub(super) fn take_changed(&mut self) -> Option<Vec<(MessageQueue, i64)>> {
        if !std::mem::take(&mut self.changed) {
            return None;
        }
        Some(
            self.table
                .iter()
                .map(|(mq, offset)| (mq.clone(), *offset))
                .collect(),
        )
    }
}
