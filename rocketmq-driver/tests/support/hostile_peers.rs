//! Hostile peers (issue 11): a push consumer against the fake name server and broker of
//! `rocketmq_tests::hostile`, on loopback, each spoiling one answer: garbage instead of a
//! frame, a 2 GiB length prefix, a header length beyond the frame, a trickle of one byte a
//! second, a corrupt message batch, a route to a closed port.
//!
//! Every scenario checks the same four promises, each with an assertion that can fail:
//!
//! - **nothing hostile becomes a message**: the handler gets no message (the corrupt batch:
//!   only the good record before the bad one), and no queue's offsets move past what was
//!   really delivered;
//! - **the fault is reported**: the [`Event`] the application sees (`RequestFailed` with its
//!   reason, `CorruptMessages`) and the connection's state in `stats().connections`; the
//!   driver is still alive afterwards (its task did not panic: `stats()` answers);
//! - **reconnects back off**: the connections the fake peer accepted over the window are at
//!   most about one a second (`reconnect_backoff`, `pull_backoff` and `rebalance_retry` are
//!   1 s by default, `ConsumerConfig::new`) and more than one (it did retry);
//! - **memory stays bounded**: the process's peak RSS (`VmHWM`) stays within
//!   [`RSS_BUDGET_KIB`] of where it was when the first scenario of the binary started.
//!
//! The adapters run these from test binaries of their own (`tests/hostile_peers.rs`), so no
//! real-broker scenario shares the process whose peak RSS is checked. Default configuration
//! throughout: what is pinned is the client as shipped.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use driver::prelude::*;
use futures_util::future::{self, Either};
use rocketmq_tests::hostile::{self, GOOD_BODY, Mode, Pair, Peer, Role};
use rocketmq_tests::unique;

/// How long each scenario watches the consumer (the trickle watches longer: see there).
pub(crate) const WINDOW: Duration = Duration::from_secs(7);

/// How far the process's peak RSS may rise above where it stood when the binary's first
/// scenario started: 64 MiB. A 2 GiB frame buffered, or even the 256 MiB of filler the
/// hostile broker streams after its prefix, would be far above it; the client's own working
/// set (a runtime, a few connections, 64 KiB read buffers) is far below.
pub(crate) const RSS_BUDGET_KIB: u64 = 64 * 1024;

/// How often the scenarios sample `stats()`.
const SAMPLE: Duration = Duration::from_millis(100);

/// How long a shutdown may take against a hostile peer (a final commit may wait out one
/// request timeout, 3 s).
const SHUTDOWN_WITHIN: Duration = Duration::from_secs(8);

/// A message the handler got: its queue offset and body.
type Delivery = (i64, Vec<u8>);

/// What the application saw of one consumer.
#[derive(Clone, Default)]
struct Watch {
    events: Arc<Mutex<Vec<(Instant, Event)>>>,
    /// Every message the handler got.
    delivered: Arc<Mutex<Vec<Delivery>>>,
}

