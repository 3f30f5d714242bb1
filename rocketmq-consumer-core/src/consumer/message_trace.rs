//! Message trace (with `ConsumerConfig::trace`): a `SubBefore` record per message as a
//! delivery starts and a `SubAfter` record per message as it completes, in Java's encoding
//! ([`proto::trace`]), handed to the driver as [`Output::Trace`](crate::Output::Trace) to send
//! to the trace topic. What Java's `ConsumeMessageTraceHookImpl` records, from the same
//! fields: the group without its namespace, each message's id, reconsume count, keys and
//! region, one request id per delivery, and the delivery's time divided among its messages.
//!
//! A message whose `TRACE_ON` property is `false` is not traced (Java skips it too).

use proto::message::Message;
use proto::trace::{SubAfterTrace, SubBeforeTrace, TraceBatch};

/// The message property that turns tracing off for one message (`MessageConst.PROPERTY_TRACE_SWITCH`).
const TRACE_SWITCH: &str = "TRACE_ON";
/// The message property naming the broker's region (`MessageConst.PROPERTY_MSG_REGION`).
const REGION: &str = "MSG_REGION";
/// What Java's brokers call a region they were given no name for (`BrokerConfig.regionId`).
const DEFAULT_REGION: &str = "DefaultRegion";

/// Java's `ConsumeReturnType` ordinals, as `SubAfter` records carry them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReturnType {
    Success = 0,
    TimedOut = 1,
    Failed = 4,
}

/// A traced delivery's messages, kept until it completes.
#[derive(Debug)]
pub(crate) struct OpenTrace {
    request_id: String,
    started_ms: i64,
    /// Each traced message's id and keys, as `id` [`ID_END`] `keys` [`ENTRY_END`]: one
    /// allocation per delivery however many messages it holds.
    messages: String,
    count: usize,
}

/// Ends a message id in [`OpenTrace::messages`]. Message ids and keys are message properties,
/// which cannot hold U+0001 or U+0002: those separate the properties on the wire
/// (`MessageDecoder.NAME_VALUE_SEPARATOR`, `PROPERTY_SEPARATOR`).
const ID_END: char = '\u{1}';
/// Ends an entry of [`OpenTrace::messages`].
const ENTRY_END: char = '\u{2}';

/// Opens the trace of a delivery of `messages` started at `unix_ms`, with `request_id`;
/// returns it with the `SubBefore` records, or `None` when no message is traced.
pub(crate) fn open(
    group: &str,
    request_id: String,
    unix_ms: i64,
    messages: &[Message],
) -> Option<(OpenTrace, TraceBatch)> {
    let mut batch = TraceBatch::with_capacity(messages.len());
    let mut open = OpenTrace {
        request_id,
        started_ms: unix_ms,
        messages: String::with_capacity(messages.len() * 48),
        count: 0,
    };
    for m in messages {
        if m.property(TRACE_SWITCH) == Some("false") {
            continue;
        }
        let offset_id;
        let msg_id = match m.unique_key() {
            Some(key) => key,
            None => {
                offset_id = m.offset_msg_id();
                &offset_id
            }
        };
        let keys = m.keys().unwrap_or_default();
        let record = SubBeforeTrace {
            timestamp: unix_ms,
            region: m.property(REGION).unwrap_or(DEFAULT_REGION),
            group,
            request_id: open.request_id.as_str(),
            msg_id,
            retry_times: m.reconsume_times(),
            keys,
        };
        batch.push_with(msg_id, keys, |out| record.encode_into(out));
        open.messages.push_str(msg_id);
        open.messages.push(ID_END);
        open.messages.push_str(keys);
        open.messages.push(ENTRY_END);
        open.count += 1;
    }
    (open.count > 0).then_some((open, batch))
}

impl OpenTrace {
    /// The `SubAfter` records of the delivery, finished at `unix_ms` with `result`.
    pub(crate) fn close(self, unix_ms: i64, result: ReturnType) -> TraceBatch {
        let total = (unix_ms - self.started_ms).max(0);
        let count = i64::try_from(self.count).unwrap_or(i64::MAX).max(1);
        let cost_ms = i32::try_from(total / count).unwrap_or(i32::MAX);
        let mut batch = TraceBatch::with_capacity(self.count);
        for entry in self.messages.split_terminator(ENTRY_END) {
            let (msg_id, keys) = entry.split_once(ID_END).unwrap_or((entry, ""));
            let record = SubAfterTrace {
                request_id: self.request_id.as_str(),
                msg_id,
                cost_ms,
                success: result == ReturnType::Success,
                keys,
                context_code: result as i32,
                timestamp: unix_ms,
            };
            batch.push_with(msg_id, keys, |out| record.encode_into(out));
        }
        batch
    }
}
