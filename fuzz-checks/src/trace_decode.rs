//! The message trace decoder never panics on any body, and what it decodes survives an
//! encode/decode round trip (Java's `null` for an empty field, older short forms, numbers
//! rewritten in plain decimal all come back the same).

use rocketmq_proto::trace::{TraceBatch, TraceRecord};

/// Runs the check on one input; panics when it finds a fault.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(records) = TraceRecord::decode_all(text) else {
        return;
    };
    let mut batch = TraceBatch::default();
    for record in &records {
        batch.push(record);
    }
    assert_eq!(batch.records, records.len());
    let again = TraceRecord::decode_all(&batch.data).expect("encoded records decode");
    assert_eq!(records, again);
}