impl Watch {
    fn events(&self) -> Vec<(Instant, Event)> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn delivered(&self) -> Vec<Delivery> {
        self.delivered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The `RequestFailed` events about `addr`: (request, reason).
    fn failures(&self, addr: &str) -> Vec<(&'static str, FailureReason)> {
        self.events()
            .into_iter()
            .filter_map(|(_, event)| match event {
                Event::RequestFailed {
                    addr: peer,
                    request,
                    reason,
                } if peer == addr => Some((request, reason)),
                _ => None,
            })
            .collect()
    }

    /// Asserts that the handler got no message at all.
    fn assert_nothing_delivered(&self, what: &str) {
        let delivered = self.delivered();
        assert!(
            delivered.is_empty(),
            "{what}: the handler got {} message(s) from a hostile peer: {:?}",
            delivered.len(),
            delivered
                .iter()
                .map(|(offset, body)| (offset, String::from_utf8_lossy(body)))
                .collect::<Vec<_>>()
        );
    }

    /// Asserts that `addr` failed `request` with `reason` at least once.
    fn assert_failed(&self, addr: &str, request: &str, reason: &FailureReason, what: &str) {
        let failures = self.failures(addr);
        assert!(
            failures
                .iter()
                .any(|(r, why)| *r == request && why == reason),
            "{what}: no RequestFailed {{ {request}, {reason:?} }} from {addr}; its failures: \
             {failures:?}"
        );
    }
}

/// The consumer under test: group and instance fresh, subscribed to everything of `topic`,
/// from the first offset, its handler recording every message and acknowledging it.
fn start<R: Runtime>(namesrv: &str, topic: &str) -> (RunningConsumer, Watch) {
    start_configured::<R>(namesrv, topic, |_| {})
}

/// [`start`] with the configuration adjusted by `configure`.
fn start_configured<R: Runtime>(
    namesrv: &str,
    topic: &str,
    configure: impl FnOnce(&mut ConsumerConfig),
) -> (RunningConsumer, Watch) {
    let watch = Watch::default();
    let events = Arc::clone(&watch.events);
    let consumer = driver::PushConsumer::<R>::builder(unique("hostile"))
        .name_server(namesrv)
        .subscribe(topic, "*")
        .consume_from(ConsumeFrom::First)
        .configure(configure)
        .build()
        .expect("the consumer's configuration is valid")
        .on_event(move |event| {
            events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((Instant::now(), event.clone()));
        });
    let delivered = Arc::clone(&watch.delivered);
    let running = consumer.start_concurrently(move |messages: Messages| {
        delivered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(
                messages
                    .iter()
                    .map(|m| (m.queue_offset(), m.body().to_vec())),
            );
        future::ready(ConsumeOutcome::Success)
    });
    (running, watch)
}

/// Samples `stats()` every [`SAMPLE`] for `window`. Fails the test if the driver stops
/// answering: its task panicked or ended.
async fn observe<R: Runtime>(running: &RunningConsumer, window: Duration) -> Vec<ConsumerStats> {
    let runtime = R::default();
    let end = runtime.now() + window;
    let mut samples = Vec::new();
    // Bounded in count as well as time: a clock that stood still would not loop for ever.
    let most = (window.as_millis() / SAMPLE.as_millis()) as usize + 1;
    while runtime.now() < end && samples.len() < most {
        let stats = running
            .stats()
            .await
            .unwrap_or_else(|e| panic!("the consumer's driver stopped answering: {e:?}"));
        samples.push(stats);
        runtime.sleep_until(runtime.now() + SAMPLE).await;
    }
    samples
}

/// The process's peak resident set (`VmHWM` of `/proc/self/status`), in KiB.
pub(crate) fn peak_rss_kib() -> u64 {
    let status =
        std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
        .expect("/proc/self/status has a VmHWM line in kB")
}

/// The peak RSS when the binary's first scenario started.
fn rss_baseline() -> u64 {
    static BASELINE: OnceLock<u64> = OnceLock::new();
    *BASELINE.get_or_init(peak_rss_kib)
}

/// Asserts the peak RSS is still within [`RSS_BUDGET_KIB`] of the baseline; returns the rise.
fn assert_rss_within_budget(what: &str) -> u64 {
    let (baseline, peak) = (rss_baseline(), peak_rss_kib());
    let rise = peak.saturating_sub(baseline);
    assert!(
        rise <= RSS_BUDGET_KIB,
        "{what}: peak RSS rose {rise} KiB (from {baseline} to {peak} KiB), over the budget of \
         {RSS_BUDGET_KIB} KiB"
    );
    rise
}

/// The most connections a client backing off 1 s may open over `window`: one a second, plus
/// the first, plus one for timer slack at the edges.
fn most_connections(window: Duration) -> usize {
    window.as_secs() as usize + 2
}

/// Asserts that `peer` accepted between `least` and [`most_connections`] connections in
/// `from..from + window`; returns how many.
fn assert_backoff(peer: &Peer, from: Instant, window: Duration, least: usize, what: &str) -> usize {
    let accepted = peer.accepted_between(from, from + window);
    let most = most_connections(window);
    assert!(
        accepted <= most,
        "{what}: {accepted} connections in {window:?}: the client reconnects without backing \
         off (at most {most} expected)"
    );
    assert!(
        accepted >= least,
        "{what}: only {accepted} connection(s) in {window:?}: the client did not retry (at \
         least {least} expected)"
    );
    accepted
}

/// Asserts that the client closed each spoiled connection of `peer` within `within` of the
/// first hostile byte (those spoiled too late to tell are skipped); returns the slowest.
fn assert_closed_by_client(peer: &Peer, within: Duration, what: &str) -> Duration {
    let now = Instant::now();
    let cutoff = now.checked_sub(within).unwrap_or(now);
    let mut slowest = Duration::ZERO;
    let mut checked = 0;
    for (i, conn) in peer.connections().iter().enumerate() {
        let Some(spoiled) = conn.misbehaved.filter(|at| *at < cutoff) else {
            continue;
        };
        let closed = conn.closed_by_client.unwrap_or_else(|| {
            panic!("{what}: connection {i} was spoiled {:?} ago and is still open: the client did not notice", spoiled.elapsed())
        });
        let took = closed.saturating_duration_since(spoiled);
        assert!(
            took <= within,
            "{what}: connection {i} closed {took:?} after the hostile bytes (within {within:?} \
             expected)"
        );
        slowest = slowest.max(took);
        checked += 1;
    }
    assert!(checked > 0, "{what}: no spoiled connection to check");
    slowest
}

/// Asserts that some sample showed the connection to `addr` down.
fn assert_seen_down(samples: &[ConsumerStats], addr: &str, what: &str) {
    let down = samples.iter().any(|stats| {
        stats
            .connections
            .iter()
            .any(|c| c.addr == addr && matches!(c.state, ConnectionState::Down { .. }))
    });
    assert!(
        down,
        "{what}: no stats() sample of {} showed the connection to {addr} down; last: {:?}",
        samples.len(),
        samples.last().map(|s| &s.connections)
    );
}

/// Asserts that the driver logged, as a warning naming `addr`, that the peer sent something
/// that is not a frame, with each of the decoder's reasons in `expected`: the application's
/// event only says `Disconnected`, so this line is what tells an operator the peer is not
/// speaking the protocol.
fn assert_bad_frame_logged(addr: &str, expected: &[&str], what: &str) {
    for reason in expected {
        let lines = hostile::capture_logs().lines_with(&[addr, "not a frame", reason]);
        assert!(
            !lines.is_empty(),
            "{what}: no warning names {addr} with \"not a frame\" and {reason:?}; warnings \
             about it: {:?}",
            hostile::capture_logs().lines_with(&[addr])
        );
    }
}

/// The decoder's error texts for each framing fault (`proto::FrameError`'s messages); the
/// 2 GiB mode alternates two prefixes, one per check of the decoder.
fn frame_error_texts(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Garbage => &["bad JSON header"],
        Mode::HugeLength => &[
            "frame length -2147483648 is negative (a prefix of 2 GiB or more)",
            "frame length 2147483647 exceeds the maximum",
        ],
        Mode::HeaderBeyondFrame => &["header length 16777215 exceeds"],
        other => panic!("{other:?} does not break the framing"),
    }
}

