//! The difference between the queues a consumer owns and the queues it should own.

use std::collections::BTreeSet;

use crate::MessageQueue;

/// What a rebalance changes: queues to start consuming and queues to give up, each sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RebalanceDiff {
    /// In the target, not owned yet.
    pub added: Vec<MessageQueue>,
    /// Owned, not in the target.
    pub removed: Vec<MessageQueue>,
}

impl RebalanceDiff {
    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// The diff from `owned` to `target`. Queues in both are untouched: a rebalance that assigns a
/// queue it already owns must not restart it (that would redeliver its cache).
pub fn diff(owned: &BTreeSet<MessageQueue>, target: &BTreeSet<MessageQueue>) -> RebalanceDiff {
    RebalanceDiff {
        added: target.difference(owned).cloned().collect(),
        removed: owned.difference(target).cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn queues(ids: &[i32]) -> BTreeSet<MessageQueue> {
        ids.iter()
            .map(|id| MessageQueue::new("T", "b", *id))
            .collect()
    }

    #[test]
    fn keeps_common_queues() {
        let d = diff(&queues(&[0, 1, 2]), &queues(&[1, 2, 3]));
        assert_eq!(d.added, vec![MessageQueue::new("T", "b", 3)]);
        assert_eq!(d.removed, vec![MessageQueue::new("T", "b", 0)]);
        assert!(diff(&queues(&[1]), &queues(&[1])).is_empty());
    }

    proptest! {
        #[test]
        fn applying_the_diff_reaches_the_target(
            owned in proptest::collection::btree_set(0..64i32, 0..32),
            target in proptest::collection::btree_set(0..64i32, 0..32),
        ) {
            let owned = queues(&owned.into_iter().collect::<Vec<_>>());
            let target = queues(&target.into_iter().collect::<Vec<_>>());
            let d = diff(&owned, &target);
            let mut after = owned.clone();
            for q in &d.removed { prop_assert!(after.remove(q)); }
            for q in &d.added { prop_assert!(after.insert(q.clone())); }
            prop_assert_eq!(after, target);
        }
    }
}
