//! Shared by the `rmq` tests that run against the real local broker (`scripts/broker start`,
//! `NAMESRV_ADDR`): running the binary, and fresh names for a run.

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

/// Runs `rmq` with `args`; returns whether it succeeded, its stdout parsed as one JSON value a
/// line, and its stderr.
pub(crate) fn rmq(args: &[&str]) -> (bool, Vec<Value>, String) {
    rmq_with_env(args, &[])
}

/// Runs `rmq` with `args` and the environment variables `env` set (`("HOME", dir)`); returns
/// what [`rmq`] returns.
pub(crate) fn rmq_with_env(args: &[&str], env: &[(&str, &OsStr)]) -> (bool, Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rmq"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("rmq runs");
    let lines = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    (
        out.status.success(),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A topic and a group no earlier run used, `{prefix}-{micros}` and `{prefix}-group-{micros}`.
/// Fails the test, with how to start the cluster, when `NAMESRV_ADDR` is not set.
pub(crate) fn fresh_topic_and_group(prefix: &str) -> (String, String) {
    assert!(
        std::env::var("NAMESRV_ADDR").is_ok(),
        "NAMESRV_ADDR is not set: start the local cluster with `scripts/broker start` (scripts/test does)"
    );
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_micros();
    (
        format!("{prefix}-{stamp}"),
        format!("{prefix}-group-{stamp}"),
    )
}

/// Creates `topic` with `queues` queues with `rmq topic create`, failing the test if it fails.
pub(crate) fn create_topic(topic: &str, queues: u32) {
    let queues = queues.to_string();
    let (ok, _, stderr) = rmq(&["topic", "create", topic, "--queues", &queues]);
    assert!(ok, "topic create failed: {stderr}");
}

/// Runs `rmq consume` of `topic` as `group` from the first offset, with `more` arguments (a
/// count, an idle exit, a runtime) and the environment variables `env` set; returns what
/// [`rmq`] returns.
pub(crate) fn consume_from_first(
    group: &str,
    topic: &str,
    more: &[&str],
    env: &[(&str, &OsStr)],
) -> (bool, Vec<Value>, String) {
    let mut args = vec![
        "consume", "--group", group, "--topic", topic, "--from", "first",
    ];
    args.extend_from_slice(more);
    rmq_with_env(&args, env)
}

/// A program running in the background whose stdout is read line by line (JSON lines), for
/// tests that act on a running consumer. Killed (by its own pid) when dropped.
pub(crate) struct Background {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Background {
    /// Starts `rmq` with `args`.
    pub(crate) fn rmq(args: &[&str]) -> Self {
        Self::start(Command::new(env!("CARGO_BIN_EXE_rmq")).args(args))
    }

    /// Starts `command` with its stdout piped (stderr goes to the test's).
    pub(crate) fn start(command: &mut Command) -> Self {
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the program starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Lines that are not JSON (a Java peer's own chatter) are skipped.
                if let Ok(value) = serde_json::from_str(&line)
                    && tx.send(value).is_err()
                {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// The next JSON line, or `None` when none came within `timeout` (or the program ended).
    pub(crate) fn next_line(&self, timeout: std::time::Duration) -> Option<Value> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Sends the program signal `signal` (`TERM`, `INT`) with `kill`.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} failed: {status}");
    }

    /// Waits at most `timeout` for the program to exit; its status, or `None` if it still runs.
    pub(crate) fn exit_within(
        &mut self,
        timeout: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A printed message's position, `(queue_id, queue_offset)`.
pub(crate) fn position(line: &Value) -> (i64, i64) {
    let field = |name: &str| {
        line[name]
            .as_i64()
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    (field("queue_id"), field("queue_offset"))
}

/// A fresh topic of 2 queues (named after `prefix`, with a fresh group) holding 200 messages,
/// consumed from the first by `rmq consume --rate 50` until it printed `lines`, then sent
/// `signal`. Returns the topic, the group, the stopped run (to see how it exits) and the
/// positions it printed, with those already on their way to stdout when the signal came.
pub(crate) fn consume_until_signal(
    prefix: &str,
    lines: usize,
    signal: &str,
) -> (String, String, Background, Vec<(i64, i64)>) {
    let (topic, group) = fresh_topic_and_group(prefix);
    create_topic(&topic, 2);
    let (ok, _, stderr) = rmq(&["produce", "--topic", &topic, "--count", "200"]);
    assert!(ok, "produce failed: {stderr}");
    // 50 a second: the signal comes in the middle of the stream.
    let run = Background::rmq(&[
        "consume", "--group", &group, "--topic", &topic, "--from", "first", "--rate", "50",
    ]);
    let mut printed = Vec::new();
    while printed.len() < lines {
        let line = run
            .next_line(std::time::Duration::from_secs(30))
            .unwrap_or_else(|| panic!("only {} lines before the signal", printed.len()));
        printed.push(position(&line));
    }
    run.signal(signal);
    while let Some(line) = run.next_line(std::time::Duration::from_secs(10)) {
        printed.push(position(&line));
    }
    (topic, group, run, printed)
}