/// Shuts `running` down, failing the test if that takes longer than [`SHUTDOWN_WITHIN`].
async fn shutdown_within<R: Runtime>(running: RunningConsumer, what: &str) -> ShutdownReport {
    let runtime = R::default();
    let deadline = runtime.sleep_until(runtime.now() + SHUTDOWN_WITHIN);
    match future::select(Box::pin(running.shutdown()), deadline).await {
        Either::Left((Ok(report), _)) => report,
        Either::Left((Err(stopped), _)) => panic!("{what}: the driver died: {stopped}"),
        Either::Right(_) => panic!("{what}: shutdown took longer than {SHUTDOWN_WITHIN:?}"),
    }
}

/// A hostile broker breaks the framing of its pull answer (`mode`: garbage, a 2 GiB length
/// prefix, a header length beyond the frame) on every connection, behind an honest name
/// server. The consumer closes each such connection at once (within 1 s), fails the pull as
/// `RequestFailed { PULL_MESSAGE, Disconnected }`, shows the broker `Down`, delivers nothing,
/// keeps the queue at offset 0, reconnects about once a second, and its memory stays within
/// budget (a 2 GiB announcement, negative or merely too large, is refused from its prefix,
/// before 256 MiB of filler). The warning it logs names the peer and the decoder's error.
pub(crate) async fn broker_breaks_the_framing<R: Runtime>(mode: Mode) {
    let what = format!("broker {mode:?}");
    rss_baseline();
    hostile::capture_logs();
    let topic = unique("hostile-topic");
    let Pair {
        name_server: namesrv,
        broker,
    } = Pair::start(&topic, Mode::Honest, mode);
    let started = Instant::now();
    let (running, watch) = start::<R>(&namesrv.addr(), &topic);
    let samples = observe::<R>(&running, WINDOW).await;

    // Memory first: a client buffering towards the announced frame fails here, with the
    // reason, rather than on the reconnect count it also spoils.
    let filler = broker
        .connections()
        .iter()
        .map(|c| c.hostile_bytes)
        .max()
        .unwrap_or(0);
    if mode == Mode::HugeLength {
        // What the client took off the socket before it closed, plus the socket buffers.
        assert!(
            filler < 64 * 1024 * 1024,
            "{what}: the client read {filler} bytes of a frame it should have refused at its \
             prefix"
        );
    }
    assert_rss_within_budget(&what);
    let accepted = assert_backoff(&broker, started, WINDOW, 3, &what);
    let slowest = assert_closed_by_client(&broker, Duration::from_secs(1), &what);
    watch.assert_nothing_delivered(&what);
    watch.assert_failed(
        &broker.addr(),
        "PULL_MESSAGE",
        &FailureReason::Disconnected,
        &what,
    );
    assert_seen_down(&samples, &broker.addr(), &what);
    assert_bad_frame_logged(&broker.addr(), frame_error_texts(mode), &what);
    let last = samples.last().expect("the window holds samples");
    for queue in &last.queues {
        assert!(
            queue.next_pull_offset == 0 && queue.committable_offset == 0,
            "{what}: a queue moved on hostile bytes: {queue:?}"
        );
    }
    assert!(
        broker.commits().iter().all(|offset| *offset == 0),
        "{what}: offsets past 0 committed: {:?}",
        broker.commits()
    );
    shutdown_within::<R>(running, &what).await;
    let rise = assert_rss_within_budget(&what);
    println!(
        "{what}: {accepted} connections in {WINDOW:?}, {} pulls, slowest close {slowest:?}, \
         filler taken {filler} B, peak RSS +{rise} KiB",
        broker.requests(proto::RequestCode::PULL_MESSAGE)
    );
}

