//! End-to-end benchmark against the local broker (`scripts/broker start`; `NAMESRV_ADDR`,
//! default `127.0.0.1:9876`):
//!
//! 1. fills a fresh 8-queue topic with a backlog (`E2E_MESSAGES`, 30 000, of `E2E_SIZE`, 1024
//!    bytes) with the producer, before anything is timed;
//! 2. drains it in `E2E_RUNS` (7) rounds, each (a) with a bare pull loop: one `PULL_MESSAGE` of
//!    32 in flight per queue and nothing else, the ceiling; (b) with the push consumer on tokio;
//!    (t) the same over TLS (rustls, against the broker's TLS-permissive port, `E2E_TLS=0` to
//!    leave it out); (m) exporting its stats through `metrics` every 100 ms; (r) tracing every
//!    message to the trace topic (`E2E_TRACE=0` to leave it out); (c) on smol; (b1) and (c1) the same on one thread; (j) Apache's Java push
//!    consumer and (k, k32) its lite pull consumer (`scripts/java-peer bench`). The handlers
//!    only count, unless `E2E_HANDLER_US` gives each message that many µs of busy work. "vs
//!    bare" is the median of the per-round ratios. Each drain runs in a child process (this
//!    program re-executed with a role), which reports its wall time, CPU seconds (user + sys,
//!    `/proc/self/stat`) over the drain and peak RSS (`VmHWM`);
//! 3. measures (d) produce-to-consume latency with long polling: a push consumer idle on an
//!    empty topic, messages sent one at a time at a modest rate, latency = receive time - born
//!    timestamp; and (e) the time from starting a process to its first delivered message, for a
//!    new group consuming the backlog from the first offset;
//!
//! then prints one table. Run with `cargo run --release -p rocketmq-benches --bin e2e`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use rocketmq_benches::bare::bare;
use rocketmq_benches::measure::{
    Drain, Report, cpu_seconds, drain_report, read_line_within, smol_threads, spawn_child,
    spawn_java_bench, wait_report,
};
use rocketmq_benches::{env_or, stamp};
use serde_json::{Value, json};

/// Queues of the backlog topic.
const QUEUES: i32 = 8;
/// Messages per pull (the push consumer's default too).
const PULL_BATCH: i32 = 32;
/// Messages per batch while filling, and batches in flight.
const FILL_BATCH: usize = 32;
const FILL_IN_FLIGHT: usize = 8;
/// Latency run: messages, and the pause between two sends.
const LATENCY_MESSAGES: usize = 200;
const LATENCY_INTERVAL: Duration = Duration::from_millis(25);
/// How long a child may take before the benchmark gives up on it.
const CHILD_TIMEOUT: Duration = Duration::from_secs(300);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("child") {
        child(&args[2..]);
    } else {
        parent();
    }
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

