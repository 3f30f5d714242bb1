//! The client's ceiling: how fast each way of consuming drains a broker that costs next to
//! nothing ([`InstantBroker`], in this process), so that what is measured is the client alone.
//!
//! Each drain runs in a fresh child process (this program re-executed with a role), a new group
//! reading a topic from its first offset until it has every message. The child reports, from
//! its first delivery to its last: the wall time, its CPU time (user + system, the process CPU
//! clock), its peak RSS (`VmHWM`), and the calls to and bytes from its global allocator (a
//! counting wrapper around the system's, the default feature `count-allocations`). The bare
//! pull loop (frames decoded, nothing else) is the baseline: every row's "vs bare" is the
//! median of its per-round ratios to the bare loop's rate in the same round. "broker µs" is
//! this process's own CPU over the drain (the instant broker's threads, and spawning the child)
//! per message: it shows what the broker costs.
//!
//! The default run (about 70 s on two cores): the main table at 100 B and 1 KiB bodies,
//! 8 queues, pulls of 32, every row, `CEILING_RUNS` (5) interleaved rounds; then a sweep of the
//! bare loop and the tokio push consumer at 100 B over 1, 8 and 64 queues and pulls of 1, 8 and
//! 32, one round. Variables: `CEILING_MESSAGES` (300 000 a drain in the main table),
//! `CEILING_RUNS`, `CEILING_SIZES` (`100,1024`), `CEILING_ROWS` (roles to run besides `bare`,
//! comma-separated: `tokio,tokio1,smol,smol1,orderly,lite,rmq-null,rmq-file`, and `java`, Apache's
//! push consumer, which runs only when named), `CEILING_SWEEP=0` to leave the sweep out.
//!
//! Run with `cargo run --release -p rocketmq-benches --bin ceiling`.
//!
//! To profile one drain, `ceiling serve [MESSAGES] [SIZE]` runs the instant broker alone with a
//! topic of 8 queues and prints the child command that drains it, to run under `perf record`.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rocketmq_benches::bare::bare;
use rocketmq_benches::env_or;
use rocketmq_benches::instant::InstantBroker;
use rocketmq_benches::measure::{
    Drain, Report, cpu_seconds, peak_rss_kb, spawn_child, spawn_java_bench, wait_report,
};
use serde_json::{Value, json};

/// The counting allocator (the `count-allocations` feature, on by default): a few atomic adds
/// on every allocation, about 8 % of the push consumer's rate here; without the feature the
/// rates are the allocator's own and the allocation columns are empty.
#[cfg(feature = "count-allocations")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Queues of the main table's topics.
const QUEUES: i32 = 8;
/// Messages per pull in the main table (the consumers' default).
const PULL_BATCH: i32 = 32;
/// How long a child may take before the benchmark gives up on it.
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

/// A row of the table: its label, the child's role, and its runtime's threads (`None`: the
/// runtime's default).
struct Row {
    label: &'static str,
    role: &'static str,
    threads: Option<usize>,
    /// The name `CEILING_ROWS` selects it by.
    key: &'static str,
}

const ROWS: [Row; 10] = [
    Row {
        label: "bare pull loop",
        role: "bare",
        threads: None,
        key: "bare",
    },
    Row {
        label: "push, tokio",
        role: "tokio",
        threads: None,
        key: "tokio",
    },
    Row {
        label: "push, tokio, 1 worker",
        role: "tokio",
        threads: Some(1),
        key: "tokio1",
    },
    Row {
        label: "push, smol",
        role: "smol",
        threads: None,
        key: "smol",
    },
    Row {
        label: "push, smol, 1 thread",
        role: "smol",
        threads: Some(1),
        key: "smol1",
    },
    Row {
        label: "orderly, tokio",
        role: "orderly",
        threads: None,
        key: "orderly",
    },
    Row {
        label: "lite pull stream, tokio",
        role: "lite",
        threads: None,
        key: "lite",
    },
    Row {
        label: "rmq consume > /dev/null",
        role: "rmq-null",
        threads: None,
        key: "rmq-null",
    },
    Row {
        label: "rmq consume > file",
        role: "rmq-file",
        threads: None,
        key: "rmq-file",
    },
    // Only when `CEILING_ROWS` names it: it needs Java and `scripts/java-peer`'s build.
    Row {
        label: "Java push 4.9.7 *",
        role: JAVA_PUSH,
        threads: None,
        key: JAVA_PUSH,
    },
];

/// The row of Apache's Java push consumer (`DefaultMQPushConsumer`, its defaults, on the JVM
/// settings of `scripts/java-peer`, as in `e2e`).
const JAVA_PUSH: &str = "java";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("child") => child(&args[2..]),
        Some("serve") => serve(&args[2..]),
        _ => parent(),
    }
}

