//! Sends message trace records to the trace topic, beside the consumer and never in its way
//! (Java's `AsyncTraceDispatcher`). The driver appends each delivery's records to a bounded
//! buffer, without waiting and without waking anyone; a task of its own looks at the buffer
//! every [`POLL`] (Java's dispatcher polls its queue every 5 ms), packs what it finds into
//! trace messages (up to [`MAX_BODY`] bytes, keyed by the traced message ids and keys so the
//! broker's index finds them) and sends them with a producer of its own. A full buffer, or a
//! failed send, drops the records and counts them: memory stays bounded while the trace topic
//! is slow or gone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use consumer_core::producer::ProducerMessage;
use futures_channel::oneshot;
use futures_util::future;
use proto::trace::TraceBatch;

use crate::runtime::{BoxFuture, Runtime};

/// How the sending task sends one trace message: with a producer of its own, built by
/// `ProducerBuilder::trace_queue` (which closes when this is dropped, at the task's end).
pub(crate) type SendTrace =
    Box<dyn Fn(ProducerMessage) -> BoxFuture<Result<(), String>> + Send + Sync>;

/// Records the buffer holds before it drops new ones.
const CAPACITY: usize = 50_000;
/// How often the sending task looks at the buffer.
const POLL: Duration = Duration::from_millis(20);
/// The most body bytes of one trace message (Java sends up to the producer's 4 MiB limit;
/// smaller messages keep one send short).
pub(crate) const MAX_BODY: usize = 64 * 1024;

/// What the driver handed over and the task has not taken yet.
#[derive(Debug, Default)]
struct Buffer {
    batches: Vec<TraceBatch>,
    records: usize,
    /// The driver is done: send what is left, then stop.
    closed: bool,
}

/// The driver's end: appends without waiting.
#[derive(Debug)]
pub(crate) struct TraceQueue {
    buffer: Arc<Mutex<Buffer>>,
    dropped: Arc<AtomicU64>,
    /// Answered (or dropped) when the sending task is done.
    finished: oneshot::Receiver<()>,
}

impl TraceQueue {
    /// Starts the sending task on `runtime`, sending with `send`; `topic` names the trace topic
    /// in logs.
    pub(crate) fn start<R: Runtime>(runtime: &R, send: SendTrace, topic: String) -> Self {
        let buffer = Arc::new(Mutex::new(Buffer::default()));
        let dropped = Arc::new(AtomicU64::new(0));
        let (done, finished) = oneshot::channel();
        let sending = send_all(
            runtime.clone(),
            send,
            topic,
            Arc::clone(&buffer),
            Arc::clone(&dropped),
        );
        runtime.spawn(Box::pin(async move {
            sending.await;
            let _ = done.send(());
        }));
        Self {
            buffer,
            dropped,
            finished,
        }
    }

    /// Adds `batch`, or drops it (counted) when the buffer is full.
    pub(crate) fn append(&mut self, batch: TraceBatch) {
        let mut buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        if buffer.records + batch.records > CAPACITY {
            self.dropped
                .fetch_add(batch.records as u64, Ordering::Relaxed);
            return;
        }
        buffer.records += batch.records;
        buffer.batches.push(batch);
    }

    /// Records dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Closes the buffer and waits, at most `within`, for what it holds to be sent: a consumer
    /// shutting down sends its last records before it reports.
    pub(crate) async fn close<R: Runtime>(mut self, runtime: &R, within: Duration) {
        self.buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        let deadline = runtime.sleep_until(runtime.now() + within);
        let _ = future::select(&mut self.finished, deadline).await;
    }
}

impl Drop for TraceQueue {
    fn drop(&mut self) {
        // A producer dropped without `close`: the task sends what is left and stops.
        self.buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
    }
}

/// Sends what the buffer holds every [`POLL`] until it is closed and empty.
async fn send_all<R: Runtime>(
    runtime: R,
    send: SendTrace,
    topic: String,
    buffer: Arc<Mutex<Buffer>>,
    dropped: Arc<AtomicU64>,
) {
    loop {
        runtime.sleep_until(runtime.now() + POLL).await;
        let (batches, closed) = {
            let mut buffer = buffer.lock().unwrap_or_else(PoisonError::into_inner);
            buffer.records = 0;
            (std::mem::take(&mut buffer.batches), buffer.closed)
        };
        for (body, keys, count) in pack(&batches) {
            let message = ProducerMessage::new(body).with_keys(keys);
            if let Err(e) = send(message).await {
                tracing::debug!(%topic, error = %e, records = count, "trace records not sent");
                dropped.fetch_add(count, Ordering::Relaxed);
            }
        }
        if closed {
            break;
        }
    }
}

/// Packs `batches` into message bodies of at most [`MAX_BODY`] bytes (a bigger batch alone),
/// each with its keys and its record count.
fn pack(batches: &[TraceBatch]) -> Vec<(String, String, u64)> {
    let mut messages = Vec::new();
    let mut message = TraceBatch::default();
    for batch in batches {
        if message.records > 0 && message.data.len() + batch.data.len() > MAX_BODY {
            let full = std::mem::take(&mut message);
            messages.push((full.data, full.keys, full.records as u64));
        }
        if message.records == 0 {
            message.data.reserve(MAX_BODY.max(batch.data.len()));
        }
        message.append(batch);
    }
    if message.records > 0 {
        messages.push((message.data, message.keys, message.records as u64));
    }
    messages
}

#[cfg(test)]
mod tests {
    use proto::trace::{SubAfterTrace, TraceBatch, TraceRecord};

    use super::{MAX_BODY, pack};

    fn batch(i: usize, keys: &str) -> TraceBatch {
        let mut batch = TraceBatch::default();
        batch.push(&TraceRecord::SubAfter(SubAfterTrace {
            request_id: format!("r{i}"),
            msg_id: format!("m{i}"),
            keys: keys.to_owned(),
            ..SubAfterTrace::default()
        }));
        batch
    }

    #[test]
    fn packs_within_the_body_limit_with_every_key() {
        let batches: Vec<_> = (0..10_000).map(|i| batch(i, "k")).collect();
        let messages = pack(&batches);
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
