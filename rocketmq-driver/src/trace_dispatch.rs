//! Sends message trace records to the trace topic, beside the consumer and never in its way
//! (Java's `AsyncTraceDispatcher`): the driver hands the records of each of its passes to a
//! bounded queue without waiting, and a task of its own packs them into trace messages (records of one
//! batch after the other, up to [`MAX_BODY`] bytes, keyed by the traced message ids and keys
//! so the broker's index finds them) and sends them with a producer of its own. When the queue
//! is full, or a send fails, the records are dropped and counted: memory stays bounded while
//! the trace topic is slow or gone.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use consumer_core::producer::ProducerMessage;
use std::time::Duration;

use futures_channel::{mpsc, oneshot};
use futures_util::StreamExt;
use futures_util::future;
use proto::trace::TraceRecord;

use crate::producer::Producer;
use crate::runtime::Runtime;

/// Batches of records the queue holds before it drops new ones.
const QUEUE: usize = 1024;
/// The most body bytes of one trace message (Java sends up to the producer's 4 MiB limit;
/// smaller messages keep one send short).
pub(crate) const MAX_BODY: usize = 64 * 1024;

/// The driver's end: appends without waiting.
#[derive(Debug)]
pub(crate) struct TraceQueue {
    queue: mpsc::Sender<Vec<TraceRecord>>,
    dropped: Arc<AtomicU64>,
    /// Answered (or dropped) when the sending task is done.
    finished: oneshot::Receiver<()>,
    /// Records of the driver's current pass, handed over together at its end: one hand-off
    /// (and one wake of the sending task) per pass instead of one per delivery.
    pass: Vec<TraceRecord>,
}

impl TraceQueue {
    /// Starts the sending task for `topic` on `runtime`, sending with `producer`.
    pub(crate) fn start<R: Runtime>(runtime: &R, producer: Producer<R>, topic: String) -> Self {
        let (queue, batches) = mpsc::channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let (done, finished) = oneshot::channel();
        let sending = send_all(producer, topic, batches, Arc::clone(&dropped));
        runtime.spawn(Box::pin(async move {
            sending.await;
            let _ = done.send(());
        }));
        Self {
            queue,
            dropped,
            finished,
            pass: Vec::new(),
        }
    }

    /// Closes the queue and waits, at most `within`, for what it holds to be sent: a consumer
    /// shutting down sends its last records before it reports.
    pub(crate) async fn close<R: Runtime>(self, runtime: &R, within: Duration) {
        let mut this = self;
        this.end_pass();
        let Self {
            queue, finished, ..
        } = this;
        drop(queue);
        let deadline = runtime.sleep_until(runtime.now() + within);
        let _ = future::select(finished, deadline).await;
    }

    /// Adds `records` to the current pass.
    pub(crate) fn append(&mut self, records: Vec<TraceRecord>) {
        self.pass.extend(records);
    }

    /// The end of the driver's pass: queues its records, or drops them (counted) when the
    /// queue is full or the task gone.
    pub(crate) fn end_pass(&mut self) {
        if self.pass.is_empty() {
            return;
        }
        let records = std::mem::take(&mut self.pass);
        let count = records.len() as u64;
        if self.queue.try_send(records).is_err() {
            self.dropped.fetch_add(count, Ordering::Relaxed);
        }
    }

    /// Records dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Sends what arrives until the driver's end is gone and everything queued went out.
async fn send_all<R: Runtime>(
    producer: Producer<R>,
    topic: String,
    mut batches: mpsc::Receiver<Vec<TraceRecord>>,
    dropped: Arc<AtomicU64>,
) {
    let mut pending: Vec<TraceRecord> = Vec::new();
    while let Some(batch) = batches.next().await {
        pending.extend(batch);
        // Whatever else is queued now goes in the same messages.
        while let Ok(more) = batches.try_recv() {
            pending.extend(more);
        }
        for (body, keys, count) in pack(&pending) {
            let message = ProducerMessage::new(body).with_keys(keys);
            if let Err(e) = producer.send(&topic, message).await {
                tracing::debug!(%topic, error = %e, records = count, "trace records not sent");
                dropped.fetch_add(count, Ordering::Relaxed);
            }
        }
        pending.clear();
    }
    producer.close();
}

/// Packs `records` into message bodies of at most [`MAX_BODY`] bytes (a bigger record alone),
/// each with its keys joined by spaces and its record count.
fn pack(records: &[TraceRecord]) -> Vec<(String, String, u64)> {
    let mut messages = Vec::new();
    let mut body = String::new();
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    let mut count = 0;
    for record in records {
        let start = body.len();
        record.encode_into(&mut body);
        if start > 0 && body.len() > MAX_BODY {
            // This record starts the next message.
            let next = body.split_off(start);
            messages.push((std::mem::replace(&mut body, next), join(&mut keys), count));
            count = 0;
        }
        keys.extend(record.keys());
        count += 1;
    }
    if !body.is_empty() {
        messages.push((body, join(&mut keys), count));
    }
    messages
}

fn join(keys: &mut BTreeSet<&str>) -> String {
    let joined = keys.iter().copied().collect::<Vec<_>>().join(" ");
    keys.clear();
    joined
}

#[cfg(test)]
mod tests {
    use proto::trace::{SubAfterTrace, TraceRecord};

    use super::{MAX_BODY, pack};

    fn record(i: usize, keys: &str) -> TraceRecord {
        TraceRecord::SubAfter(SubAfterTrace {
            request_id: format!("r{i}"),
            msg_id: format!("m{i}"),
            keys: keys.to_owned(),
            ..SubAfterTrace::default()
        })
    }

    #[test]
    fn packs_within_the_body_limit_with_every_key() {
        let records: Vec<_> = (0..10_000).map(|i| record(i, "k")).collect();
        let messages = pack(&records);
        assert!(messages.len() > 1, "10 000 records need several messages");
        assert!(messages.iter().all(|(body, _, _)| body.len() <= MAX_BODY));
        assert_eq!(messages.iter().map(|(_, _, n)| n).sum::<u64>(), 10_000);
        let decoded: usize = messages
            .iter()
            .map(|(body, _, _)| TraceRecord::decode_all(body).map_or(0, |r| r.len()))
            .sum();
        assert_eq!(decoded, 10_000, "every record decodes from its message");
        let (_, keys, _) = &messages[0];
        assert!(keys.split(' ').any(|k| k == "m0") && keys.split(' ').any(|k| k == "k"));
        assert!(pack(&[]).is_empty());
    }
}
