//! The lite pull consumer read the careful way, against the local broker (`scripts/broker
//! start`; `NAMESRV_ADDR`, default `127.0.0.1:9876`): `commit` after every message, so nothing
//! read goes uncommitted. Each commit first hands the unread rest of the stream's batch back to
//! the core; what that costs shows beside the same backlog read with one commit at the end.
//!
//! Fills a fresh 4-queue topic with `LITE_MESSAGES` (2 000) small messages, then reads it with
//! a new group each time: (a) one commit at the end, (b) a commit after every message; batches
//! of 32 (the default). Prints messages/s and milliseconds per message of each, median of
//! `LITE_RUNS` (3). Run with `cargo run --release -p rocketmq-benches --bin lite_commit`.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rocketmq_benches::{env_or, stamp};
use rocketmq_tokio::{ConsumeFrom, LitePullConsumer, Producer};

const QUEUES: i32 = 4;

/// Reads `messages` from `topic` with a new group, committing after every message when
/// `every` is set, once at the end otherwise; returns the time from the first read to the
/// last commit.
async fn read(namesrv: &str, topic: &str, messages: usize, every: bool) -> Duration {
    let mut pull = LitePullConsumer::builder(format!("lite-commit-{}", stamp()))
        .name_server(namesrv)
        .subscribe(topic, "*")
        .consume_from(ConsumeFrom::First)
        .auto_commit(false)
        .build()
        .expect("the consumer's configuration is valid");
    let mut started = None;
    for read in 0..messages {
        let next = tokio::time::timeout(Duration::from_secs(60), pull.next()).await;
        let Ok(Some(_)) = next else {
            panic!("only {read} of {messages} messages read within 60 s");
        };
        started.get_or_insert_with(Instant::now);
        if every {
            pull.commit().await.expect("commit");
        }
    }
    if !every {
        pull.commit().await.expect("commit");
    }
    let took = started.map_or(Duration::ZERO, |s| s.elapsed());
    drop(pull.shutdown().await);
    took
}

fn main() {
    let namesrv = std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".to_owned());
    let messages = env_or("LITE_MESSAGES", 2_000);
    let runs = env_or("LITE_RUNS", 3).max(1);
    let topic = format!("lite-commit-{}", stamp());
    rmq_cli::admin::create_topic(
        &rmq_cli::admin::Cluster::new(namesrv.as_str()),
        &topic,
        QUEUES,
    )
    .unwrap_or_else(|e| panic!("create topic {topic} (is the cluster up?): {e}"));
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime starts");
    runtime.block_on(async {
        let producer = Producer::builder("lite-commit-fill")
            .name_server(namesrv.as_str())
            .build()
            .expect("the producer's configuration is valid");
        for start in (0..messages).step_by(32) {
            let batch = (start..messages.min(start + 32)).map(|i| format!("m {i}"));
            producer
                .send_batch(&topic, batch)
                .await
                .unwrap_or_else(|e| panic!("fill {topic}: {e}"));
        }
    });
    println!("lite_commit: {messages} messages on {topic} ({QUEUES} queues), median of {runs}");
    for (label, every) in [
        ("(a) one commit at the end", false),
        ("(b) commit every message", true),
    ] {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| runtime.block_on(read(&namesrv, &topic, messages, every)))
            .collect();
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "{label:<28} {:>9.0} msg/s {:>8.3} ms/msg",
            messages as f64 / median.as_secs_f64(),
            median.as_secs_f64() * 1e3 / messages as f64
        );
    }
}
