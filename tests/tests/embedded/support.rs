//! Running the examples of `rocketmq-examples` (`consume`, `produce`) as a user does, and
//! reading what they print.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How long one run of an example may take before the test kills it and fails.
pub(crate) const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// The workspace's root.
pub(crate) fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The `cargo` that builds this test.
pub(crate) fn cargo() -> Command {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.current_dir(workspace());
    cargo
}

/// The examples' executables, built once per test binary with the `cargo` that runs the tests
/// (a no-op when `cargo test` built them already).
fn executables() -> &'static BTreeMap<String, PathBuf> {
    static BUILT: OnceLock<BTreeMap<String, PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let output = cargo()
            .args([
                "build",
                "-p",
                "rocketmq-examples",
                "--examples",
                "--message-format=json",
            ])
            .stderr(Stdio::inherit())
            .output()
            .expect("run cargo build for the examples");
        assert!(output.status.success(), "the examples do not build");
        let built: BTreeMap<String, PathBuf> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["kind"][0] == "example")
            .filter_map(|m| {
                let name = m["target"]["name"].as_str()?.to_owned();
                Some((name, PathBuf::from(m["executable"].as_str()?)))
            })
            .collect();
        assert!(
            built.contains_key("consume") && built.contains_key("produce"),
            "cargo built no consume and produce examples: {built:?}"
        );
        built
    })
}

/// One line an example printed for a message: `queue-id offset msg-id body`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Line {
    pub(crate) queue_id: i32,
    pub(crate) offset: i64,
    pub(crate) msg_id: String,
    pub(crate) body: String,
}

impl Line {
    fn parse(line: &str) -> Self {
        let mut fields = line.splitn(4, ' ');
        let mut next = || {
            fields.next().unwrap_or_else(|| {
                panic!("an example printed {line:?}, not `queue offset id body`")
            })
        };
        let queue_id = next().parse().expect("the first field is the queue id");
        let offset = next().parse().expect("the second field is the offset");
        let msg_id = next().to_owned();
        let body = next().to_owned();
        Self {
            queue_id,
            offset,
            msg_id,
            body,
        }
    }
}

/// A running example: its message lines as they come, its standard error kept for failures.
pub(crate) struct Running {
    name: &'static str,
    child: Child,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// When the process was spawned: after the build, which a fresh machine spends 20 s on.
    spawned: Instant,
    /// Every line received so far.
    pub(crate) seen: Vec<Line>,
}

impl Running {
    /// Starts example `name` with `args`.
    pub(crate) fn start(name: &'static str, args: &[&str]) -> Self {
        let executable = &executables()[name];
        let mut child = Command::new(executable)
            .args(args)
            .env_remove("NAMESRV_ADDR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", executable.display()));
        let spawned = Instant::now();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(Line::parse(&line)).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&stderr);
        thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        });
        Self {
            name,
            child,
            lines,
            stderr,
            spawned,
            seen: Vec::new(),
        }
    }

    /// What it printed on standard error so far.
    pub(crate) fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }

    /// Waits until it has printed `count` message lines in all; fails the test after `within`.
    pub(crate) fn wait_for_lines(&mut self, count: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.seen.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "{}: {} of {count} lines within {within:?}; stderr:\n{}",
                    self.name,
                    self.seen.len(),
                    self.stderr()
                ),
            }
        }
    }

    /// Waits for it to exit successfully (failing the test otherwise, or after
    /// [`RUN_TIMEOUT`]); returns every line it printed.
    pub(crate) fn finish(self) -> Vec<Line> {
        self.finish_with_stderr().0
    }

    /// [`Running::finish`], with what it printed on standard error.
    pub(crate) fn finish_with_stderr(self) -> (Vec<Line>, String) {
        let name = self.name;
        let (status, lines, stderr) = self.exit();
        assert!(
            status.success(),
            "{name} failed ({status}); stderr:\n{stderr}"
        );
        (lines, stderr)
    }

    /// Waits for it to exit, however it does (failing the test after [`RUN_TIMEOUT`]); returns
    /// its status, every line it printed, and its standard error.
    pub(crate) fn exit(self) -> (ExitStatus, Vec<Line>, String) {
        let (status, lines, stderr, _) = self.exit_timed();
        (status, lines, stderr)
    }

    /// As [`Running::exit`], with how long the process ran, from its spawn to its exit (the
    /// build before the spawn excluded).
    pub(crate) fn exit_timed(mut self) -> (ExitStatus, Vec<Line>, String, Duration) {
        let deadline = Instant::now() + RUN_TIMEOUT;
        let status = loop {
            match self.child.try_wait().expect("poll the example's process") {
                Some(status) => break status,
                None if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    panic!(
                        "{} did not exit within {RUN_TIMEOUT:?}; stderr:\n{}",
                        self.name,
                        self.stderr()
                    );
                }
                None => thread::sleep(Duration::from_millis(20)),
            }
        };
        let ran = self.spawned.elapsed();
        // The reader ends at the pipe's end, after the process.
        self.seen.extend(self.lines.iter());
        // Give the stderr reader the pipe's last lines.
        thread::sleep(Duration::from_millis(50));
        (status, std::mem::take(&mut self.seen), self.stderr(), ran)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that failed midway leaves no process behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the `produce` example: `count` messages to `topic`, bodies `<prefix><n>`. Returns its
