//! Pop beside pull against the local 5.x broker (`scripts/broker start --impl java5`;
//! `NAMESRV_ADDR`, default `127.0.0.1:9876`): fills a topic of `E2E_POP_QUEUES` (8) queues and
//! one of a single queue with `E2E_POP_MESSAGES` (5 000) messages of `E2E_SIZE` (1024) bytes,
//! then drains them on tokio, in one process, each drain with a new group:
//!
//! - (p) the push consumer (classic pulls) on the 8-queue topic;
//! - (o) one pop consumer on the 8-queue topic;
//! - (o3) three pop consumers on the 1-queue topic: more members than queues, which pulls
//!   cannot use (one member would own the queue).
//!
//! Handlers only count. Prints each drain's messages a second and wall time. Run with
//! `cargo run --release -p rocketmq-benches --bin e2e_pop`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rocketmq_benches::{env_or, stamp};

/// How long one drain may take.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(600);

fn main() {
    let namesrv = std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".to_owned());
    let messages: u64 = env_or("E2E_POP_MESSAGES", 5_000);
    let size: usize = env_or("E2E_SIZE", 1024);
    let queues: i32 = env_or("E2E_POP_QUEUES", 8);
    let cluster = rmq_cli::admin::Cluster::new(namesrv.as_str());
    if let Err(e) = rmq_cli::admin::cluster_info(&cluster) {
        eprintln!("e2e_pop: no name server answers at {namesrv} ({e}); start a 5.x cluster");
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let wide = format!("e2e-pop-{}", stamp());
    let narrow = format!("e2e-pop1-{}", stamp());
    for (topic, n) in [(&wide, queues), (&narrow, 1)] {
        rmq_cli::admin::create_topic(&cluster, topic, n)
            .unwrap_or_else(|e| panic!("create {topic}: {e}"));
    }
    runtime.block_on(async {
        for topic in [&wide, &narrow] {
            fill(&namesrv, topic, messages, size).await;
        }
        let pull = drain_pull(&namesrv, &wide, messages).await;
        let pop = drain_pop(&namesrv, &wide, messages, 1).await;
        let pop3 = drain_pop(&namesrv, &narrow, messages, 3).await;
        println!("| drain | messages | wall s | msg/s |");
        println!("|---|---|---|---|");
        for (label, took) in [
            (format!("(p) push (pull), {queues} queues, 1 member"), pull),
            (format!("(o) pop, {queues} queues, 1 member"), pop),
            ("(o3) pop, 1 queue, 3 members".to_owned(), pop3),
        ] {
            println!(
                "| {label} | {messages} | {:.2} | {:.0} |",
                took.as_secs_f64(),
                messages as f64 / took.as_secs_f64()
            );
        }
    });
}

async fn fill(namesrv: &str, topic: &str, messages: u64, size: usize) {
    let producer = rocketmq_tokio::Producer::builder("e2e-pop-fill")
        .name_server(namesrv)
        .send_timeout(Duration::from_secs(30))
        .build()
        .expect("the producer's configuration is valid");
    let body = vec![b'x'; size];
    let batches: Vec<u64> = (0..messages)
        .step_by(32)
        .map(|s| 32.min(messages - s))
        .collect();
    let producer = &producer;
    let mut sends = futures_util::stream::iter(batches)
        .map(|n| {
            let batch = (0..n).map(|_| body.clone());
            async move { producer.send_batch(topic, batch).await }
        })
        .buffer_unordered(8);
    while let Some(result) = sends.next().await {
        result.unwrap_or_else(|e| panic!("fill {topic}: {e}"));
    }
}

/// A counter that says when `total` messages were counted.
fn counter(
    total: u64,
) -> (
    Arc<AtomicU64>,
    futures_channel::mpsc::UnboundedReceiver<()>,
    impl Fn(u64) + Clone,
) {
    let counted = Arc::new(AtomicU64::new(0));
    let (done_tx, done) = futures_channel::mpsc::unbounded::<()>();
    let count = {
        let counted = Arc::clone(&counted);
        move |n: u64| {
            let before = counted.fetch_add(n, Ordering::Relaxed);
            if before < total && before + n >= total {
                let _ = done_tx.unbounded_send(());
            }
        }
    };
    (counted, done, count)
}

async fn wait_done(
    mut done: futures_channel::mpsc::UnboundedReceiver<()>,
    counted: &AtomicU64,
    what: &str,
) {
    if tokio::time::timeout(DRAIN_TIMEOUT, done.next())
        .await
        .is_err()
    {
        panic!(
            "{what}: only {} messages within {DRAIN_TIMEOUT:?}",
            counted.load(Ordering::Relaxed)
        );
    }
}

async fn drain_pull(namesrv: &str, topic: &str, total: u64) -> Duration {
    let (counted, done, count) = counter(total);
    let started = Instant::now();
    let running = rocketmq_tokio::PushConsumer::builder(format!("e2e-pull-{}", stamp()))
        .name_server(namesrv)
        .subscribe(topic, "*")
        .consume_from(rocketmq_tokio::ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid")
        .start_concurrently(move |messages: rocketmq_tokio::Messages| {
            count(messages.len() as u64);
            async { rocketmq_tokio::ConsumeOutcome::Success }
        });
    wait_done(done, &counted, "pull drain").await;
    let took = started.elapsed();
    let _ = running.shutdown().await;
    took
}

async fn drain_pop(namesrv: &str, topic: &str, total: u64, members: usize) -> Duration {
    let (counted, done, count) = counter(total);
    let group = format!("e2e-pop-{}", stamp());
    let started = Instant::now();
    let running: Vec<rocketmq_tokio::RunningPopConsumer> = (0..members)
        .map(|i| {
            let count = count.clone();
            rocketmq_tokio::PopConsumer::builder(group.clone())
                .name_server(namesrv)
                .subscribe(topic, "*")
                .instance_name(format!("e2e-pop-{i}"))
                .consume_batch_size(32)
                .max_cached(256, 64 << 20)
                .build()
                .expect("the pop consumer's configuration is valid")
                .start(move |messages: rocketmq_tokio::Messages| {
                    count(messages.len() as u64);
                    async { rocketmq_tokio::ConsumeOutcome::Success }
                })
                .expect("the pop consumer starts")
        })
        .collect();
    wait_done(done, &counted, "pop drain").await;
    let took = started.elapsed();
    for consumer in running {
        let _ = consumer.shutdown().await;
    }
    took
}
