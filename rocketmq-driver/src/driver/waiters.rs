//! A lite pull consumer's requests waiting for their answers. The core names each answer by
//! the [`RequestId`] it returned for the request, so settling one is a lookup.

use std::collections::BTreeMap;

use consumer_core::output::Polled;
use consumer_core::{Event, RequestId};
use futures_channel::oneshot;

use crate::control::{CommitReport, ControlError};

/// Application requests waiting for the brokers (poll mode).
#[derive(Default)]
pub(super) struct Waiters {
    /// A `Take` with nothing ready yet.
    pub(super) take: Option<(usize, oneshot::Sender<Option<Polled>>)>,
    pub(super) commits: BTreeMap<RequestId, oneshot::Sender<CommitReport>>,
    pub(super) seeks: BTreeMap<RequestId, oneshot::Sender<Result<(), ControlError>>>,
    pub(super) searches: BTreeMap<RequestId, oneshot::Sender<Result<i64, ControlError>>>,
}

impl Waiters {
    /// Answers the request `event` settles. An asker that stopped waiting is no concern.
    pub(super) fn on_event(&mut self, event: &Event) {
        match event {
            Event::CommitDone {
                request,
                committed,
                unconfirmed,
            } => {
                if let Some(reply) = self.commits.remove(request) {
                    let _ = reply.send(CommitReport {
                        committed: committed.clone(),
                        unconfirmed: unconfirmed.clone(),
                    });
                }
            }
            Event::SeekDone {
                request, offset, ..
            } => {
                if let Some(reply) = self.seeks.remove(request) {
                    let _ = reply.send(offset.clone().map(drop).map_err(ControlError::Failed));
                }
            }
            Event::OffsetForTimestamp {
                request, offset, ..
            } => {
                if let Some(reply) = self.searches.remove(request) {
                    let _ = reply.send(offset.clone().map_err(ControlError::Failed));
                }
            }
            _ => {}
        }
    }
}