/// receipts.
pub(crate) fn produce(namesrv: &str, topic: &str, prefix: &str, count: usize) -> Vec<Line> {
    let count = count.to_string();
    let args = [
        "--namesrv",
        namesrv,
        "--topic",
        topic,
        "--prefix",
        prefix,
        "--count",
        &count,
    ];
    Running::start("produce", &args).finish()
}

/// Starts the `consume` example: `group` on `topic`, from the first offset where the group
/// committed none, with `extra` arguments.
pub(crate) fn consume(namesrv: &str, topic: &str, group: &str, extra: &[&str]) -> Running {
    let mut args = vec![
        "--namesrv",
        namesrv,
        "--topic",
        topic,
        "--group",
        group,
        "--from",
        "first",
    ];
    args.extend_from_slice(extra);
    Running::start("consume", &args)
}

/// Fails the test unless a new run of `group` receives nothing from `topic` within 5 s (it
/// would within the first second of an assignment): every offset was committed.
/// `first_run` is what the run before printed on standard error, for the failure.
pub(crate) fn assert_all_committed(namesrv: &str, topic: &str, group: &str, first_run: &str) {
    let again = consume(namesrv, topic, group, &["--count", "1", "--idle-exit", "5"]).finish();
    assert!(
        again.is_empty(),
        "the group's offsets were committed, yet a second run received {again:?}; the first \
         run's stderr:\n{first_run}"
    );
}

/// The bodies of `lines`, each with how many times it appears.
pub(crate) fn tally(lines: &[Line]) -> BTreeMap<&str, usize> {
    let mut tally = BTreeMap::new();
    for line in lines {
        *tally.entry(line.body.as_str()).or_insert(0) += 1;
    }
    tally
}

/// Fails the test unless `consumed` holds every body of `produced` exactly once, and nothing
/// else.
pub(crate) fn assert_exactly_once(produced: &[Line], consumed: &[Line]) {
    let sent = tally(produced);
    let got = tally(consumed);
    let missing: Vec<_> = sent.keys().filter(|b| !got.contains_key(*b)).collect();
    let twice: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
    let unknown: Vec<_> = got.keys().filter(|b| !sent.contains_key(*b)).collect();
    assert!(
        missing.is_empty() && twice.is_empty() && unknown.is_empty(),
        "{} produced, {} consumed: never consumed {missing:?}, consumed more than once \
         {twice:?}, never produced {unknown:?}",
        produced.len(),
        consumed.len()
    );
}
