//! Java's `DefaultMQProducer` to our push consumer: every message arrives once, with the tag,
//! keys, user properties and `UNIQ_KEY` (as `msg_id`) Java sent; batches (`send(Collection)`)
//! arrive whole; bodies over 4 KiB, which Java's producer compresses with zlib, arrive as sent;
//! delay-level messages arrive no earlier than their delay.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use rocketmq_tests::{BrokerImpl, broker_impl, unique};
use rocketmq_tokio::{ConsumeFrom, Message, TokioRuntime};
use serde_json::Value;

use super::peer::{JavaPeer, int, text};
use crate::scenario::broker_scenario::{
    QUIET, Topic, WAIT, build_tracked, builder, start_forwarding,
};

/// What the test keeps of a message our consumer received.
#[derive(Debug)]
struct Got {
    msg_id: String,
    body: Vec<u8>,
    tags: Option<String>,
    keys: Option<String>,
    color: Option<String>,
    delay: Option<String>,
    reconsume_times: i32,
    born: i64,
    stored: i64,
}

impl Got {
    fn of(message: &Message) -> Self {
        Self {
            msg_id: message.msg_id(),
            body: message.body().to_vec(),
            tags: message.tags().map(str::to_owned),
            keys: message.keys().map(str::to_owned),
            color: message.property("color").map(str::to_owned),
            delay: message.property("DELAY").map(str::to_owned),
            reconsume_times: message.reconsume_times(),
            born: message.born_timestamp(),
            stored: message.store_timestamp(),
        }
    }
}

/// The body the peer made of template `java-{i}` for message `i`, padded with `x` to `size`.
fn java_body(line: &Value, size: Option<usize>) -> Vec<u8> {
    let mut body = format!("{}-{}", text(line, "batch"), int(line, "i")).into_bytes();
    if let Some(size) = size {
        body.resize(size, b'x');
    }
    body
}

#[test]
fn java_producer_messages_reach_our_consumer_as_sent() {
    crate::support::block_on(async {
        let topic = Topic::create("interop-j2r", 4);
        let ns = topic.namesrv.clone();
        let mut sent: BTreeMap<String, (Value, Option<usize>)> = BTreeMap::new();
        let mut produce = |batch: &str, extra: &[&str], size: Option<usize>| {
            let body = format!("{batch}-{{i}}");
            let mut args = vec!["produce", "--topic", &topic.name, "--body", &body];
            args.extend_from_slice(extra);
            let lines = JavaPeer::run(&ns, &args);
            let mut count = 0;
            for mut line in lines.into_iter().filter(|l| l.get("msg_id").is_some()) {
                line["batch"] = Value::from(batch);
                sent.insert(text(&line, "msg_id").to_owned(), (line, size));
                count += 1;
            }
            count
        };
        let plain = produce(
            "plain",
            &[
                "--count",
                "40",
                "--tag",
                "TagA",
                "--keys",
                "order",
                "--prop",
                "color=red",
            ],
            None,
        );
        let batched = produce(
            "batch",
            &["--count", "20", "--batch", "5", "--tag", "TagB"],
            None,
        );
        let big = produce("big", &["--count", "4", "--body-size", "6000"], Some(6000));
        let delayed = produce("delayed", &["--count", "3", "--delay-level", "1"], None);
        assert_eq!(
            (plain, batched, big, delayed),
            (40, 20, 4, 3),
            "the peer sent them all"
        );

        let (consumer, _owned) = build_tracked(
            &topic,
            builder::<TokioRuntime>(&topic, &unique("interop-j2r"), "*", ConsumeFrom::First),
        );
        let (running, mut received) = start_forwarding(consumer, Got::of);
        let mut got: BTreeMap<String, Vec<Got>> = BTreeMap::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        while got.len() < sent.len() {
            match tokio::time::timeout_at(deadline, received.next()).await {
                Ok(Some(message)) => got.entry(message.msg_id.clone()).or_default().push(message),
                Ok(None) => panic!("the handler was dropped"),
                Err(_) => panic!(
                    "{} of {} Java messages arrived; missing: {:?}",
                    got.len(),
                    sent.len(),
                    sent.keys()
                        .filter(|id| !got.contains_key(*id))
                        .collect::<Vec<_>>()
                ),
            }
        }
        // Then a quiet spell, to catch duplicates.
        let quiet = tokio::time::Instant::now() + QUIET;
        while let Ok(Some(message)) = tokio::time::timeout_at(quiet, received.next()).await {
            got.entry(message.msg_id.clone()).or_default().push(message);
        }
        drop(running.shutdown().await.expect("our consumer shuts down"));

        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            sent.keys().collect::<Vec<_>>(),
            "exactly Java's msg ids (UNIQ_KEY) arrive"
        );
        for (id, deliveries) in &got {
            assert_eq!(deliveries.len(), 1, "{id} delivered once: {deliveries:?}");
            let message = &deliveries[0];
            let (line, size) = &sent[id];
            assert_eq!(message.body, java_body(line, *size), "{id}: body as sent");
            assert_eq!(message.tags.as_deref(), line["tag"].as_str(), "{id}: tag");
            assert_eq!(message.keys.as_deref(), line["keys"].as_str(), "{id}: keys");
            assert_eq!(message.reconsume_times, 0, "{id}");
            match text(line, "batch") {
                "plain" => assert_eq!(message.color.as_deref(), Some("red"), "{id}: property"),
                "delayed" => {
                    // Level 1 is 1 s: the schedule service stores it again after the delay.
                    assert!(
                        message.stored - message.born >= 1_000,
                        "{id} arrived {} ms after it was born",
                        message.stored - message.born
                    );
                    // Java's ScheduleMessageService keeps the DELAY property on the copy it
                    // stores in the topic; the Rust broker 1.0 drops it.
                    let delay = (broker_impl() != BrokerImpl::Rust).then_some("1");
                    assert_eq!(message.delay.as_deref(), delay, "{id}: DELAY property");
                }
                _ => {}
            }
        }
    });
}
