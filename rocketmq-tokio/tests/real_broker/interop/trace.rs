//! Our push consumer's message trace, read back with the Java client's own decoder
//! (`TraceDataEncoder.decoderFromTraceDataString`, in `scripts/java-peer trace-read`): after
//! it consumed a batch with `trace()`, `RMQ_SYS_TRACE_TOPIC` holds for every message a
//! `SubBefore` naming our group and the message id and a `SubAfter` with the same request id,
//! success and Java's success context code, in trace messages keyed by the message id (what
//! `mqadmin queryMsgTraceById` looks them up by).

use std::collections::BTreeSet;

use rocketmq_tests::unique;
use rocketmq_tokio::{ConsumeFrom, TokioRuntime};
use serde_json::Value;

use super::peer::{JavaPeer, text};
use crate::scenario::broker_scenario::{
    QUIET, Topic, WAIT, build_tracked, builder, read_until, sleep, start_forwarding,
};

#[test]
fn java_decodes_our_consume_traces() {
    crate::support::block_on(async {
        let topic = Topic::create(&unique("interop-trace"), 2);
        let group = unique("interop-trace");
        topic.send("traced", 10, None);
        let (consumer, _owned) = build_tracked(
            &topic,
            builder::<TokioRuntime>(&topic, &group, "*", ConsumeFrom::First).trace(),
        );
        let (running, mut ids) = start_forwarding(consumer, |m| m.msg_id());
        let ids: BTreeSet<String> =
            read_until::<TokioRuntime, _>(&mut ids, WAIT, |got| got.len() >= 10)
                .await
                .into_iter()
                .collect();
        assert_eq!(ids.len(), 10, "every message consumed once");
        // Let the last records leave before the consumer does.
        sleep::<TokioRuntime>(QUIET).await;
        drop(running.shutdown().await);

        let lines = JavaPeer::run(&topic.namesrv, &["trace-read", "--idle-exit", "3"]);
        let ours: Vec<&Value> = lines
            .iter()
            .filter(|l| l["event"] == "trace" && ids.contains(text(l, "msg_id")))
            .collect();
        for id in &ids {
            let of = |kind: &str| -> Vec<&&Value> {
                ours.iter()
                    .filter(|l| text(l, "msg_id") == id && text(l, "type") == kind)
                    .collect()
            };
            let (before, after) = (of("SubBefore"), of("SubAfter"));
            assert_eq!((before.len(), after.len()), (1, 1), "{id}: {ours:?}");
            let (before, after) = (before[0], after[0]);
            assert_eq!(text(before, "group"), group, "{before}");
            assert_eq!(before["retry_times"], 0, "{before}");
            assert_eq!(text(before, "request_id"), text(after, "request_id"));
            assert_eq!(after["success"], true, "{after}");
            assert_eq!(after["context_code"], 0, "{after}");
            assert!(
                after["cost_ms"].as_i64().is_some_and(|ms| ms >= 0),
                "{after}"
            );
            assert!(
                text(before, "message_keys").split(' ').any(|k| k == id),
                "the trace message is keyed by the message id: {before}"
            );
        }
    });
}

/// Our producer's `Pub` records read the same way: one per message sent with `trace()`,
/// naming the producer group, the topic, the message id and the broker that stored it, as a
/// success.
#[test]
fn java_decodes_our_publish_traces() {
    crate::support::block_on(async {
        let topic = Topic::create(&unique("interop-trace-pub"), 2);
        let group = unique("interop-trace-pub");
        let producer = rocketmq_tokio::Producer::builder(group.clone())
            .name_server(topic.namesrv.clone())
            .trace()
            .build()
            .expect("a valid producer");
        let mut ids = BTreeSet::new();
        for i in 0..5 {
            let message = rocketmq_tokio::ProducerMessage::new(format!("traced {i}"))
                .with_tag("TagT")
                .with_keys(format!("key-{i}"));
            let sent = producer.send(&topic.name, message).await.expect("sent");
            ids.extend(sent.msg_ids);
        }
        sleep::<TokioRuntime>(QUIET).await;

        let lines = JavaPeer::run(&topic.namesrv, &["trace-read", "--idle-exit", "3"]);
        for id in &ids {
            let records: Vec<&Value> = lines
                .iter()
                .filter(|l| l["event"] == "trace" && text(l, "msg_id") == id)
                .collect();
            assert_eq!(records.len(), 1, "{id}: {records:?}");
            let record = records[0];
            assert_eq!(text(record, "type"), "Pub", "{record}");
            assert_eq!(text(record, "group"), group, "{record}");
            assert_eq!(text(record, "topic"), topic.name, "{record}");
            assert_eq!(record["success"], true, "{record}");
            assert!(text(record, "keys").starts_with("key-"), "{record}");
        }
    });
}
