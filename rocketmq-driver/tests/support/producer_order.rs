//! The `Producer` against the real local broker, written once and run by each adapter's tests
//! (they include this file with `#[path]`):
//!
//! - sharded sends: [`KEYS`] keys, each sent [`PER_KEY`] times in sequence while the keys run
//!   concurrently (so sends are pipelined on one connection); every message of a key goes to
//!   the queue its hash names, at increasing offsets;
//! - a batch with a sharding key lands as consecutive offsets of that key's queue;
//! - round robin without a key visits every writable queue equally;
//! - a push consumer on the same runtime then reads everything back: per key, one queue, and
//!   the queue order is the send order;
//! - a topic the name server does not know yet is created by the broker on the first send,
//!   through the default topic's route (`TBW102`), as Java's producer does it.
//!
//! Needs `scripts/broker start` and `NAMESRV_ADDR`; fails (never skips) without them.

use std::collections::{BTreeMap, BTreeSet};

use super::broker_scenario::{self, WAIT, body_of, builder_at, start_forwarding};
use consumer_core::producer::shard_index;
use driver::prelude::*;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::{namesrv, route, unique};

/// Queues of the test topic.
const QUEUES: usize = 8;
/// Sharding keys.
const KEYS: usize = 6;
/// Messages sent per key, one after the other.
const PER_KEY: usize = 25;
/// Messages in the sharded batch.
const BATCH: usize = 5;

/// What a received message says about itself.
#[derive(Debug)]
struct Received {
    key: Option<String>,
    seq: usize,
    queue_id: i32,
    offset: i64,
}