fn parent() {
    let namesrv = std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".to_owned());
    if let Err(e) = rmq_cli::admin::cluster_info(&rmq_cli::admin::Cluster::new(namesrv.as_str())) {
        eprintln!(
            "e2e: no name server answers at {namesrv} ({e}); start the local cluster with \
             `scripts/broker start`"
        );
        std::process::exit(2);
    }
    let messages: usize = env_or("E2E_MESSAGES", 30_000);
    let size: usize = env_or("E2E_SIZE", 1024);
    let topic = format!("e2e-{}", stamp());
    let route = rmq_cli::admin::create_topic(
        &rmq_cli::admin::Cluster::new(namesrv.as_str()),
        &topic,
        QUEUES,
    )
    .unwrap_or_else(|e| panic!("create topic {topic}: {e}"));
    let brokers: Vec<&str> = route
        .broker_datas
        .iter()
        .filter_map(|b| b.master_addr())
        .collect();
    eprintln!("e2e: filling {topic} with {messages} messages of {size} B ...");
    let fill = fill(&namesrv, &topic, messages, size);
    eprintln!(
        "e2e: filled in {:.1} s ({:.0} msg/s)",
        fill.as_secs_f64(),
        messages as f64 / fill.as_secs_f64()
    );
    let queues = rmq_cli::admin::offsets(
        &rmq_cli::admin::Cluster::new(namesrv.as_str()),
        "e2e-probe",
        &topic,
    )
    .unwrap_or_else(|e| panic!("offsets of {topic}: {e}"));
    let stored: i64 = queues.iter().map(|q| q.max_offset - q.min_offset).sum();
    assert_eq!(
        stored, messages as i64,
        "the broker holds another number of messages than sent: {queues:?}"
    );

    // A drain takes well under a second, so one run is noisy, and the machine's speed drifts
    // over a minute. So the runs are interleaved in rounds (a, b, c, ..., a, b, c, ...; a new
    // group each time): each consumer's ratio to the bare loop is taken within its round, and
    // the medians of rates and of ratios are shown, with the range of rates beside them.
    // (b1) and (c1) run the same consumers on one thread: the broker shares this machine's
    // cores, and what a consumer costs it in thread hand-offs shows in their difference.
    let repeats: usize = env_or("E2E_RUNS", 7).max(1);
    let mut roles = vec![
        ("(a) bare pull loop", "bare", None),
        ("(b) push consumer, tokio", "tokio", None),
        ("(c) push consumer, smol", "smol", None),
        ("(b1) tokio, 1 worker", "tokio", Some(1)),
        ("(c1) smol, 1 thread", "smol", Some(1)),
    ];
    // The tokio consumer over TLS, against the same broker (E2E_TLS=0 leaves it out, for a
    // broker that does not answer TLS).
    if env_or("E2E_TLS", 1) != 0 {
        roles.insert(2, ("(t) tokio over TLS", "tokio-tls", None));
    }
    // The tokio consumer exporting its stats through `metrics` (every 100 ms, into a
    // recorder), to show what the export costs.
    roles.insert(2, ("(m) tokio, metrics on", "tokio-metrics", None));
    // The tokio consumer tracing every message (Java's message trace) to the broker's trace
    // topic (E2E_TRACE=0 leaves it out, for a broker without `traceTopicEnable`).
    if env_or("E2E_TRACE", 1) != 0 {
        roles.insert(3, ("(r) tokio, message trace on", "tokio-trace", None));
    }
    // Apache's Java client, the peer to beat (E2E_JAVA=0 leaves it out).
    if env_or("E2E_JAVA", 1) != 0 {
        roles.extend(
            JAVA_ROLES
                .iter()
                .map(|(label, role, _)| (*label, *role, None)),
        );
    }
    let mut reports: Vec<Vec<Report>> = roles.iter().map(|_| Vec::new()).collect();
    for round in 1..=repeats {
        eprintln!("e2e: drain round {round} of {repeats} ...");
        for ((_, role, threads), reports) in roles.iter().zip(&mut reports) {
            reports.push(run_child(role, *threads, &namesrv, &topic, messages));
        }
    }
    let runs: Vec<Drain<'_>> = roles
        .iter()
        .zip(&reports)
        .map(|((label, _, _), own)| Drain::of(label, own, &reports[0]))
        .collect();
    eprintln!("e2e: (e) first message of a new group ...");
    let first = first_message(&namesrv, &topic);
    eprintln!("e2e: (d) latency ...");
    let latency = tokio_runtime().block_on(latency(&namesrv));

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!(
        "e2e: {messages} messages x {size} B backlog on {topic} ({QUEUES} queues, broker {}), \
         {cores} cores",
        brokers.join(", ")
    );
    println!(
        "fill (not timed below): {:.1} s, {:.0} msg/s, batches of {FILL_BATCH}, {FILL_IN_FLIGHT} in flight",
        fill.as_secs_f64(),
        messages as f64 / fill.as_secs_f64()
    );
    println!();
    println!(
        "{:<26} {:>9} {:>15} {:>7} {:>8} {:>8} {:>7} {:>11} {:>13}",
        "drain (median of rounds)",
        "msg/s",
        "msg/s range",
        "MB/s",
        "vs bare",
        "wall s",
        "CPU s",
        "CPU µs/msg",
        "peak RSS MiB"
    );
    for Drain {
        label,
        median: r,
        range: (low, high),
        ratio,
    } in &runs
    {
        println!(
            "{label:<26} {:>9.0} {:>15} {:>7.1} {:>7.0}% {:>8.2} {:>7.2} {:>11.1} {:>13.1}",
            r.rate(),
            format!("{low:.0}-{high:.0}"),
            r.bytes as f64 / r.seconds / 1e6,
            100.0 * ratio,
            r.seconds,
            r.cpu_seconds,
            r.cpu_seconds * 1e6 / r.messages as f64,
            r.peak_rss_kb as f64 / 1024.0,
        );
    }
    println!();
    println!(
        "(d) produce->consume latency, long polling, {} messages one at a time every {} ms \
         (tokio): p50 {} ms, p99 {} ms, max {} ms",
        latency.len(),
        LATENCY_INTERVAL.as_millis(),
        percentile(&latency, 50),
        percentile(&latency, 99),
        latency.last().copied().unwrap_or_default(),
    );
    println!(
        "(e) process start -> first delivered message, new group from first (tokio): {:.0} ms \
         (of which {:.0} ms after main() started)",
        first.0.as_secs_f64() * 1e3,
        first.1
    );
    println!(
        "tokio: multi-thread runtime, {cores} workers; smol: global executor with SMOL_THREADS={}; \
         push consumers with the core's defaults (pulls of {PULL_BATCH}, 1 message per handler \
         call, 20 handler calls in flight)",
        smol_threads(cores)
    );
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

/// Sends the backlog, pipelined, and returns how long it took.
fn fill(namesrv: &str, topic: &str, messages: usize, size: usize) -> Duration {
    tokio_runtime().block_on(async {
        let producer = rocketmq_tokio::Producer::builder("e2e-fill")
            .name_server(namesrv)
            .send_timeout(Duration::from_secs(30))
            .build()
            .expect("the producer's configuration is valid");
        let started = Instant::now();
        let body = vec![b'x'; size];
        let batches: Vec<usize> = (0..messages)
            .step_by(FILL_BATCH)
            .map(|start| FILL_BATCH.min(messages - start))
            .collect();
        let producer = &producer;
        let mut sends = futures_util::stream::iter(batches)
            .map(|n| {
                let batch = (0..n).map(|_| body.clone());
                async move { producer.send_batch(topic, batch).await }
            })
            .buffer_unordered(FILL_IN_FLIGHT);
        while let Some(result) = sends.next().await {
            result.unwrap_or_else(|e| panic!("fill {topic}: {e}"));
        }
        started.elapsed()
    })
}

/// The Java client's drains: label, role, and the arguments of `scripts/java-peer bench`.
/// `DefaultMQPushConsumer`'s defaults already match ours (pulls of 32, one message per listener
/// call, 20 consume threads); `DefaultLitePullConsumer` pulls 10 at a time unless told otherwise.
const JAVA_ROLES: [(&str, &str, &[&str]); 3] = [
    ("(j) Java push, defaults", "java-push", &["--mode", "push"]),
    ("(k) Java lite pull", "java-lite", &["--mode", "lite-pull"]),
    (
        "(k32) Java lite, pulls of 32",
        "java-lite32",
        &["--mode", "lite-pull", "--pull-batch-size", "32"],
    ),
];

/// Starts `scripts/java-peer bench` for a Java role (its stdout piped): a new group draining
/// `topic` from the first offset.
fn spawn_java(role: &str, namesrv: &str, topic: &str, messages: usize) -> std::process::Child {
    let (_, _, args) = JAVA_ROLES
        .iter()
        .find(|(_, name, _)| *name == role)
        .unwrap_or_else(|| panic!("{role} is not a Java role"));
    let group = format!("e2e-{role}-{}", stamp());
    spawn_java_bench(args, namesrv, topic, &group, messages, 240)
}

/// Runs a drain child and returns its report.
fn run_child(
    role: &str,
    threads: Option<usize>,
    namesrv: &str,
    topic: &str,
    messages: usize,
) -> Report {
    let child = if role.starts_with("java-") {
        spawn_java(role, namesrv, topic, messages)
    } else {
        spawn_child(role, threads, &[namesrv, topic, &messages.to_string()])
    };
    wait_report(child, role, CHILD_TIMEOUT)
}

/// (e): from spawning a process to its first delivered message; and the child's own time from
/// `main` to that message, in ms.
fn first_message(namesrv: &str, topic: &str) -> (Duration, f64) {
    let started = Instant::now();
    let mut child = spawn_child("first", None, &[namesrv, topic, "1"]);
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let line = read_line_within(stdout, CHILD_TIMEOUT)
        .unwrap_or_else(|| panic!("no first message within {CHILD_TIMEOUT:?}"));
    let elapsed = started.elapsed();
    let status = child.wait().expect("the child is waited for");
    assert!(status.success(), "the first-message child failed: {status}");
    let report: Value = serde_json::from_str(&line).expect("the child reports JSON");
    (
        elapsed,
        report["since_main_ms"].as_f64().unwrap_or(f64::NAN),
    )
}

/// (d): latencies in ms, sorted.
async fn latency(namesrv: &str) -> Vec<i64> {
    let topic = format!("e2e-latency-{}", stamp());
    {
        let (namesrv, topic) = (namesrv.to_owned(), topic.clone());
        tokio::task::spawn_blocking(move || {
            rmq_cli::admin::create_topic(
                &rmq_cli::admin::Cluster::new(namesrv.as_str()),
                &topic,
                QUEUES,
            )
        })
        .await
        .expect("the topic task runs")
        .unwrap_or_else(|e| panic!("create the latency topic: {e}"));
    }
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let assigned = Arc::new(AtomicU64::new(0));
    let running = {
        let latencies = Arc::clone(&latencies);
        let assigned = Arc::clone(&assigned);
        rocketmq_tokio::PushConsumer::builder(format!("e2e-latency-{}", stamp()))
            .name_server(namesrv)
            .subscribe(topic.clone(), "*")
            .consume_from(rocketmq_tokio::ConsumeFrom::First)
            .build()
            .expect("the consumer's configuration is valid")
            .on_event(move |event| {
                if let rocketmq_tokio::Event::Assigned(queues) = event {
                    assigned.fetch_add(queues.len() as u64, Ordering::Relaxed);
                }
            })
            .start_concurrently(move |messages| {
                let latencies = Arc::clone(&latencies);
                async move {
                    let now = unix_ms();
                    let mut latencies = latencies.lock().unwrap_or_else(PoisonError::into_inner);
                    for message in &messages {
                        latencies.push(now - message.born_timestamp());
                    }
                    rocketmq_tokio::ConsumeOutcome::Success
                }
            })
    };
    // Idle: every queue owned and its first pull parked at the broker (long polling).
    let deadline = Instant::now() + Duration::from_secs(60);
    while assigned.load(Ordering::Relaxed) < QUEUES as u64 {
        assert!(
            Instant::now() < deadline,
            "the latency consumer got no queues"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;

    let producer = rocketmq_tokio::Producer::builder("e2e-latency")
        .name_server(namesrv)
        .build()
        .expect("the producer's configuration is valid");
    for i in 0..LATENCY_MESSAGES {
        producer
            .send(&topic, format!("latency {i}"))
            .await
            .unwrap_or_else(|e| panic!("send latency message {i}: {e}"));
        tokio::time::sleep(LATENCY_INTERVAL).await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        if got >= LATENCY_MESSAGES {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {got} of {LATENCY_MESSAGES} latency messages arrived"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = running.shutdown().await;
    let mut latencies = latencies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    latencies.sort_unstable();
    latencies
}

/// The `p`th percentile of sorted `values` (nearest rank).
fn percentile(values: &[i64], p: usize) -> i64 {
    if values.is_empty() {
        return 0;
    }
    let rank = (p * values.len()).div_ceil(100).max(1);
    values[rank.min(values.len()) - 1]
}

// ---------------------------------------------------------------------------------------------
// Children

fn child(args: &[String]) {
    let main_started = Instant::now();
    let arg = |i: usize| {
        args.get(i)
            .unwrap_or_else(|| panic!("child arguments: ROLE NAMESRV TOPIC MESSAGES; got {args:?}"))
            .as_str()
    };
    let (role, namesrv, topic) = (arg(0), arg(1), arg(2));
    let total: u64 = arg(3).parse().expect("MESSAGES is a number");
    let report = match role {
        "bare" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime starts")
            .block_on(bare(namesrv, topic, PULL_BATCH)),
        "tokio" => tokio_runtime().block_on(push::<rocketmq_tokio::TokioRuntime>(
            namesrv,
            topic,
            total,
            None,
            Variant::Plain,
        )),
        "tokio-tls" => tokio_runtime().block_on(push::<rocketmq_tokio::TokioRuntime>(
            namesrv,
            topic,
            total,
            None,
            Variant::Tls,
        )),
        "tokio-metrics" => {
            metrics_util::debugging::DebuggingRecorder::new()
                .install()
                .expect("the child installs the only recorder");
            tokio_runtime().block_on(push::<rocketmq_tokio::TokioRuntime>(
                namesrv,
                topic,
                total,
                None,
                Variant::Metrics,
            ))
        }
        "tokio-trace" => tokio_runtime().block_on(push::<rocketmq_tokio::TokioRuntime>(
            namesrv,
            topic,
            total,
            None,
            Variant::Trace,
        )),
        "smol" => smol::block_on(push::<rocketmq_smol::SmolRuntime>(
            namesrv,
            topic,
            total,
            None,
            Variant::Plain,
        )),
        "first" => tokio_runtime().block_on(push::<rocketmq_tokio::TokioRuntime>(
            namesrv,
            topic,
            1,
            Some(main_started),
            Variant::Plain,
        )),
        other => panic!("unknown child role {other}"),
    };
    println!("{report}");
    if role == "first" {
        // The measurement is taken; shutting the consumer down would only add noise.
        std::process::exit(0);
    }
}

/// Keeps the thread busy for `time` (a handler's own work, `E2E_HANDLER_US` per message).
fn spin(time: Duration) {
    // No work: no clock read either (two a message would be the harness's cost, not the
    // consumer's).
    if time.is_zero() {
        return;
    }
    let until = Instant::now() + time;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// How a push drain's consumer differs from the plain one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Plain,
    /// Over TLS.
    Tls,
    /// Exporting its stats through `metrics` every 100 ms, into a recorder.
    Metrics,
    /// Tracing every message to the broker's trace topic.
    Trace,
}

/// (b), (c), (e): a push consumer of a new group on runtime `R`, from the first offset, until
/// `total` messages were delivered. With `first_since`, reports the time from then to the first
/// delivery instead of a drain.
async fn push<R: driver::Runtime>(
    namesrv: &str,
    topic: &str,
    total: u64,
    first_since: Option<Instant>,
    variant: Variant,
) -> Value {
    let counted = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let handler_work = Duration::from_micros(env_or("E2E_HANDLER_US", 0));
    let (done_tx, mut done) = futures_channel::mpsc::unbounded::<()>();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let running = {
        let counted = Arc::clone(&counted);
        let builder = driver::PushConsumer::<R>::builder(format!("e2e-push-{}", stamp()))
            .name_server(namesrv)
            .subscribe(topic, "*")
            .consume_from(driver::ConsumeFrom::First);
        // Apache's servers are TLS-permissive by default, with a self-signed test-mode
        // certificate: the same broker serves the plain and the TLS drains.
        let builder = match variant {
            Variant::Plain => builder,
            Variant::Tls => {
                builder.tls(driver::Tls::new().dangerous_accept_any_server_certificate())
            }
            Variant::Metrics => builder.metrics(Duration::from_millis(100)),
            Variant::Trace => builder.trace(),
        };
        builder
            .build()
            .expect("the consumer's configuration is valid")
            .start_concurrently(move |messages: driver::Messages| {
                // Counted as the handler gets them (nothing cloned a call); the work, if any,
                // is done in the handler's future, where the consumer runs it.
                let bytes: u64 = messages.iter().map(|m| m.body().len() as u64).sum();
                counted.1.fetch_add(bytes, Ordering::Relaxed);
                let n = messages.len() as u64;
                let before = counted.0.fetch_add(n, Ordering::Relaxed);
                let work = handler_work * messages.len() as u32;
                let last = before < total && before + n >= total;
                let done = last.then(|| done_tx.clone());
                async move {
                    spin(work);
                    if let Some(done) = done {
                        let _ = done.unbounded_send(());
                    }
                    driver::ConsumeOutcome::Success
                }
            })
    };
    done.next().await;
    if let Some(since) = first_since {
        return json!({ "since_main_ms": since.elapsed().as_secs_f64() * 1e3 });
    }
    let report = drain_report(
        counted.0.load(Ordering::Relaxed),
        counted.1.load(Ordering::Relaxed),
        started,
        cpu_before,
    );
    let _ = running.shutdown().await;
    report
}
