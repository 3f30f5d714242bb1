//! `rmq consume`: run a push consumer (on tokio) and print each message as a JSON line.

use std::time::Duration;

pub use rocketmq_tokio::ConsumeFrom;
use rocketmq_tokio::{ConsumeOutcome, PushConsumer, ShutdownReport};
use serde_json::Value;

use crate::decode::message_json;

/// What to consume.
#[derive(Clone, Debug)]
pub struct ConsumeOptions {
    /// Name server address.
    pub namesrv: String,
    /// The consumer group.
    pub group: String,
    /// The topic.
    pub topic: String,
    /// The tag expression.
    pub expression: String,
    /// Where a queue without a committed offset starts.
    pub from: ConsumeFrom,
    /// Stop after this many messages.
    pub count: Option<usize>,
    /// Stop after this long without a message.
    pub idle_exit: Option<Duration>,
}

/// Consumes until the count or the idle time is reached, calling `emit` with each message's
/// JSON object, then shuts down (committing offsets) and returns the report.
pub fn consume(
    options: &ConsumeOptions,
    mut emit: impl FnMut(Value),
) -> Result<ShutdownReport, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let consumer = PushConsumer::builder(options.group.clone())
            .name_server(options.namesrv.clone())
            .subscribe(options.topic.clone(), options.expression.clone())
            .consume_from(options.from)
            .build()
            .map_err(|e| e.to_string())?;
        // Each handler waits for the printer's verdict, so a message that arrives after
        // `--count` was reached is not acknowledged: its offset is not committed and the next
        // run gets it.
        let running = consumer.start_concurrently(move |messages| {
            let tx = tx.clone();
            async move {
                let mut outcome = ConsumeOutcome::Success;
                for message in messages {
                    let (verdict, printed) = tokio::sync::oneshot::channel();
                    if tx.send((message_json(&message), verdict)).is_err() {
                        return ConsumeOutcome::ReconsumeLater;
                    }
                    if !printed.await.unwrap_or(false) {
                        outcome = ConsumeOutcome::ReconsumeLater;
                    }
                }
                outcome
            }
        });
        let mut seen = 0;
        loop {
            if options.count.is_some_and(|count| seen >= count) {
                break;
            }
            let next = match options.idle_exit {
                Some(idle) => match tokio::time::timeout(idle, rx.recv()).await {
                    Ok(next) => next,
                    Err(_) => break,
                },
                None => rx.recv().await,
            };
            let Some((value, verdict)) = next else { break };
            emit(value);
            seen += 1;
            let _ = verdict.send(true);
        }
        // Deliveries still queued get no verdict and are redelivered later.
        drop(rx);
        running.shutdown().await.map_err(|e| e.to_string())
    })
}
