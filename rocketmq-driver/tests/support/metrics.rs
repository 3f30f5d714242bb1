//! A push consumer with `metrics(interval)` on the real broker exports its stats through the
//! `metrics` facade: once it consumed what was sent, the installed recorder holds the message
//! counter at the number sent, zero lag per queue and in total, the open broker connection,
//! and one consume-latency sample per message.

use std::sync::OnceLock;
use std::time::Duration;

use super::broker_scenario::{Topic, WAIT, build_tracked, builder, sleep, start_forwarding};
use driver::prelude::*;
use futures_util::StreamExt;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};
use rocketmq_tests::unique;

const MESSAGES: u64 = 30;

/// The recorder of this test binary, installed once.
fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder
            .install()
            .expect("no other recorder is installed in this test binary");
        snapshotter
    })
}

/// What the recorder holds for `group`: metric name and other labels with the value.
fn exported(group: &str, histograms: &mut Vec<(String, f64)>) -> Vec<(String, String, f64)> {
    let mut values = Vec::new();
    for (key, _, _, value) in snapshotter().snapshot().into_vec() {
        let (kind, key): (MetricKind, _) = CompositeKey::into_parts(key);
        let _ = kind;
        if !key
            .labels()
            .any(|l| l.key() == "group" && l.value() == group)
        {
            continue;
        }
        let labels: Vec<String> = key
            .labels()
            .filter(|l| l.key() != "group")
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = key.name().to_owned();
        match value {
            DebugValue::Counter(v) => values.push((name, labels.join(","), v as f64)),
            DebugValue::Gauge(v) => values.push((name, labels.join(","), v.into_inner())),
            DebugValue::Histogram(samples) => {
                histograms.extend(samples.into_iter().map(|s| (name.clone(), s.into_inner())));
            }
        }
    }
    values
}

pub(crate) async fn stats_reach_the_recorder<R: Runtime>(prefix: &str) {
    snapshotter();
    let topic = Topic::create(&format!("{prefix}-metrics"), 2);
    let group = unique(&format!("{prefix}-metrics"));
    let (consumer, _owned) = build_tracked(
        &topic,
        builder::<R>(&topic, &group, "*", ConsumeFrom::First).metrics(Duration::from_millis(200)),
    );
    let (running, mut bodies) = start_forwarding(consumer, |m| m.queue_id());
    topic.send("metrics", MESSAGES as usize, None);
    for _ in 0..MESSAGES {
        bodies
            .next()
            .await
            .expect("the handler forwards every message");
    }

    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    let mut histograms = Vec::new();
    let settled = loop {
        let values = exported(&group, &mut histograms);
        let get = |name: &str, labels: &str| {
            values
                .iter()
                .find(|(n, l, _)| n == name && l == labels)
                .map(|(_, _, v)| *v)
        };
        let queue_lag = |q: i32| {
            get(
                "rocketmq_consumer_queue_lag",
                &format!(
                    "topic={},broker={},queue={q}",
                    topic.name,
                    topic.broker_name()
                ),
            )
        };
        let consumed = histograms
            .iter()
            .filter(|(n, _)| n == "rocketmq_consumer_consume_latency_seconds")
            .count() as u64;
        let done = get("rocketmq_consumer_messages_total", "") == Some(MESSAGES as f64)
            && get("rocketmq_consumer_lag", "") == Some(0.0)
            && queue_lag(0) == Some(0.0)
            && queue_lag(1) == Some(0.0)
            && get("rocketmq_consumer_connections", "state=connected").is_some_and(|n| n >= 1.0)
            && consumed == MESSAGES;
        if done {
            break values;
        }
        assert!(
            runtime.now() < deadline,
            "the recorder did not settle within {WAIT:?}: {values:?}, {consumed} consume samples"
        );
        sleep::<R>(Duration::from_millis(200)).await;
    };
    assert!(
        histograms
            .iter()
            .all(|(_, seconds)| (0.0..10.0).contains(seconds)),
        "latencies in seconds: {histograms:?}"
    );
    assert!(
        settled
            .iter()
            .any(|(n, _, v)| n == "rocketmq_consumer_pulls_total" && *v >= 1.0),
        "{settled:?}"
    );
    drop(running.shutdown().await);
}
