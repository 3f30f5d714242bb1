//! `rmq consume --trace` traces every message it consumes in Java's trace format, and `rmq
//! query --topic RMQ_SYS_TRACE_TOPIC --key MSGID` (the broker's index, as `mqadmin
//! queryMsgTraceById` looks traces up) finds the trace messages of a consumed message: they
//! hold its `SubBefore` record naming the group and its `SubAfter` record, a success.

use std::time::Duration;

use proto::trace::TraceRecord;

use crate::support::{consume_from_first, create_topic, fresh_topic_and_group, rmq};

#[test]
fn consumed_messages_are_traced() {
    let (topic, group) = fresh_topic_and_group("rmq-trace");
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&["produce", "--topic", &topic, "--count", "4"]);
    assert!(ok, "produce failed: {stderr}");
    let (ok, read, stderr) = consume_from_first(
        &group,
        &topic,
        &["--count", "4", "--idle-exit", "30", "--trace"],
        &[],
    );
    assert!(ok, "consume failed: {stderr}");
    assert_eq!(read.len(), 4);

    for message in &read {
        let id = message["msg_id"].as_str().expect("a message id");
        // The broker indexes what it stored a moment later: ask a few times.
        let mut records = Vec::new();
        for _ in 0..20 {
            let (ok, found, stderr) =
                rmq(&["query", "--topic", "RMQ_SYS_TRACE_TOPIC", "--key", id]);
            assert!(
                ok || stderr.contains("no message"),
                "query failed: {stderr}"
            );
            records = found
                .iter()
                .filter_map(|m| m["body"].as_str())
                .filter_map(|body| TraceRecord::decode_all(body).ok())
                .flatten()
                .collect();
            let complete = records
                .iter()
                .any(|r| matches!(r, TraceRecord::SubAfter(a) if a.msg_id == id));
            if complete {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        assert!(
            records.iter().any(|r| matches!(r, TraceRecord::SubBefore(b)
                if b.msg_id == id && b.group == group)),
            "{id}: a SubBefore of our group in {records:?}"
        );
        assert!(
            records.iter().any(|r| matches!(r, TraceRecord::SubAfter(a)
                if a.msg_id == id && a.success && a.context_code == 0)),
            "{id}: a successful SubAfter in {records:?}"
        );
    }
}
