//! Apache's Java client as a peer process: `scripts/java-peer` (the program in `interop/java`)
//! started with arguments, its JSON lines read on a thread and handed over on a channel.
//!
//! Every wait is bounded: a peer that does not print what a test waits for within the given
//! time fails the test with the peer's last lines of stderr. A peer still running when its
//! handle is dropped is killed, so a failing test leaves no Java process behind.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a peer may take to print an awaited line (a JVM start included).
pub(crate) const PEER_WAIT: Duration = Duration::from_secs(90);

/// A running Java peer.
pub(crate) struct JavaPeer {
    what: String,
    child: Child,
    lines: Receiver<Value>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl JavaPeer {
    /// Starts `scripts/java-peer` with `args` against the name server at `namesrv`.
    pub(crate) fn start(namesrv: &str, args: &[&str]) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/java-peer");
        let what = format!("java-peer {}", args.join(" "));
        let mut child = Command::new(script)
            .args(args)
            .args(["--namesrv", namesrv])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        let stdout = child.stdout.take().expect("stdout was piped");
        let stderr_pipe = child.stderr.take().expect("stderr was piped");
        let (tx, lines) = channel();
        let name = what.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(value) => {
                        if tx.send(value).is_err() {
                            break;
                        }
                    }
                    Err(e) => eprintln!("{name}: not a JSON line ({e}): {line}"),
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == 40 {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        });
        Self {
            what,
            child,
            lines,
            stderr,
        }
    }

    /// Runs the peer to its end and returns every line it printed; fails the test unless it
    /// exits 0 within [`PEER_WAIT`].
    pub(crate) fn run(namesrv: &str, args: &[&str]) -> Vec<Value> {
        Self::start(namesrv, args).finish()
    }

    /// Starts `consume --group group --topic topic` followed by `extra`: a Java push consumer.
    pub(crate) fn consume(namesrv: &str, group: &str, topic: &str, extra: &[&str]) -> Self {
        let mut args = vec!["consume", "--group", group, "--topic", topic];
        args.extend_from_slice(extra);
        Self::start(namesrv, &args)
    }

    /// The next line, or `None` when the peer closed its output or `timeout` passed.
    pub(crate) fn next_line(&mut self, timeout: Duration) -> Option<Value> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Waits for the peer to exit and returns the lines it printed meanwhile; fails the test
    /// unless it exits 0 within [`PEER_WAIT`].
    pub(crate) fn finish(mut self) -> Vec<Value> {
        let deadline = Instant::now() + PEER_WAIT;
        let mut lines = Vec::new();
        loop {
            while let Ok(line) = self.lines.try_recv() {
                lines.push(line);
            }
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    // The reader thread may still hold lines printed just before the exit.
                    while let Some(line) = self.next_line(Duration::from_millis(500)) {
                        lines.push(line);
                    }
                    assert!(
                        status.success(),
                        "{} exited with {status}; stderr:\n{}",
                        self.what,
                        self.stderr_tail()
                    );
                    return lines;
                }
                Ok(None) => {}
                Err(e) => panic!("{}: wait: {e}", self.what),
            }
            assert!(
                Instant::now() < deadline,
                "{} still running after {PEER_WAIT:?}; stderr:\n{}",
                self.what,
                self.stderr_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Asks the peer to shut down (SIGTERM: the Java consumer commits and unregisters, then
    /// prints its `done` line) and returns its remaining lines.
    pub(crate) fn terminate(&mut self) -> Vec<Value> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "{}: could not signal it",
            self.what
        );
        let deadline = Instant::now() + PEER_WAIT;
        let mut lines = Vec::new();
        loop {
            while let Ok(line) = self.lines.try_recv() {
                lines.push(line);
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                while let Some(line) = self.next_line(Duration::from_millis(500)) {
                    lines.push(line);
                }
                return lines;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not stop within {PEER_WAIT:?} of SIGTERM",
                self.what
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .map(|tail| tail.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }
}

impl Drop for JavaPeer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The lines of `lines` whose `"event"` is `event`.
pub(crate) fn events<'a>(lines: &'a [Value], event: &'a str) -> impl Iterator<Item = &'a Value> {
    lines.iter().filter(move |line| line["event"] == event)
}

/// A string field of a JSON line, failing the test when it is missing.
pub(crate) fn text<'a>(line: &'a Value, field: &str) -> &'a str {
    line[field]
        .as_str()
        .unwrap_or_else(|| panic!("no string {field:?} in {line}"))
}

/// The queue ids of `topic` in a consumer peer's `assignment` line.
pub(crate) fn queue_ids(line: &Value, topic: &str) -> std::collections::BTreeSet<i32> {
    line["queues"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["topic"] == topic)
        .map(|q| i32::try_from(int(q, "queue_id")).expect("a queue id"))
        .collect()
}

/// An integer field of a JSON line, failing the test when it is missing.
pub(crate) fn int(line: &Value, field: &str) -> i64 {
    line[field]
        .as_i64()
        .unwrap_or_else(|| panic!("no integer {field:?} in {line}"))
}

/// Our producer on tokio against the name server at `namesrv`, in a group of its own.
pub(crate) fn our_producer(namesrv: &str, prefix: &str) -> rocketmq_tokio::Producer {
    rocketmq_tokio::Producer::builder(rocketmq_tests::unique(prefix))
        .name_server(namesrv)
        .build()
        .expect("a valid producer")
}