/// A hostile name server breaks the framing of its route answer (`mode`: garbage, a 2 GiB
/// length prefix, a header length beyond the frame). The consumer closes each such connection
/// within 1 s, fails the route as `RequestFailed { GET_ROUTEINFO_BY_TOPIC, Disconnected }`,
/// shows the name server `Down`, asks again about once a second, never learns a route (no
/// queue is assigned and the honest broker behind it is never contacted), delivers nothing,
/// and its memory stays within budget. The warning it logs names the peer and the decoder's
/// error.
pub(crate) async fn name_server_breaks_the_framing<R: Runtime>(mode: Mode) {
    let what = format!("name server {mode:?}");
    rss_baseline();
    hostile::capture_logs();
    let topic = unique("hostile-topic");
    let Pair {
        name_server: namesrv,
        broker,
    } = Pair::start(&topic, mode, Mode::Honest);
    let started = Instant::now();
    let (running, watch) = start::<R>(&namesrv.addr(), &topic);
    let samples = observe::<R>(&running, WINDOW).await;

    let accepted = assert_backoff(&namesrv, started, WINDOW, 3, &what);
    let slowest = assert_closed_by_client(&namesrv, Duration::from_secs(1), &what);
    watch.assert_nothing_delivered(&what);
    watch.assert_failed(
        &namesrv.addr(),
        "GET_ROUTEINFO_BY_TOPIC",
        &FailureReason::Disconnected,
        &what,
    );
    assert_seen_down(&samples, &namesrv.addr(), &what);
    assert_bad_frame_logged(&namesrv.addr(), frame_error_texts(mode), &what);
    assert_eq!(
        broker.connections().len(),
        0,
        "{what}: the consumer reached the broker, so it took a route from hostile bytes"
    );
    assert!(
        !watch
            .events()
            .iter()
            .any(|(_, e)| matches!(e, Event::Assigned(_))),
        "{what}: queues were assigned without a route"
    );
    shutdown_within::<R>(running, &what).await;
    let rise = assert_rss_within_budget(&what);
    println!(
        "{what}: {accepted} connections in {WINDOW:?}, {} route requests, slowest close \
         {slowest:?}, peak RSS +{rise} KiB",
        namesrv.requests(proto::RequestCode::GET_ROUTEINFO_BY_TOPIC)
    );
}