// ---------------------------------------------------------------------------------------------
// The parent: the broker, the drains, the tables.

/// A child's report, and this process's CPU seconds while it ran.
struct Run {
    report: Report,
    broker_cpu_seconds: f64,
}

fn parent() {
    let started = Instant::now();
    let broker = InstantBroker::start().expect("the instant broker listens on loopback");
    let addr = broker.addr();
    let messages: i64 = env_or("CEILING_MESSAGES", 300_000_i64).max(i64::from(QUEUES));
    let runs: usize = env_or("CEILING_RUNS", 5).max(1);
    let sizes: Vec<usize> = std::env::var("CEILING_SIZES")
        .unwrap_or_else(|_| "100,1024".to_owned())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("CEILING_SIZES: body sizes in bytes")
        })
        .collect();
    let selected: Option<Vec<String>> = std::env::var("CEILING_ROWS")
        .ok()
        .map(|s| s.split(',').map(|r| r.trim().to_owned()).collect());
    let rows: Vec<&Row> = ROWS
        .iter()
        .filter(|row| match &selected {
            _ if row.key == "bare" => true,
            Some(keys) => keys.iter().any(|k| k == row.key),
            None => row.key != JAVA_PUSH,
        })
        .collect();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());

    let per_queue = messages / i64::from(QUEUES);
    let mut tables = Vec::new();
    for &size in &sizes {
        let topic = format!("ceiling-{size}");
        broker.add_topic(&topic, QUEUES, per_queue, size);
        let total = per_queue * i64::from(QUEUES);
        let mut by_row: Vec<Vec<Run>> = rows.iter().map(|_| Vec::new()).collect();
        for round in 1..=runs {
            eprintln!("ceiling: {size} B, round {round} of {runs} ...");
            for (row, own) in rows.iter().zip(&mut by_row) {
                own.push(run_child(row, &addr, &topic, total, PULL_BATCH));
            }
        }
        tables.push((size, total, by_row));
    }

    let mut sweep = Vec::new();
    if env_or("CEILING_SWEEP", 1) != 0 {
        let sweep_rows: Vec<&Row> = ROWS
            .iter()
            .filter(|r| r.key == "bare" || r.key == "tokio")
            .collect();
        for queues in [1, 8, 64] {
            for batch in [1, 8, 32] {
                // Pulls of one message cost a round trip each: fewer of them keep the sweep short.
                let total = (messages * i64::from(batch) / 32).max(20_000);
                let per_queue = (total / i64::from(queues)).max(1);
                let topic = format!("ceiling-sweep-{queues}q-{batch}b");
                broker.add_topic(&topic, queues, per_queue, 100);
                eprintln!("ceiling: sweep, {queues} queues, pulls of {batch} ...");
                let runs: Vec<Run> = sweep_rows
                    .iter()
                    .map(|row| run_child(row, &addr, &topic, per_queue * i64::from(queues), batch))
                    .collect();
                sweep.push((queues, batch, runs));
            }
        }
    }

    println!();
    println!(
        "ceiling: the instant broker on {addr}, {cores} cores, {QUEUES} queues, pulls of \
         {PULL_BATCH}, {runs} interleaved rounds (median run shown; each drain a new child \
         process, measured from its first delivery to its last)"
    );
    for (size, total, by_row) in &tables {
        println!();
        println!("{total} messages x {size} B");
        print_header("drain");
        let bare_reports: Vec<Report> = by_row[0].iter().map(|r| r.report).collect();
        for (row, own) in rows.iter().zip(by_row) {
            let reports: Vec<Report> = own.iter().map(|r| r.report).collect();
            let drain = Drain::of(row.label, &reports, &bare_reports);
            let broker_cpu = median(own.iter().map(|r| r.broker_cpu_seconds).collect());
            print_row(&drain, broker_cpu);
        }
    }
    if !sweep.is_empty() {
        println!();
        println!("sweep: 100 B, one round; the tokio push consumer against the bare loop");
        println!(
            "{:<8} {:>6} {:>10} {:>10} {:>8} {:>10} {:>10} {:>9}",
            "queues", "pull", "bare msg/s", "tokio", "vs bare", "bare µs", "tokio µs", "alloc/msg"
        );
        for (queues, batch, runs) in &sweep {
            let (bare, tokio) = (&runs[0].report, &runs[1].report);
            println!(
                "{queues:<8} {batch:>6} {:>10.0} {:>10.0} {:>7.0}% {:>10.2} {:>10.2} {:>9}",
                bare.rate(),
                tokio.rate(),
                100.0 * tokio.rate() / bare.rate(),
                cpu_per_message(bare),
                cpu_per_message(tokio),
                per_message(tokio.allocations.map(|(calls, _)| calls), tokio, 2),
            );
        }
    }
    println!();
    println!(
        "tokio: multi-thread runtime, {cores} workers unless 1; smol: global executor with \
         SMOL_THREADS={cores} unless 1; consumers with the core's defaults (1 message per \
         handler call, 20 handler calls in flight) and handlers that only count; rmq consume \
         prints each message's JSON line and flushes it, as the CLI does"
    );
    if rows.iter().any(|row| row.role == JAVA_PUSH) {
        println!(
            "* Java's clock and CPU count start just before the consumer's start(), so its \
             rebalance is inside them (the JVM's own start is not); its allocations are not counted"
        );
    }
    let unsupported = broker.unsupported();
    if !unsupported.is_empty() {
        println!(
            "the instant broker refused requests it does not know (code: times): {unsupported:?}"
        );
    }
    eprintln!(
        "ceiling: {} pulls answered, done in {:.0} s",
        broker.pulls(),
        started.elapsed().as_secs_f64()
    );
}

