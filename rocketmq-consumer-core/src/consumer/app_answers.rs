//! The application's requests whose answers come later, as events named by a [`RequestId`]:
//! a commit (answered once every queue's commit is), a seek to a queue's edge, an offset
//! looked up by time. The driver matches answers to askers by id and counts nothing.

use std::collections::{BTreeMap, BTreeSet};

use proto::MessageQueue;

use crate::output::{Event, RequestId};

/// Commits the application asked for, waiting for their queues' answers.
#[derive(Debug, Default)]
pub(crate) struct AppAnswers {
    next: u64,
    commits: BTreeMap<RequestId, CommitTally>,
}

/// One commit's queues: those still waiting, and the answers so far.
#[derive(Debug, Default)]
struct CommitTally {
    waiting: BTreeSet<MessageQueue>,
    committed: Vec<(MessageQueue, i64)>,
    unconfirmed: Vec<MessageQueue>,
}

impl CommitTally {
    fn done(&mut self, request: RequestId) -> Event {
        let mut committed = std::mem::take(&mut self.committed);
        let mut unconfirmed = std::mem::take(&mut self.unconfirmed);
        committed.sort();
        unconfirmed.sort();
        Event::CommitDone {
            request,
            committed,
            unconfirmed,
        }
    }
}

impl AppAnswers {
    /// A fresh id for an application request.
    pub(crate) fn next_id(&mut self) -> RequestId {
        self.next += 1;
        RequestId(self.next)
    }

    /// Commit `request` waits for an answer for each of `queues`; with none, it is done now
    /// and its event is returned.
    pub(crate) fn expect_commit(
        &mut self,
        request: RequestId,
        queues: impl IntoIterator<Item = MessageQueue>,
    ) -> Option<Event> {
        let mut tally = CommitTally {
            waiting: queues.into_iter().collect(),
            ..CommitTally::default()
        };
        if tally.waiting.is_empty() {
            return Some(tally.done(request));
        }
        self.commits.insert(request, tally);
        None
    }

    /// Commit `request`'s answer for `queue`: the offset the broker confirmed, or `None`
    /// when it refused or did not answer. The last answer returns the commit's event.
    pub(crate) fn commit_answered(
        &mut self,
        request: RequestId,
        queue: MessageQueue,
        confirmed: Option<i64>,
    ) -> Option<Event> {
        let tally = self.commits.get_mut(&request)?;
        if !tally.waiting.remove(&queue) {
            return None;
        }
        match confirmed {
            Some(offset) => tally.committed.push((queue, offset)),
            None => tally.unconfirmed.push(queue),
        }
        if !tally.waiting.is_empty() {
            return None;
        }
        let event = tally.done(request);
        self.commits.remove(&request);
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_done_when_every_queue_answered() {
        let mut answers = AppAnswers::default();
        let id = answers.next_id();
        let (a, b) = (
            MessageQueue::new("T", "b", 0),
            MessageQueue::new("T", "b", 1),
        );
        assert_eq!(answers.expect_commit(id, [a.clone(), b.clone()]), None);
        assert_eq!(answers.commit_answered(id, b.clone(), None), None);
        // A second answer for the same queue counts once.
        assert_eq!(answers.commit_answered(id, b.clone(), Some(3)), None);
        assert_eq!(
            answers.commit_answered(id, a.clone(), Some(7)),
            Some(Event::CommitDone {
                request: id,
                committed: vec![(a, 7)],
                unconfirmed: vec![b],
            })
        );
    }

    #[test]
    fn a_commit_with_nothing_to_commit_is_done_at_once() {
        let mut answers = AppAnswers::default();
        let id = answers.next_id();
        assert!(matches!(
            answers.expect_commit(id, []),
            Some(Event::CommitDone { request, .. }) if request == id
        ));
    }
}
