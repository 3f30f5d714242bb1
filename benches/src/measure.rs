//! What the benchmark programs measure of a drain, and how they run one in a child process:
//! CPU time and peak RSS from `/proc`, a child's one-line JSON report, and the figures of a
//! drain over interleaved rounds.

use std::io::{BufRead, BufReader};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// User + system CPU seconds of this process so far, all its threads (the live and the ended
/// ones), from the kernel's process CPU clock: nanoseconds, where `/proc/self/stat` counts in
/// ticks of 10 ms, too coarse for drains of a fraction of a second.
pub fn cpu_seconds() -> f64 {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    time.tv_sec as f64 + time.tv_nsec as f64 / 1e9
}

/// Peak resident set size of this process, in KiB (`VmHWM`).
pub fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A child's report of a drain of `messages` messages (`bytes` of bodies) that began at
/// `started`, when this process had used `cpu_before` CPU seconds.
pub fn drain_report(messages: u64, bytes: u64, started: Instant, cpu_before: f64) -> Value {
    json!({
        "messages": messages,
        "bytes": bytes,
        "seconds": started.elapsed().as_secs_f64(),
        "cpu_seconds": cpu_seconds() - cpu_before,
        "peak_rss_kb": peak_rss_kb(),
    })
}

/// One drain's figures over all rounds.
pub struct Drain<'a> {
    /// What the table calls it.
    pub label: &'a str,
    /// The run of median wall time.
    pub median: &'a Report,
    /// Lowest and highest rate.
    pub range: (f64, f64),
    /// The median over rounds of this drain's rate divided by the bare loop's in the same round.
    pub ratio: f64,
}

impl<'a> Drain<'a> {
    /// `own` and `bare` hold one run per round, at least one.
    pub fn of(label: &'a str, own: &'a [Report], bare: &[Report]) -> Self {
        let mut by_time: Vec<&Report> = own.iter().collect();
        by_time.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
        let mut ratios: Vec<f64> = own
            .iter()
            .zip(bare)
            .map(|(run, bare)| run.rate() / bare.rate())
            .collect();
        ratios.sort_by(f64::total_cmp);
        Self {
            label,
            median: by_time[by_time.len() / 2],
            range: (
                by_time.last().map_or(0.0, |r| r.rate()),
                by_time.first().map_or(0.0, |r| r.rate()),
            ),
            ratio: ratios[ratios.len() / 2],
        }
    }
}

/// What a child reports.
#[derive(Clone, Copy, Debug)]
pub struct Report {
    /// Messages delivered.
    pub messages: u64,
    /// Bytes of their bodies.
    pub bytes: u64,
    /// Wall time of the drain.
    pub seconds: f64,
    /// The child's user + system CPU time over the drain.
    pub cpu_seconds: f64,
    /// The child's peak resident set size.
    pub peak_rss_kb: u64,
    /// Allocator calls (allocations and reallocations) and bytes allocated over the drain, when
    /// the child counts them.
    pub allocations: Option<(u64, u64)>,
}

impl Report {
    /// Messages a second.
    pub fn rate(&self) -> f64 {
        self.messages as f64 / self.seconds
    }

    /// The report a child printed; panics on a report without a figure (a broken child).
    pub fn from_json(value: &Value) -> Self {
        let num = |key: &str| {
            value[key]
                .as_f64()
                .unwrap_or_else(|| panic!("child report without {key}: {value}"))
        };
        Self {
            messages: num("messages") as u64,
            bytes: num("bytes") as u64,
            seconds: num("seconds"),
            cpu_seconds: num("cpu_seconds"),
            peak_rss_kb: num("peak_rss_kb") as u64,
            allocations: value["allocations"]
                .as_u64()
                .zip(value["allocated_bytes"].as_u64()),
        }
    }
}

/// Starts a child in `role`; with `threads`, its runtime has that many (tokio's workers through
/// `TOKIO_WORKER_THREADS`, smol's executor through `SMOL_THREADS`), else the defaults.
pub fn spawn_child(role: &str, threads: Option<usize>, args: &[&str]) -> std::process::Child {
    let exe = std::env::current_exe().expect("the benchmark knows its own path");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut child = Process::new(exe);
    child.arg("child").arg(role).args(args);
    match threads {
        Some(n) => child
            .env("TOKIO_WORKER_THREADS", n.to_string())
            .env("SMOL_THREADS", n.to_string()),
        None => child
            .env_remove("TOKIO_WORKER_THREADS")
            .env("SMOL_THREADS", smol_threads(cores)),
    };
    child
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start the {role} child: {e}"))
}

/// Starts Apache's Java client draining `topic` as a new `group` from the first offset
/// (`scripts/java-peer bench` with `args`, e.g. `--mode push`), its stdout piped: it prints a
/// report of the same shape as a Rust child's, its clock and CPU count starting just before the
/// consumer's `start()`.
pub fn spawn_java_bench(
    args: &[&str],
    namesrv: &str,
    topic: &str,
    group: &str,
    messages: usize,
    timeout_s: u64,
) -> std::process::Child {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/java-peer");
    Process::new(script)
        .arg("bench")
        .args(args)
        .args(["--namesrv", namesrv, "--topic", topic, "--group", group])
        .args(["--count", &messages.to_string()])
        .args(["--timeout-s", &timeout_s.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {script}: {e}"))
}

/// `SMOL_THREADS` for a smol child: the user's, else one per core like tokio's workers.
pub fn smol_threads(cores: usize) -> String {
    std::env::var("SMOL_THREADS").unwrap_or_else(|_| cores.max(1).to_string())
}

/// The report `child` prints (its first line of stdout) within `timeout`, once it exited
/// successfully; panics otherwise, naming `role`.
pub fn wait_report(mut child: std::process::Child, role: &str, timeout: Duration) -> Report {
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let line = read_line_within(stdout, timeout)
        .unwrap_or_else(|| panic!("the {role} child reported nothing within {timeout:?}"));
    let status = child.wait().expect("the child is waited for");
    assert!(status.success(), "the {role} child failed: {status}");
    Report::from_json(&serde_json::from_str(&line).expect("the child reports JSON"))
}

/// The first line `stdout` gives within `timeout`.
pub fn read_line_within(
    stdout: impl std::io::Read + Send + 'static,
    timeout: Duration,
) -> Option<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(read.ok().filter(|n| *n > 0).map(|_| line));
    });
    rx.recv_timeout(timeout).ok().flatten()
}
