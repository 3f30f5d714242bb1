//! [`StrandedOffsets`]: where queues stood when they were revoked while their broker could not
//! be reached, so their final commit had nowhere to go.
//!
//! A broker that crashes leaves its route at once (the name server sees its channel close,
//! `RouteInfoManager.onChannelDestroy`), so a consumer's next route revokes its queues while
//! the broker is down; and the crashed broker has lost the commits it had not yet written to
//! disk (Apache's brokers write their offset table every `flushConsumerOffsetInterval`, 5 s).
//! When it comes back it answers an older committed offset than the consumer reached, and a
//! queue started there delivers everything since again: a third of a stream in the runs that
//! found it. Java's consumer does that (`RebalancePushImpl.removeUnnecessaryMessageQueue`
//! drops the queue's offset with the queue); this one keeps the offset it could not commit and,
//! when the queue comes back to it, resumes from there if the broker's is behind, and commits it
//! again.
//!
//! An entry lives only while nobody else can have moved the queue: it is dropped as soon as a
//! rebalance sees the queue in its route and gives it to another member (whose commits, and an
//! operator's reset, then count), and when the topic is unsubscribed.

use std::collections::BTreeMap;

use proto::MessageQueue;

/// The offsets of revoked queues whose final commit could not be sent.
#[derive(Debug, Default)]
pub(super) struct StrandedOffsets {
    table: BTreeMap<MessageQueue, i64>,
}

impl StrandedOffsets {
    /// `mq` was revoked at `offset` (its commit point) and the commit could not be sent.
    pub(super) fn strand(&mut self, mq: MessageQueue, offset: i64) {
        self.table.insert(mq, offset);
    }

    /// `mq` is ours again and its broker answered `committed`: the offset to resume from
    /// instead, when the stranded one is ahead of it (or the broker has none). The entry is
    /// used up either way.
    pub(super) fn resume(&mut self, mq: &MessageQueue, committed: Option<i64>) -> Option<i64> {
        let stranded = self.table.remove(mq)?;
        committed.is_none_or(|c| stranded > c).then_some(stranded)
    }

    /// A rebalance of `topic` gave the queues it routes but `ours` excludes to other members:
    /// their progress is theirs from now on, so stranded offsets of those queues are dropped.
    pub(super) fn given_away(
        &mut self,
        topic: &str,
        routed: impl Fn(&MessageQueue) -> bool,
        ours: impl Fn(&MessageQueue) -> bool,
    ) {
        self.table
            .retain(|mq, _| mq.topic() != topic || !routed(mq) || ours(mq));
    }

    /// `topic` is no longer consumed.
    pub(super) fn forget_topic(&mut self, topic: &str) {
        self.table.retain(|mq, _| mq.topic() != topic);
    }

    /// How many queues have a stranded offset.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(topic: &str, id: i32) -> MessageQueue {
        MessageQueue::new(topic, "broker-a", id)
    }

    #[test]
    fn resumes_only_ahead_of_the_broker_and_once() {
        let mut stranded = StrandedOffsets::default();
        stranded.strand(mq("T", 0), 120);
        stranded.strand(mq("T", 1), 50);
        stranded.strand(mq("T", 2), 70);
        // The crashed broker lost the commits after 80: resume at 120.
        assert_eq!(stranded.resume(&mq("T", 0), Some(80)), Some(120));
        assert_eq!(stranded.resume(&mq("T", 0), Some(80)), None, "used up");
        // Another member got further meanwhile: the broker's stands.
        assert_eq!(stranded.resume(&mq("T", 1), Some(90)), None);
        // The broker lost the whole group: resume where we stood.
        assert_eq!(stranded.resume(&mq("T", 2), None), Some(70));
        assert_eq!(stranded.len(), 0);
    }

    #[test]
    fn a_queue_given_to_another_member_forgets_its_stranded_offset() {
        let mut stranded = StrandedOffsets::default();
        for id in 0..4 {
            stranded.strand(mq("T", id), 10);
        }
        stranded.strand(mq("U", 0), 10);
        // Queue 3's broker is still away (not routed); 0 and 1 are ours; 2 went elsewhere.
        stranded.given_away("T", |q| q.queue_id() < 3, |q| q.queue_id() < 2);
        assert_eq!(stranded.resume(&mq("T", 2), None), None);
        assert_eq!(stranded.resume(&mq("T", 3), None), Some(10));
        assert_eq!(stranded.resume(&mq("T", 0), Some(5)), Some(10));
        stranded.forget_topic("U");
        assert_eq!(stranded.resume(&mq("U", 0), None), None);
    }
}
