//! Our producer to Java's `DefaultMQPushConsumer`, on a topic nobody created: the first send
//! goes through the default topic's route (`TBW102`) and the broker creates the topic, as with
//! Java's producer; the Java consumer then gets exactly the messages sent, with their tags,
//! keys, properties and `UNIQ_KEY`s, and each sharding key's messages on one queue in send order.

use std::collections::BTreeMap;

use rocketmq_tests::{namesrv, unique};
use rocketmq_tokio::ProducerMessage;

use super::peer::{JavaPeer, events, int, text};

/// Round-robin messages.
const PLAIN: usize = 30;
/// Sharding keys, and messages per key.
const KEYS: usize = 4;
const PER_KEY: usize = 10;

#[test]
fn java_consumer_gets_what_our_producer_sent() {
    crate::support::block_on(async {
        let ns = namesrv();
        let topic = unique("interop-r2j");
        let producer = super::peer::our_producer(&ns, "interop-r2j-producer");
        // msg id -> (body, tag, keys, sharding key)
        let mut sent = BTreeMap::new();
        for i in 0..PLAIN {
            let body = format!("plain/{i}");
            let message = ProducerMessage::new(body.clone())
                .with_tag("TagR")
                .with_keys(format!("k{i}"))
                .with_property("origin", "rust");
            let result = producer
                .send(&topic, message)
                .await
                .unwrap_or_else(|e| panic!("send {body}: {e}"));
            sent.insert(
                result.msg_ids[0].clone(),
                (body, Some(format!("k{i}")), None),
            );
        }
        for seq in 0..PER_KEY {
            for key in 0..KEYS {
                let key = format!("key-{key}");
                let body = format!("{key}/{seq}");
                let message = ProducerMessage::new(body.clone()).with_sharding_key(key.clone());
                let result = producer
                    .send(&topic, message)
                    .await
                    .unwrap_or_else(|e| panic!("send {body}: {e}"));
                sent.insert(result.msg_ids[0].clone(), (body, None, Some(key)));
            }
        }
        producer.close();

        let total = (PLAIN + KEYS * PER_KEY).to_string();
        let group = unique("interop-r2j-java");
        let lines = JavaPeer::consume(
            &ns,
            &group,
            &topic,
            &["--from", "first", "--count", &total, "--idle-exit", "5"],
        )
        .finish();
        let mut got: BTreeMap<String, Vec<&serde_json::Value>> = BTreeMap::new();
        for line in events(&lines, "message") {
            got.entry(text(line, "msg_id").to_owned())
                .or_default()
                .push(line);
        }
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            sent.keys().collect::<Vec<_>>(),
            "Java sees exactly our msg ids"
        );
        let mut per_key: BTreeMap<&str, Vec<(i64, i64, &str)>> = BTreeMap::new();
        for (id, deliveries) in &got {
            assert_eq!(
                deliveries.len(),
                1,
                "{id} delivered once to Java: {deliveries:?}"
            );
            let line = deliveries[0];
            let (body, keys, sharding) = &sent[id];
            assert_eq!(text(line, "body"), body, "{id}");
            assert_eq!(int(line, "reconsume_times"), 0, "{id}");
            match sharding {
                None => {
                    assert_eq!(line["tags"], "TagR", "{id}: {line}");
                    assert_eq!(line["keys"].as_str(), keys.as_deref(), "{id}: {line}");
                    assert_eq!(line["properties"]["origin"], "rust", "{id}: {line}");
                }
                Some(key) => per_key.entry(key).or_default().push((
                    int(line, "queue_id"),
                    int(line, "queue_offset"),
                    text(line, "body"),
                )),
            }
        }
        for (key, mut messages) in per_key {
            messages.sort_by_key(|&(_, offset, _)| offset);
            let queues: Vec<_> = messages.iter().map(|m| m.0).collect();
            assert!(
                queues.windows(2).all(|w| w[0] == w[1]),
                "{key} on one queue: {messages:?}"
            );
            let order: Vec<_> = messages.iter().map(|m| m.2.to_owned()).collect();
            let expected: Vec<_> = (0..PER_KEY).map(|seq| format!("{key}/{seq}")).collect();
            assert_eq!(order, expected, "{key}: the queue holds the send order");
        }
    });
}