/// Runs the whole scenario on runtime `R`.
pub(crate) async fn sharded_sends_keep_per_key_order<R: Runtime>(prefix: &str) {
    let namesrv = namesrv();
    let topic = unique(prefix);
    rmq_cli::admin::create_topic(
        &rmq_cli::admin::Cluster::new(namesrv.as_str()),
        &topic,
        QUEUES as i32,
    )
    .unwrap_or_else(|e| panic!("create topic {topic}: {e}"));
    let producer = driver::Producer::<R>::builder(unique("producer-test"))
        .name_server(namesrv.clone())
        .build()
        .expect("the producer's configuration is valid");

    // Sharded: keys in parallel, each key's messages one after the other.
    let chains = (0..KEYS).map(|k| {
        let producer = producer.clone();
        let topic = topic.clone();
        async move {
            let key = format!("key-{k}");
            let mut results = Vec::new();
            for seq in 0..PER_KEY {
                let message = ProducerMessage::new(format!("{key}/{seq}")).with_sharding_key(&key);
                let result = producer
                    .send(&topic, message)
                    .await
                    .unwrap_or_else(|e| panic!("send {key}/{seq}: {e}"));
                results.push(result);
            }
            (key, results)
        }
    });
    let sent: Vec<(String, Vec<SendResult>)> = future::join_all(chains).await;
    let mut key_queue = BTreeMap::new();
    for (key, results) in &sent {
        let expected = i32::try_from(shard_index(key, QUEUES).expect("queues exist"))
            .expect("a queue index fits in i32");
        for (seq, result) in results.iter().enumerate() {
            assert_eq!(result.status, SendStatus::Ok, "{key}/{seq}: {result:?}");
            assert_eq!(result.queue.topic(), topic);
            assert_eq!(
                result.queue.queue_id(),
                expected,
                "{key}/{seq} went to queue {} instead of its hash's queue {expected}",
                result.queue.queue_id()
            );
            assert_eq!(result.msg_ids.len(), 1);
            assert_eq!(result.offset_msg_ids.len(), 1);
        }
        let offsets: Vec<i64> = results.iter().map(|r| r.queue_offset).collect();
        assert!(
            offsets.windows(2).all(|w| w[0] < w[1]),
            "{key}: offsets not increasing in send order: {offsets:?}"
        );
        key_queue.insert(key.clone(), expected);
    }

    // A sharded batch: one queue, consecutive offsets.
    let batch_key = "key-batch";
    let batch = (0..BATCH)
        .map(|seq| ProducerMessage::new(format!("{batch_key}/{seq}")).with_sharding_key(batch_key));
    let result = producer
        .send_batch(&topic, batch)
        .await
        .unwrap_or_else(|e| panic!("send the batch: {e}"));
    let batch_queue =
        i32::try_from(shard_index(batch_key, QUEUES).expect("queues exist")).expect("fits");
    assert_eq!(result.queue.queue_id(), batch_queue, "{result:?}");
    assert_eq!(result.msg_ids.len(), BATCH, "{result:?}");
    assert_eq!(result.offset_msg_ids.len(), BATCH, "{result:?}");
    key_queue.insert(batch_key.to_owned(), batch_queue);

    // Round robin: every queue once per turn.
    let mut per_queue = BTreeMap::<i32, usize>::new();
    for seq in 0..2 * QUEUES {
        let result = producer
            .send(&topic, format!("rr/{seq}"))
            .await
            .unwrap_or_else(|e| panic!("send rr/{seq}: {e}"));
        *per_queue.entry(result.queue.queue_id()).or_default() += 1;
    }
    assert_eq!(
        per_queue,
        (0..QUEUES as i32).map(|q| (q, 2)).collect(),
        "round robin spreads evenly"
    );

    let fresh = unique("auto-created");
    let created = producer
        .send(&fresh, "first")
        .await
        .unwrap_or_else(|e| panic!("a new topic is created on its first send: {e}"));
    assert_eq!(created.queue.topic(), fresh, "{created:?}");
    assert_eq!(created.queue_offset, 0, "{created:?}");
    // The broker registers the topic it created; its route has Java's default 4 queues.
    let deadline = std::time::Instant::now() + WAIT;
    let fresh_route = loop {
        if let Some(found) = route(&namesrv, &fresh) {
            break found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{fresh} never reached the name server"
        );
        broker_scenario::sleep::<R>(std::time::Duration::from_millis(200)).await;
    };
    let write_queues: i32 = fresh_route
        .queue_datas
        .iter()
        .map(|q| q.write_queue_nums)
        .sum();
    assert_eq!(write_queues, 4, "{fresh_route:?}");
    producer.close();
    assert_eq!(
        producer.send(&topic, "late").await,
        Err(SendError::Closed),
        "a closed producer refuses sends"
    );

    let expected_total = KEYS * PER_KEY + BATCH + 2 * QUEUES;
    let received = consume_all::<R>(&namesrv, &topic, expected_total).await;
    let mut by_key = BTreeMap::<String, Vec<&Received>>::new();
    for message in &received {
        if let Some(key) = &message.key {
            by_key.entry(key.clone()).or_default().push(message);
        }
    }
    assert_eq!(
        by_key.keys().cloned().collect::<BTreeSet<_>>(),
        key_queue.keys().cloned().collect::<BTreeSet<_>>(),
        "every sharding key came back"
    );
    for (key, mut messages) in by_key {
        let queue = key_queue[&key];
        assert!(
            messages.iter().all(|m| m.queue_id == queue),
            "{key}: messages outside queue {queue}: {messages:?}"
        );
        messages.sort_by_key(|m| m.offset);
        let seqs: Vec<usize> = messages.iter().map(|m| m.seq).collect();
        let in_order: Vec<usize> = (0..seqs.len()).collect();
        assert_eq!(seqs, in_order, "{key}: queue order differs from send order");
    }
    let round_robin = received.iter().filter(|m| m.key.is_none()).count();
    assert_eq!(round_robin, 2 * QUEUES);
    eprintln!(
        "{} messages sent and read back; key -> queue: {key_queue:?}",
        received.len()
    );
}

/// Consumes `topic` from its first offset with a new group until `count` distinct messages
/// arrived, and returns them.
async fn consume_all<R: Runtime>(namesrv: &str, topic: &str, count: usize) -> Vec<Received> {
    let group = unique("producer-test-consumer");
    let consumer = builder_at::<R>(namesrv, topic, &group, "*", ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid");
    let (running, mut rx) = start_forwarding(consumer, |message| {
        let body = body_of(message);
        let seq = body
            .rsplit('/')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no sequence number in {body:?}"));
        Received {
            key: message
                .property(consumer_core::producer::SHARDING_KEY)
                .map(str::to_owned),
            seq,
            queue_id: message.queue_id(),
            offset: message.queue_offset(),
        }
    });
    let runtime = R::default();
    let mut deadline = runtime.sleep_until(runtime.now() + WAIT);
    let mut received = BTreeMap::new();
    while received.len() < count {
        match future::select(rx.next(), deadline.as_mut()).await {
            Either::Left((Some(message), _)) => {
                received.insert((message.queue_id, message.offset), message);
            }
            Either::Left((None, _)) => panic!("the handler was dropped while consuming"),
            Either::Right(((), _)) => panic!(
                "only {} of {count} messages came back within {WAIT:?}",
                received.len()
            ),
        }
    }
    running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    received.into_values().collect()
}