/// A name server trickles its route answer, one byte a second, keeping the socket open. Each
/// route request times out after `request_timeout` (3 s) as
/// `RequestFailed { GET_ROUTEINFO_BY_TOPIC, Timeout }`; after `close_after_timeouts` (3)
/// timeouts in a row the consumer closes the connection itself (6–11 s after it opened: two
/// route requests per round, the topic's and the retry topic's) and opens another. Nothing is
/// assigned or delivered, at most three connections in 12 s, memory within budget.
pub(crate) async fn name_server_trickles<R: Runtime>() {
    let what = "name server Trickle";
    // Three timeouts need two rounds of route requests: 3 s, a 1 s retry, 3 s more.
    let window = Duration::from_secs(12);
    rss_baseline();
    let topic = unique("hostile-topic");
    let Pair {
        name_server: namesrv,
        broker,
    } = Pair::start(&topic, Mode::Trickle, Mode::Honest);
    let started = Instant::now();
    let (running, watch) = start::<R>(&namesrv.addr(), &topic);
    let samples = observe::<R>(&running, window).await;

    let accepted = namesrv.accepted_between(started, started + window);
    assert!(
        (2..=3).contains(&accepted),
        "{what}: {accepted} connections in {window:?}; expected the first, closed after three \
         timeouts, and one more"
    );
    let first = *namesrv
        .connections()
        .first()
        .expect("the consumer connected to the name server");
    let closed = first.closed_by_client.unwrap_or_else(|| {
        panic!("{what}: the client never closed the trickling connection: {first:?}")
    });
    let open_for = closed.saturating_duration_since(first.accepted);
    assert!(
        (Duration::from_secs(6)..=Duration::from_secs(11)).contains(&open_for),
        "{what}: the trickling connection was closed after {open_for:?}; three 3 s timeouts \
         take 6-11 s"
    );
    assert!(
        first.hostile_bytes <= 12,
        "{what}: {} bytes trickled in at most 11 s",
        first.hostile_bytes
    );
    watch.assert_failed(
        &namesrv.addr(),
        "GET_ROUTEINFO_BY_TOPIC",
        &FailureReason::Timeout,
        what,
    );
    let timeouts = watch
        .failures(&namesrv.addr())
        .iter()
        .filter(|(_, reason)| *reason == FailureReason::Timeout)
        .count();
    assert!(
        samples.iter().any(|s| s
            .connections
            .iter()
            .any(|c| c.addr == namesrv.addr() && c.timeouts >= 1)),
        "{what}: stats().connections never counted a timeout on the name server"
    );
    watch.assert_nothing_delivered(what);
    assert_eq!(
        broker.connections().len(),
        0,
        "{what}: the consumer reached the broker before any route arrived"
    );
    shutdown_within::<R>(running, what).await;
    let rise = assert_rss_within_budget(what);
    println!(
        "{what}: {accepted} connections in {window:?}, first closed by the client after \
         {open_for:?} ({} bytes trickled, {timeouts} timeouts reported), peak RSS +{rise} KiB",
        first.hostile_bytes
    );
}

