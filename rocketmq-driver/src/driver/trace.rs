//! What the driver logs: the events that change a consumer's shape.

use consumer_core::Event;

/// Logs what changes a consumer's shape: assignments, offset corrections, leases, failures.
/// Nothing per message: those events do not exist, and a commit's answer is per commit.
pub(super) fn trace_event(event: &Event) {
    match event {
        Event::Assigned(queues) => tracing::info!(?queues, "queues assigned"),
        Event::Revoked(queues) => tracing::info!(?queues, "queues revoked"),
        Event::OffsetMoved { queue, from, to } => {
            tracing::warn!(?queue, from, to, "broker moved an illegal offset")
        }
        Event::OffsetRestored {
            queue,
            offset,
            committed,
        } => tracing::warn!(
            ?queue,
            offset,
            ?committed,
            "the broker's committed offset is behind where the queue stood when its broker went away; resuming there"
        ),
        Event::OffsetReset { queue, offset } => tracing::info!(?queue, offset, "offset reset"),
        Event::LeaseAcquired(queues) => tracing::info!(?queues, "queue locks acquired"),
        Event::LeaseLost(queues) => tracing::warn!(?queues, "queue locks lost"),
        Event::SendBackFailed { queue, offset } => tracing::warn!(
            ?queue,
            offset,
            "failed message could not be sent back; it will be redelivered locally"
        ),
        Event::GaveUp { queue, offset } => {
            tracing::warn!(?queue, offset, "message gave up after max_reconsume_times")
        }
        Event::RequestFailed {
            addr,
            request,
            reason,
        } => tracing::debug!(%addr, request, ?reason, "request failed; the consumer retries"),
        Event::CorruptMessages { queue, error } => {
            tracing::warn!(?queue, %error, "corrupt records in a pull response")
        }
        Event::SubscriptionRejected { topic, reason } => {
            tracing::error!(
                topic,
                ?reason,
                "a broker refused the subscription; it was dropped"
            )
        }
        Event::CommitDone {
            committed,
            unconfirmed,
            ..
        } => tracing::debug!(?committed, ?unconfirmed, "commit answered"),
        Event::SeekDone { queue, offset, .. } => tracing::debug!(?queue, ?offset, "seek answered"),
        Event::OffsetForTimestamp { queue, offset, .. } => {
            tracing::debug!(?queue, ?offset, "offset for a time answered")
        }
        Event::Closed(report) => tracing::info!(?report, "consumer closed"),
        // Events added to the core later are logged once this driver knows them.
        _ => {}
    }
}