/// Serves a topic of `MESSAGES` (1 000 000) messages of `SIZE` (100) bytes until killed, and
/// prints how to drain it.
fn serve(args: &[String]) {
    let messages: i64 = args.first().map_or(1_000_000, |m| {
        m.parse()
            .expect("ceiling serve [MESSAGES] [SIZE]: MESSAGES is a number")
    });
    let size: usize = args.get(1).map_or(100, |s| {
        s.parse()
            .expect("ceiling serve [MESSAGES] [SIZE]: SIZE is a number")
    });
    let broker = InstantBroker::start().expect("the instant broker listens on loopback");
    let topic = format!("ceiling-{size}");
    let per_queue = messages / i64::from(QUEUES);
    broker.add_topic(&topic, QUEUES, per_queue, size);
    let exe = std::env::current_exe().expect("the benchmark knows its own path");
    println!(
        "ceiling: serving {topic} ({QUEUES} queues of {per_queue} messages of {size} B) on {}; \
         drain it (a new group each time) with:\n  {} child tokio {} {topic} {} {PULL_BATCH}\n\
         (roles: bare tokio smol orderly lite rmq-null rmq-file)",
        broker.addr(),
        exe.display(),
        broker.addr(),
        per_queue * i64::from(QUEUES),
    );
    loop {
        std::thread::park();
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn cpu_per_message(report: &Report) -> f64 {
    report.cpu_seconds * 1e6 / report.messages as f64
}

fn print_header(first: &str) {
    println!(
        "{first:<26} {:>9} {:>17} {:>8} {:>7} {:>9} {:>9} {:>9} {:>8}",
        "msg/s", "msg/s range", "vs bare", "CPU µs", "broker µs", "alloc/msg", "B/msg", "RSS MiB"
    );
}

/// `count` per message of `report`'s drain with `decimals`, or "-" when it was not counted.
fn per_message(count: Option<u64>, report: &Report, decimals: usize) -> String {
    count.map_or_else(
        || "-".to_owned(),
        |n| format!("{:.decimals$}", n as f64 / report.messages as f64),
    )
}

fn print_row(drain: &Drain<'_>, broker_cpu_seconds: f64) {
    let r = drain.median;
    println!(
        "{:<26} {:>9.0} {:>17} {:>7.0}% {:>7.2} {:>9.2} {:>9} {:>9} {:>8.1}",
        drain.label,
        r.rate(),
        format!("{:.0}-{:.0}", drain.range.0, drain.range.1),
        100.0 * drain.ratio,
        cpu_per_message(r),
        broker_cpu_seconds * 1e6 / r.messages as f64,
        per_message(r.allocations.map(|(calls, _)| calls), r, 2),
        per_message(r.allocations.map(|(_, bytes)| bytes), r, 0),
        r.peak_rss_kb as f64 / 1024.0,
    );
}

fn run_child(row: &Row, addr: &str, topic: &str, messages: i64, batch: i32) -> Run {
    let cpu_before = cpu_seconds();
    let child = if row.role == JAVA_PUSH {
        let group = format!("ceiling-java-{}", rocketmq_benches::stamp());
        let count = usize::try_from(messages).expect("a drain's size fits");
        let args = ["--mode", "push", "--pull-batch-size", &batch.to_string()];
        spawn_java_bench(&args, addr, topic, &group, count, CHILD_TIMEOUT.as_secs())
    } else {
        spawn_child(
            row.role,
            row.threads,
            &[addr, topic, &messages.to_string(), &batch.to_string()],
        )
    };
    let report = wait_report(child, row.label, CHILD_TIMEOUT);
    assert_eq!(
        report.messages, messages as u64,
        "the {} child delivered another number of messages",
        row.label
    );
    Run {
        report,
        broker_cpu_seconds: cpu_seconds() - cpu_before,
    }
}

// ---------------------------------------------------------------------------------------------
// The children.

fn child(args: &[String]) {
    let arg = |i: usize| {
        args.get(i)
            .unwrap_or_else(|| {
                panic!("child arguments: ROLE ADDR TOPIC MESSAGES BATCH; got {args:?}")
            })
            .as_str()
    };
    let (role, addr, topic) = (arg(0), arg(1), arg(2));
    let total: u64 = arg(3).parse().expect("MESSAGES is a number");
    let batch: i32 = arg(4).parse().expect("BATCH is a number");
    let (tally, finished) = Tally::new(total);
    let tally = Arc::new(tally);
    let group = format!("ceiling-{role}-{}", rocketmq_benches::stamp());
    let source = Source {
        addr,
        topic,
        group: &group,
        batch,
    };
    let report = match role {
        "bare" => {
            let before = Mark::now();
            let mut report = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime starts")
                .block_on(bare(addr, topic, batch));
            let after = Mark::now();
            if let (Some(before), Some(after)) = (before.allocated, after.allocated) {
                report["allocations"] = json!(after.0 - before.0);
                report["allocated_bytes"] = json!(after.1 - before.1);
            }
            report
        }
        "tokio" | "orderly" => tokio_runtime().block_on(push::<rocketmq_tokio::TokioRuntime>(
            &source,
            role == "orderly",
            &tally,
            finished,
        )),
        "smol" => smol::block_on(push::<rocketmq_smol::SmolRuntime>(
            &source, false, &tally, finished,
        )),
        "lite" => tokio_runtime().block_on(lite(&source, &tally)),
        "rmq-null" => rmq_consume(&source, &tally, None),
        "rmq-file" => {
            let path = std::env::temp_dir().join(format!("{group}.jsonl"));
            let report = rmq_consume(&source, &tally, Some(&path));
            let _ = std::fs::remove_file(&path);
            report
        }
        other => panic!("unknown child role {other}"),
    };
    println!("{report}");
    // The measurement is taken and reported: a graceful shutdown would only make the drains
    // slower to follow each other.
    std::process::exit(0);
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

/// A moment of a drain: the time, this process's CPU seconds, and its allocator's counts.
#[derive(Clone, Copy, Debug)]
struct Mark {
    at: Instant,
    cpu_seconds: f64,
    /// Allocations and reallocations so far, and the bytes allocated so far (reallocations'
    /// growth included), when they are counted.
    allocated: Option<(u64, u64)>,
}

impl Mark {
    fn now() -> Self {
        Self {
            at: Instant::now(),
            cpu_seconds: cpu_seconds(),
            allocated: allocated(),
        }
    }
}

#[cfg(feature = "count-allocations")]
fn allocated() -> Option<(u64, u64)> {
    let stats = GLOBAL.stats();
    let calls = stats.allocations + stats.reallocations;
    let bytes = stats
        .bytes_allocated
        .saturating_add(usize::try_from(stats.bytes_reallocated).unwrap_or(0));
    Some((calls as u64, bytes as u64))
}

#[cfg(not(feature = "count-allocations"))]
fn allocated() -> Option<(u64, u64)> {
    None
}

/// Counts a consumer's deliveries, marking the first and the one that reaches `total`.
#[derive(Debug)]
struct Tally {
    total: u64,
    delivered: AtomicU64,
    bytes: AtomicU64,
    first: OnceLock<Mark>,
    last: OnceLock<Mark>,
    /// Told when the total is delivered.
    done: Mutex<Option<futures_channel::oneshot::Sender<()>>>,
}

impl Tally {
    /// A tally of `total` messages, and what completes when they are delivered.
    fn new(total: u64) -> (Self, futures_channel::oneshot::Receiver<()>) {
        let (done, finished) = futures_channel::oneshot::channel();
        let tally = Self {
            total,
            delivered: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            first: OnceLock::new(),
            last: OnceLock::new(),
            done: Mutex::new(Some(done)),
        };
        (tally, finished)
    }

    /// Counts a delivery of `messages` messages and `bytes` bytes of bodies.
    fn count(&self, messages: u64, bytes: u64) {
        if self.first.get().is_none() {
            let _ = self.first.set(Mark::now());
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        let before = self.delivered.fetch_add(messages, Ordering::Relaxed);
        if before < self.total && before + messages >= self.total {
            let _ = self.last.set(Mark::now());
            let done = self
                .done
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(done) = done {
                let _ = done.send(());
            }
        }
    }

    /// The drain's report, from the first delivery to the last.
    fn report(&self) -> Value {
        let first = self
            .first
            .get()
            .expect("a finished drain had a first delivery");
        let last = self
            .last
            .get()
            .expect("a finished drain had a last delivery");
        let mut report = json!({
            "messages": self.total,
            "bytes": self.bytes.load(Ordering::Relaxed),
            "seconds": (last.at - first.at).as_secs_f64(),
            "cpu_seconds": last.cpu_seconds - first.cpu_seconds,
            "peak_rss_kb": peak_rss_kb(),
        });
        if let (Some(first), Some(last)) = (first.allocated, last.allocated) {
            report["allocations"] = json!(last.0 - first.0);
            report["allocated_bytes"] = json!(last.1 - first.1);
        }
        report
    }
}

/// What a consumer child drains: the address of the instant broker (its name server too), the
/// topic, a new group, the pull batch.
struct Source<'a> {
    addr: &'a str,
    topic: &'a str,
    group: &'a str,
    batch: i32,
}

/// A push consumer on runtime `R`, concurrent or orderly, from the first offset until every
/// message was delivered.
async fn push<R: driver::Runtime>(
    source: &Source<'_>,
    orderly: bool,
    tally: &Arc<Tally>,
    finished: futures_channel::oneshot::Receiver<()>,
) -> Value {
    let batch = source.batch;
    let consumer = driver::PushConsumer::<R>::builder(source.group)
        .name_server(source.addr)
        .subscribe(source.topic, "*")
        .consume_from(driver::ConsumeFrom::First)
        .configure(|c| c.pull_batch_size = batch)
        .build()
        .expect("the consumer's configuration is valid");
    let counting = Arc::clone(tally);
    let handler = move |messages: driver::Messages| {
        let bytes: u64 = messages.iter().map(|m| m.body().len() as u64).sum();
        counting.count(messages.len() as u64, bytes);
        async { driver::ConsumeOutcome::Success }
    };
    let _running = if orderly {
        consumer.start_orderly(handler)
    } else {
        consumer.start_concurrently(handler)
    };
    let _ = finished.await;
    tally.report()
}

/// The lite pull consumer's stream on tokio, from the first offset until every message was
/// taken.
async fn lite(source: &Source<'_>, tally: &Tally) -> Value {
    let batch = source.batch;
    let mut stream =
        driver::LitePullConsumer::<rocketmq_tokio::TokioRuntime>::builder(source.group)
            .name_server(source.addr)
            .subscribe(source.topic, "*")
            .consume_from(driver::ConsumeFrom::First)
            .configure(|c| c.pull_batch_size = batch)
            .build()
            .expect("the consumer's configuration is valid");
    while let Some(message) = stream.next().await {
        tally.count(1, message.body().len() as u64);
        if tally.last.get().is_some() {
            break;
        }
    }
    tally.report()
}

/// `rmq consume --from first --count N` in this process, printing to `path` or to `/dev/null`
/// as the CLI prints to its stdout: a JSON line per message, flushed. It pulls as the CLI does
/// (batches of 32): `source.batch` has no say.
fn rmq_consume(source: &Source<'_>, tally: &Tally, path: Option<&std::path::Path>) -> Value {
    let file = std::fs::File::create(path.unwrap_or(std::path::Path::new("/dev/null")))
        .expect("the output file can be created");
    let mut out = std::io::BufWriter::new(file);
    let options = rmq_cli::consume::ConsumeOptions {
        cluster: rmq_cli::admin::Cluster::new(source.addr),
        group: source.group.to_owned(),
        topic: source.topic.to_owned(),
        expression: "*".to_owned(),
        from: rmq_cli::consume::ConsumeFrom::First,
        count: Some(usize::try_from(tally.total).expect("the count fits")),
        idle_exit: None,
        runtime: rmq_cli::consume::RuntimeKind::Tokio,
        broadcast: false,
        orderly: false,
        rate: None,
        trace: false,
        pop: None,
        stop: None,
    };
    rmq_cli::consume::consume(&options, None, |value| {
        writeln!(out, "{value}")
            .and_then(|()| out.flush())
            .expect("the output takes the line");
        // The line's length is not counted: measuring it would cost a copy the CLI does not make.
        tally.count(1, 0);
    })
    .unwrap_or_else(|e| panic!("rmq consume: {e}"));
    tally.report()
}