/// A broker answers every pull `SUCCESS` with a corrupt batch: at offset 0 a good record then
/// a bad one, from offset 1 only a bad one (bad magic and truncated in turn). The consumer
/// delivers the good record exactly once and nothing else, reports the bad record at offset 1
/// once as `Event::CorruptMessages` naming the decoder's error (not at every re-pull), shows
/// the error in the queue's `stats().queues[..].stuck` meanwhile, keeps the queue at the bad record
/// (next pull 1, committed at most 1: never past it), re-pulls about once a second
/// (`pull_backoff`) on the same connection (a bad batch is not a broken connection), and its
/// memory stays within budget.
pub(crate) async fn broker_sends_a_corrupt_batch<R: Runtime>() {
    let what = "broker CorruptBatch";
    rss_baseline();
    let topic = unique("hostile-topic");
    let Pair {
        name_server: namesrv,
        broker,
    } = Pair::start(&topic, Mode::Honest, Mode::CorruptBatch);
    let started = Instant::now();
    let (running, watch) = start::<R>(&namesrv.addr(), &topic);
    let samples = observe::<R>(&running, WINDOW).await;

    let delivered = watch.delivered();
    assert_eq!(
        delivered,
        vec![(0, GOOD_BODY.to_vec())],
        "{what}: the handler should get the good record once and nothing of the bad ones"
    );
    let errors: Vec<String> = watch
        .events()
        .into_iter()
        .filter_map(|(_, event)| match event {
            Event::CorruptMessages { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert!(
        broker.corrupt_batches() >= 3,
        "{what}: only {} corrupt batches were served",
        broker.corrupt_batches()
    );
    assert_eq!(
        errors.len(),
        1,
        "{what}: one bad record, reported once over {} corrupt batches: {errors:?}",
        broker.corrupt_batches()
    );
    assert!(
        errors
            .iter()
            .all(|e| e.contains("bad magic") || e.contains("truncated")),
        "{what}: the CorruptMessages error names the decoder's: {errors:?}"
    );
    let last = samples.last().expect("the window holds samples");
    let queue = last
        .queues
        .first()
        .unwrap_or_else(|| panic!("{what}: the consumer owns no queue: {last:?}"));
    assert!(
        queue
            .stuck
            .as_deref()
            .is_some_and(|e| e.contains("bad magic") || e.contains("truncated")),
        "{what}: the queue's stats say why it is stuck: {queue:?}"
    );
    assert_eq!(
        queue.next_pull_offset, 1,
        "{what}: the next pull should retry the bad record: {queue:?}"
    );
    assert!(
        queue.committable_offset <= 1 && queue.committed_offset.unwrap_or(0) <= 1,
        "{what}: an offset moved past the bad record: {queue:?}"
    );
    let pulls = broker.requests(proto::RequestCode::PULL_MESSAGE);
    let most = most_connections(WINDOW);
    assert!(
        (3..=most).contains(&pulls),
        "{what}: {pulls} pulls in {WINDOW:?}; re-pulls after a corrupt batch wait pull_backoff \
         (1 s): 3..={most} expected"
    );
    let accepted = broker.accepted_between(started, started + WINDOW);
    assert_eq!(
        accepted, 1,
        "{what}: a corrupt batch is not a broken connection, yet it was reopened"
    );
    let report = shutdown_within::<R>(running, what).await;
    let commits = broker.commits();
    assert!(
        commits.iter().all(|offset| *offset <= 1),
        "{what}: committed past the bad record: {commits:?}"
    );
    assert!(
        report.committed.iter().all(|(_, offset)| *offset <= 1),
        "{what}: the final commit passed the bad record: {report:?}"
    );
    let rise = assert_rss_within_budget(what);
    println!(
        "{what}: {pulls} pulls and {} corrupt batches in {WINDOW:?}, {} CorruptMessages, \
         commits {commits:?}, final {:?}, peak RSS +{rise} KiB",
        broker.corrupt_batches(),
        errors.len(),
        report.committed
    );
}

/// An honest name server routes the topic to a closed port (bound, its port taken, dropped).
/// Every connect is refused; the consumer reports `RequestFailed { .., Disconnected }` for that
/// address and shows it `Down` until a time that moves on with each attempt. The attempts
/// (the distinct `Down { until }` values over the window) come at most about once a second
/// (each `until` at least ~1 s after the one before: `reconnect_backoff`) and more than once;
/// the name server's connection is kept (one connection), nothing is delivered, memory within
/// budget.
///
/// The heartbeat fails each time (reported as `RequestFailed { HEART_BEAT, Disconnected }`).
/// On the default configuration: a consumer whose first heartbeat fails tries it again after
/// `rebalance_retry` (1 s) until one works, so the attempts come at the reconnect backoff's
/// pace (before, it waited for the periodic rebalance, 20 s, and a 7 s window saw one connect).
pub(crate) async fn route_to_a_closed_port<R: Runtime>() {
    let what = "route to a closed port";
    rss_baseline();
    let topic = unique("hostile-topic");
    let closed = hostile::closed_port();
    let namesrv = Peer::start(
        Role::NameServer {
            topic: topic.clone(),
            broker: closed.clone(),
        },
        Mode::Honest,
    );
    let started = Instant::now();
    let (running, watch) = start_configured::<R>(&namesrv.addr(), &topic, |_| {});
    let samples = observe::<R>(&running, WINDOW).await;

    let untils: BTreeSet<Instant> = samples
        .iter()
        .flat_map(|s| s.connections.iter())
        .filter(|c| c.addr == closed)
        .filter_map(|c| match c.state {
            ConnectionState::Down { until } => Some(until),
            _ => None,
        })
        .collect();
    let attempts = untils.len();
    let most = most_connections(WINDOW);
    assert!(
        (3..=most).contains(&attempts),
        "{what}: {attempts} failed connects seen in {WINDOW:?}; 3..={most} expected at a 1 s \
         backoff"
    );
    let untils: Vec<Instant> = untils.into_iter().collect();
    let closest = untils
        .windows(2)
        .filter_map(|pair| Some(pair.get(1)?.saturating_duration_since(*pair.first()?)))
        .min()
        .expect("at least three attempts give two gaps");
    assert!(
        closest >= Duration::from_millis(900),
        "{what}: two connects only {closest:?} apart: reconnect_backoff is 1 s"
    );
    watch.assert_failed(&closed, "HEART_BEAT", &FailureReason::Disconnected, what);
    let heartbeats = watch
        .failures(&closed)
        .iter()
        .filter(|(request, why)| *request == "HEART_BEAT" && *why == FailureReason::Disconnected)
        .count();
    assert!(
        heartbeats >= 3,
        "{what}: the first heartbeat is retried until it works ({heartbeats} failures reported)"
    );
    watch.assert_nothing_delivered(what);
    let accepted = namesrv.accepted_between(started, started + WINDOW);
    assert_eq!(
        accepted, 1,
        "{what}: the name server's healthy connection was reopened"
    );
    shutdown_within::<R>(running, what).await;
    let rise = assert_rss_within_budget(what);
    println!(
        "{what}: {attempts} connects in {WINDOW:?} (closest {closest:?} apart), {} failures \
         reported, peak RSS +{rise} KiB",
        watch.failures(&closed).len()
    );
}
