//! The producer's route cache and queue choice (`consumer_core::producer::Routes`): round
//! robin in Java's order, skipping a failed broker; sharding keys pinned to their queue; expiry
//! and invalidation. These live here rather than beside the code because a `Routes` needs an
//! `Instant`, and the core's sources may not read the clock, not even in tests.

use std::time::{Duration, Instant};

use consumer_core::producer::{
    Prepared, ProducerConfig, ProducerMessage, PublishRoute, Routes, SendError, UniqueIds,
    shard_index,
};
use proto::body::{BrokerData, QueueData, TopicRouteData};

fn route(brokers: &[(&str, i32)]) -> TopicRouteData {
    TopicRouteData {
        queue_datas: brokers
            .iter()
            .map(|&(name, queues)| QueueData {
                broker_name: name.to_owned(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: 6,
                topic_sys_flag: 0,
            })
            .collect(),
        broker_datas: brokers
            .iter()
            .enumerate()
            .map(|(i, &(name, _))| BrokerData {
                broker_name: name.to_owned(),
                broker_addrs: [(0, format!("10.0.0.{i}:10911"))].into(),
                ..BrokerData::default()
            })
            .collect(),
        ..TopicRouteData::default()
    }
}

fn prepared(key: Option<&str>) -> Prepared {
    let config = ProducerConfig::new("g", vec!["ns:9876".to_owned()]);
    let mut ids = UniqueIds::new(&[10, 0, 0, 1], 1, 1, 0);
    let mut message = ProducerMessage::new("body");
    if let Some(key) = key {
        message = message.with_sharding_key(key);
    }
    Prepared::single(&config, "T", message, &mut ids, 0).expect("valid message")
}

#[test]
fn round_robin_cycles_and_skips_the_failed_broker() {
    let now = Instant::now();
    let mut routes = Routes::new(Duration::from_secs(30));
    routes.insert(
        "T",
        PublishRoute::new("T", &route(&[("a", 2), ("b", 2)])),
        now,
    );
    let plain = prepared(None);
    let picks: Vec<_> = (0..5)
        .map(|_| {
            let t = routes.choose(&plain, None).expect("route cached");
            (t.queue.broker_name().to_owned(), t.queue.queue_id())
        })
        .collect();
    let expect = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("a", 0)];
    assert_eq!(
        picks,
        expect.map(|(b, q)| (b.to_owned(), q)).to_vec(),
        "round robin in Java's order"
    );
    // Next would be a/1; a just failed, so b/0.
    let retry = routes.choose(&plain, Some("a")).expect("route cached");
    assert_eq!(
        (retry.queue.broker_name(), retry.queue.queue_id()),
        ("b", 0)
    );
    // With one broker only, avoiding it still finds a queue.
    routes.insert("T", PublishRoute::new("T", &route(&[("a", 2)])), now);
    assert!(routes.choose(&plain, Some("a")).is_ok());
}

#[test]
fn a_sharding_key_always_picks_the_same_queue() {
    let now = Instant::now();
    let mut routes = Routes::new(Duration::from_secs(30));
    routes.insert(
        "T",
        PublishRoute::new("T", &route(&[("a", 4), ("b", 4)])),
        now,
    );
    for key in ["order-1", "order-2", "polygenelubricants", "ключ"] {
        let message = prepared(Some(key));
        let first = routes.choose(&message, None).expect("route cached");
        let expected = shard_index(key, 8).expect("8 queues");
        assert_eq!(routes.get("T").expect("cached").targets()[expected], first);
        for _ in 0..5 {
            // Neither interleaved round robin sends nor a failed broker move a key.
            routes.choose(&prepared(None), None).expect("route cached");
            assert_eq!(routes.choose(&message, Some("a")).as_ref(), Ok(&first));
        }
    }
}

#[test]
fn routes_expire_and_invalidate() {
    let start = Instant::now();
    let ttl = Duration::from_secs(30);
    let mut routes = Routes::new(ttl);
    assert!(routes.needs_fetch("T", start));
    assert_eq!(
        routes.choose(&prepared(None), None),
        Err(SendError::NoRoute {
            topic: "T".to_owned()
        })
    );
    routes.insert("T", PublishRoute::new("T", &route(&[("a", 1)])), start);
    assert!(!routes.needs_fetch("T", start + Duration::from_secs(29)));
    assert!(routes.needs_fetch("T", start + ttl));
    routes.invalidate("T");
    assert!(routes.needs_fetch("T", start));
    routes.insert("T", PublishRoute::default(), start);
    assert_eq!(
        routes.choose(&prepared(None), None),
        Err(SendError::NoWritableQueue {
            topic: "T".to_owned()
        })
    );
}
