//! Message trace (with `ConsumerConfig::trace`): a `SubBefore` record per message as a
//! delivery starts and a `SubAfter` record per message as it completes, in Java's encoding
//! ([`proto::trace`]), handed to the driver as [`Output::Trace`](crate::Output::Trace) to send
//! to the trace topic. What Java's `ConsumeMessageTraceHookImpl` records, from the same
//! fields: the group without its namespace, each message's id, reconsume count, keys and
//! region, one request id per delivery, and the delivery's time divided among its messages.
//!
//! A message whose `TRACE_ON` property is `false` is not traced (Java skips it too).

use proto::message::Message;
use proto::trace::{SubAfterTrace, SubBeforeTrace, TraceRecord};

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
    /// Each traced message's id and keys.
    messages: Vec<(String, String)>,
}

/// Opens the trace of a delivery of `messages` started at `unix_ms`, with `request_id`;
/// returns it with the `SubBefore` records, or `None` when no message is traced.
pub(crate) fn open(
    group: &str,
    request_id: String,
    unix_ms: i64,
    messages: &[Message],
) -> Option<(OpenTrace, Vec<TraceRecord>)> {
    let traced: Vec<&Message> = messages
        .iter()
        .filter(|m| m.property(TRACE_SWITCH) != Some("false"))
        .collect();
    if traced.is_empty() {
        return None;
    }
    let region_of = |m: &Message| m.property(REGION).unwrap_or(DEFAULT_REGION).to_owned();
    let mut records = Vec::with_capacity(traced.len());
    let mut ids = Vec::with_capacity(traced.len());
    for m in traced {
        let (msg_id, keys) = (m.msg_id(), m.keys().unwrap_or_default().to_owned());
        records.push(TraceRecord::SubBefore(SubBeforeTrace {
            timestamp: unix_ms,
            region: region_of(m),
            group: group.to_owned(),
            request_id: request_id.clone(),
            msg_id: msg_id.clone(),
            retry_times: m.reconsume_times(),
            keys: keys.clone(),
        }));
        ids.push((msg_id, keys));
    }
    let open = OpenTrace {
        request_id,
        started_ms: unix_ms,
        messages: ids,
    };
    Some((open, records))
}

impl OpenTrace {
    /// The `SubAfter` records of the delivery, finished at `unix_ms` with `result`.
    pub(crate) fn close(self, unix_ms: i64, result: ReturnType) -> Vec<TraceRecord> {
        let total = (unix_ms - self.started_ms).max(0);
        let count = i64::try_from(self.messages.len())
            .unwrap_or(i64::MAX)
            .max(1);
        let cost_ms = i32::try_from(total / count).unwrap_or(i32::MAX);
        self.messages
            .into_iter()
            .map(|(msg_id, keys)| {
                TraceRecord::SubAfter(SubAfterTrace {
                    request_id: self.request_id.clone(),
                    msg_id,
                    cost_ms,
                    success: result == ReturnType::Success,
                    keys,
                    context_code: result as i32,
                    timestamp: unix_ms,
                })
            })
            .collect()
    }
}
