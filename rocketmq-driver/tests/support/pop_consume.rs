//! Pop consumption against the real broker (Apache RocketMQ 5.x only: 4.9 has no pop; the test
//! binaries' `pop_` modules are what a 4.9 run leaves out):
//!
//! - three pop members of one group share a topic of ONE queue: every message is consumed, once,
//!   and each member gets a share (a classic consumer would give the queue to one member);
//! - a failing handler's message comes back after the retry backoff with its reconsume count
//!   raised, and one that keeps failing goes to `%DLQ%<group>` at `max_reconsume_times`;
//! - a handler that runs for 2.5 times the invisibility keeps its message: the consumer renews
//!   it, so neither member gets it again.
//!
//! Every wait is bounded (`WAIT`, or the scenario's own deadline) and fails loudly.
#![allow(
    dead_code,
    reason = "each adapter's binary uses the scenarios it names"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use driver::prelude::*;
use driver::{PopConsumer, RunningPopConsumer, SimpleConsumer};
use futures_util::StreamExt;
use rocketmq_tests::unique;

use super::broker_scenario::{QUIET, Topic, max_offset, sleep, wait_for};

/// One delivery as a handler saw it.
#[derive(Clone, Debug)]
struct Seen {
    member: usize,
    body: String,
    reconsume_times: i32,
    at: Instant,
}

type Log = Arc<Mutex<Vec<Seen>>>;

fn snapshot(log: &Log) -> Vec<Seen> {
    log.lock().map(|s| s.clone()).unwrap_or_default()
}

/// A pop member of `group` on `topic` whose handler records each message, sleeps `took(body)`
/// and answers `outcome(body, reconsume_times)`.
fn member<R: Runtime>(
    topic: &Topic,
    group: &str,
    index: usize,
    log: &Log,
    configure: impl FnOnce(driver::PopConsumerBuilder<R>) -> driver::PopConsumerBuilder<R>,
    took: impl Fn(&str) -> Duration + Send + Sync + 'static,
    outcome: impl Fn(&str, i32) -> ConsumeOutcome + Send + Sync + 'static,
) -> RunningPopConsumer<R> {
    let log = Arc::clone(log);
    let took = Arc::new(took);
    let outcome = Arc::new(outcome);
    let builder = PopConsumer::<R>::builder(group)
        .name_server(&topic.namesrv)
        .subscribe(&topic.name, "*")
        .instance_name(format!("pop-{index}"));
    configure(builder)
        .build()
        .expect("the pop consumer's configuration is valid")
        .start(move |messages: Messages| {
            let (log, took, outcome) = (Arc::clone(&log), Arc::clone(&took), Arc::clone(&outcome));
            async move {
                let mut result = ConsumeOutcome::Success;
                let mut longest = Duration::ZERO;
                for message in &messages {
                    let body = String::from_utf8_lossy(message.body()).into_owned();
                    if let Ok(mut log) = log.lock() {
                        log.push(Seen {
                            member: index,
                            body: body.clone(),
                            reconsume_times: message.reconsume_times(),
                            at: Instant::now(),
                        });
                    }
                    longest = longest.max(took(&body));
                    let said = outcome(&body, message.reconsume_times());
                    if said != ConsumeOutcome::Success {
                        result = said;
                    }
                }
                if !longest.is_zero() {
                    sleep::<R>(longest).await;
                }
                result
            }
        })
        .expect("the pop consumer starts")
}

/// Three members, one queue, 60 messages.
pub(crate) async fn three_members_share_one_queue<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 1);
    let group = unique("pop-share");
    let log: Log = Arc::default();
    let members: Vec<RunningPopConsumer<R>> = (0..3)
        .map(|i| {
            member::<R>(
                &topic,
                &group,
                i,
                &log,
                // Small pops, so one member's long poll does not take the whole backlog.
                |b| b.batch_size(4).max_in_flight_deliveries(2),
                |_| Duration::from_millis(50),
                |_, _| ConsumeOutcome::Success,
            )
        })
        .collect();
    // Let every member register and get its assignment before the messages come.
    sleep::<R>(Duration::from_secs(5)).await;
    let sent = topic.send("share", 60, None);
    wait_for::<R>("every message consumed", || {
        let bodies: BTreeSet<String> = snapshot(&log).into_iter().map(|s| s.body).collect();
        sent.iter().all(|b| bodies.contains(b))
    })
    .await;
    sleep::<R>(QUIET).await;
    let seen = snapshot(&log);
    let mut shares = BTreeMap::<usize, usize>::new();
    let mut times = BTreeMap::<&str, usize>::new();
    for s in &seen {
        *shares.entry(s.member).or_default() += 1;
        *times.entry(s.body.as_str()).or_default() += 1;
    }
    eprintln!("pop shares of one queue among three members: {shares:?}");
    let twice: Vec<_> = times.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    assert_eq!(
        shares.len(),
        3,
        "every member got a share of the one queue: {shares:?}"
    );
    let mut acked = 0;
    for running in members {
        acked += running.stats().await.expect("the consumer runs").acked;
        let report = running.shutdown().await.expect("the consumer shuts down");
        assert_eq!(report.abandoned, 0);
    }
    assert_eq!(acked, 60, "every message acked; shares {shares:?}");
}

/// A message that fails once comes back raised; one that always fails is dead-lettered.
pub(crate) async fn failures_come_back_raised_then_dead_letter<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 1);
    let group = unique("pop-retry");
    let log: Log = Arc::default();
    let once = format!("{}/retry/0", topic.name);
    let always = format!("{}/retry/1", topic.name);
    let (fail_once, fail_always) = (once.clone(), always.clone());
    let running = member::<R>(
        &topic,
        &group,
        0,
        &log,
        |b| {
            b.max_reconsume_times(1)
                .retry_delays(vec![Duration::from_secs(3)])
        },
        |_| Duration::ZERO,
        move |body, reconsumed| {
            if body == fail_always || (body == fail_once && reconsumed == 0) {
                ConsumeOutcome::ReconsumeLater
            } else {
                ConsumeOutcome::Success
            }
        },
    );
    sleep::<R>(Duration::from_secs(5)).await;
    let sent = topic.send("retry", 3, None);
    assert!(sent.contains(&once) && sent.contains(&always));
    let count = |body: &str| snapshot(&log).iter().filter(|s| s.body == body).count();
    let runtime = R::default();
    let deadline = runtime.now() + Duration::from_secs(90);
    while count(&once) < 2 || count(&always) < 2 {
        assert!(
            runtime.now() < deadline,
            "the failed messages did not come back: {:#?} {:?}",
            snapshot(&log),
            running.stats().await
        );
        sleep::<R>(Duration::from_millis(200)).await;
    }
    let dlq = format!("%DLQ%{group}");
    wait_for::<R>(
        "the dead-letter queue holds the message that kept failing",
        || max_offset(topic.broker(), &dlq, 0) == Ok(1),
    )
    .await;
    sleep::<R>(QUIET).await;
    let stats = running.stats().await.expect("the consumer runs");
    running.shutdown().await.expect("the consumer shuts down");
    let seen = snapshot(&log);
    let of =
        |body: &str| -> Vec<Seen> { seen.iter().filter(|s| s.body == body).cloned().collect() };
    let first = of(&once);
    assert_eq!(first.len(), 2, "fail-once came back once: {seen:#?}");
    assert_eq!(
        (first[0].reconsume_times, first[1].reconsume_times),
        (0, 1),
        "its reconsume count was raised: {seen:#?}"
    );
    let waited = first[1].at - first[0].at;
    assert!(
        waited >= Duration::from_secs(3),
        "it came back after {waited:?}, before its 3 s backoff"
    );
    let last = of(&always);
    assert_eq!(
        last.iter().map(|s| s.reconsume_times).collect::<Vec<_>>(),
        [0, 1],
        "fail-always was delivered until its one reconsume, then dead-lettered: {seen:#?}"
    );
    assert_eq!(stats.dead_lettered, 1, "{stats:?}");
    let others = seen
        .iter()
        .filter(|s| s.body != once && s.body != always)
        .count();
    assert_eq!(others, 1, "the third message arrived once: {seen:#?}");
}

/// A 25 s handler with a 10 s invisibility, renewed 4 s ahead, between two members.
pub(crate) async fn a_long_handler_keeps_its_message<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 1);
    let group = unique("pop-renew");
    let log: Log = Arc::default();
    let slow = format!("{}/renew/0", topic.name);
    let members: Vec<RunningPopConsumer<R>> = (0..2)
        .map(|i| {
            let slow = slow.clone();
            member::<R>(
                &topic,
                &group,
                i,
                &log,
                |b| {
                    b.invisible_time(Duration::from_secs(10))
                        .renew_ahead(Duration::from_secs(4))
                },
                move |body| {
                    if body == slow {
                        Duration::from_secs(25)
                    } else {
                        Duration::ZERO
                    }
                },
                |_, _| ConsumeOutcome::Success,
            )
        })
        .collect();
    sleep::<R>(Duration::from_secs(5)).await;
    topic.send("renew", 3, None);
    wait_for::<R>("the slow message is delivered", || {
        snapshot(&log).iter().any(|s| s.body == slow)
    })
    .await;
    // Its handler runs 25 s; the invisibility would have ended twice over without renewal,
    // and the broker's revive would have handed it to a member again.
    sleep::<R>(Duration::from_secs(25 + 15)).await;
    let seen = snapshot(&log);
    let slow_seen: Vec<_> = seen.iter().filter(|s| s.body == slow).collect();
    assert_eq!(
        slow_seen.len(),
        1,
        "the slow message was delivered once: {seen:#?}"
    );
    let mut renewed = 0;
    let mut acked = 0;
    for running in members {
        let stats = running.stats().await.expect("the consumer runs");
        renewed += stats.renewed;
        acked += stats.acked;
        running.shutdown().await.expect("the consumer shuts down");
    }
    assert!(renewed >= 2, "renewed {renewed} times");
    assert_eq!(acked, 3, "all three acked");
}

/// The simple consumer: receive, change the invisibility, ack; and as a stream.
pub(crate) async fn simple_consumer_receives_and_acks<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 1);
    let group = unique("pop-simple");
    let consumer = SimpleConsumer::<R>::builder(&group)
        .name_server(&topic.namesrv)
        .subscribe(&topic.name, "*")
        .batch_size(8)
        .invisible_time(Duration::from_secs(20))
        .build_simple()
        .expect("the simple consumer starts");
    sleep::<R>(Duration::from_secs(5)).await;
    let sent = topic.send("simple", 5, None);
    let runtime = R::default();
    let deadline = runtime.now() + Duration::from_secs(60);
    let mut got = Vec::new();
    while got.len() < 3 {
        assert!(runtime.now() < deadline, "received only {} of 3", got.len());
        let received = consumer
            .receive(3 - got.len() as u32, Duration::from_secs(20))
            .await
            .expect("receive is answered");
        got.extend(received);
    }
    // One is kept longer, then acked with the new receipt.
    let renewed = consumer
        .change_invisible_duration(&got[0].receipt, Duration::from_secs(30))
        .await
        .expect("the broker changes the invisibility");
    assert_ne!(
        renewed.handle, got[0].receipt.handle,
        "a new receipt handle"
    );
    consumer
        .ack(&renewed)
        .await
        .expect("the renewed receipt acks");
    for message in &got[1..] {
        consumer.ack(&message.receipt).await.expect("acked");
    }
    // The old receipt of the renewed one was spent by the change.
    let mut consumer = consumer;
    let mut rest = Vec::new();
    while rest.len() < 2 {
        assert!(
            runtime.now() < deadline,
            "the stream brought {} of 2",
            rest.len()
        );
        let next = futures_util::future::select(
            consumer.next(),
            Box::pin(sleep::<R>(Duration::from_secs(20))),
        )
        .await;
        match next {
            futures_util::future::Either::Left((Some(message), _)) => rest.push(message),
            futures_util::future::Either::Left((None, _)) => panic!("the stream ended"),
            futures_util::future::Either::Right(_) => {}
        }
    }
    for message in &rest {
        consumer.ack(&message.receipt).await.expect("acked");
    }
    let bodies: BTreeSet<String> = got
        .iter()
        .chain(&rest)
        .map(|m| String::from_utf8_lossy(m.message.body()).into_owned())
        .collect();
    assert_eq!(bodies, sent, "every message received once");
    let stats = consumer.stats().await.expect("the consumer runs");
    assert_eq!(stats.acked, 5);
    consumer.shutdown().await.expect("the consumer shuts down");
}

/// A member stopped as a kill would stop it, mid-batch: its unacked messages come back to the
/// other member after their 10 s invisibility, with the reconsume count raised, and nothing is
/// lost.
pub(crate) async fn a_killed_members_messages_come_back<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 1);
    let group = unique("pop-kill");
    let log: Log = Arc::default();
    let invisible = Duration::from_secs(10);
    // The backlog is there first, so member 0's first pop brings a whole batch of four.
    let sent = topic.send("kill", 12, None);
    // Member 0 never finishes a message: it holds what it popped when it dies.
    let doomed = member::<R>(
        &topic,
        &group,
        0,
        &log,
        |b| {
            b.invisible_time(invisible)
                .batch_size(4)
                .max_cached(4, 1 << 20)
                .max_in_flight_deliveries(4)
        },
        |_| Duration::from_secs(3600),
        |_, _| ConsumeOutcome::Success,
    );
    wait_for::<R>("member 0 holds a batch", || snapshot(&log).len() >= 4).await;
    let held: BTreeSet<String> = snapshot(&log).into_iter().map(|s| s.body).collect();
    let killed_at = Instant::now();
    doomed.abort();
    let survivor = member::<R>(
        &topic,
        &group,
        1,
        &log,
        |b| {
            b.invisible_time(invisible)
                .on_event(|e| eprintln!("SURVIVOR {e:?}"))
        },
        |_| Duration::ZERO,
        |_, _| ConsumeOutcome::Success,
    );
    let runtime = R::default();
    let deadline = runtime.now() + Duration::from_secs(60);
    loop {
        let by_survivor: BTreeSet<String> = snapshot(&log)
            .into_iter()
            .filter(|s| s.member == 1)
            .map(|s| s.body)
            .collect();
        if sent.iter().all(|b| by_survivor.contains(b)) {
            break;
        }
        assert!(
            runtime.now() < deadline,
            "the survivor consumed {} of 12 in 60 s (member 0 held {held:?}): {:?}",
            by_survivor.len(),
            survivor.stats().await
        );
        sleep::<R>(Duration::from_millis(200)).await;
    }
    sleep::<R>(QUIET).await;
    let seen = snapshot(&log);
    for body in &held {
        let again: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.member == 1 && &s.body == body)
            .collect();
        assert_eq!(again.len(), 1, "{body} came back once: {seen:#?}");
        assert_eq!(again[0].reconsume_times, 1, "{body}: {seen:#?}");
        assert!(
            again[0].at >= killed_at,
            "{body} came back before the member died"
        );
    }
    let stats = survivor.stats().await.expect("the consumer runs");
    survivor.shutdown().await.expect("the survivor shuts down");
    eprintln!(
        "pop kill: member 0 held {} of 12 when it died; the survivor acked {}",
        held.len(),
        stats.acked
    );
    assert_eq!(stats.acked, 12, "{stats:?}");
}

/// Orderly pop: three members pop a topic of two queues, 15 messages each; the third message
/// of queue 0 fails once. Across the group, each queue's messages reach a handler in offset
/// order, the failed one again before any later message of its queue (its delivery sequence
/// never goes back), with its reconsume count raised; every message is consumed, and no other
/// message is delivered twice.
pub(crate) async fn orderly_pop_keeps_each_queue_in_order<R: Runtime>(prefix: &str) {
    const PER_QUEUE: usize = 15;
    let topic = Topic::create(prefix, 2);
    let group = unique("pop-orderly");
    let log: Log = Arc::default();
    let failed_once = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let members: Vec<RunningPopConsumer<R>> = (0..3)
        .map(|i| {
            let failed_once = Arc::clone(&failed_once);
            member::<R>(
                &topic,
                &group,
                i,
                &log,
                |b| {
                    b.orderly()
                        .batch_size(4)
                        .retry_delays(vec![Duration::from_secs(2)])
                },
                |_| Duration::from_millis(20),
                move |body, _| {
                    if body.ends_with("/q0/2")
                        && !failed_once.swap(true, std::sync::atomic::Ordering::SeqCst)
                    {
                        ConsumeOutcome::ReconsumeLater
                    } else {
                        ConsumeOutcome::Success
                    }
                },
            )
        })
        .collect();
    sleep::<R>(Duration::from_secs(5)).await;
    let mut client = topic.client();
    let mut sent = BTreeSet::new();
    for i in 0..PER_QUEUE {
        for queue in 0..2 {
            let body = format!("{}/q{queue}/{i}", topic.name);
            topic.send_to(&mut client, queue, &body, None);
            sent.insert(body);
        }
    }
    wait_for::<R>("every message consumed", || {
        let bodies: BTreeSet<String> = snapshot(&log).into_iter().map(|s| s.body).collect();
        sent.iter().all(|b| bodies.contains(b))
    })
    .await;
    sleep::<R>(QUIET).await;
    let mut seen = snapshot(&log);
    seen.sort_by_key(|s| s.at);
    for queue in 0..2 {
        let marker = format!("/q{queue}/");
        let sequence: Vec<(usize, i32, usize)> = seen
            .iter()
            .filter(|s| s.body.contains(&marker))
            .map(|s| {
                let index = s
                    .body
                    .rsplit('/')
                    .next()
                    .and_then(|i| i.parse().ok())
                    .expect("bodies end in their index");
                (index, s.reconsume_times, s.member)
            })
            .collect();
        eprintln!("orderly pop, queue {queue}: (index, reconsume, member) {sequence:?}");
        let indexes: Vec<usize> = sequence.iter().map(|(i, ..)| *i).collect();
        assert!(
            indexes.windows(2).all(|w| w[0] <= w[1]),
            "queue {queue} was delivered out of order: {indexes:?}"
        );
        let expected_len = if queue == 0 { PER_QUEUE + 1 } else { PER_QUEUE };
        assert_eq!(
            indexes.len(),
            expected_len,
            "queue {queue}: each message once (the failed one twice): {indexes:?}"
        );
        if queue == 0 {
            let again = sequence
                .iter()
                .filter(|(i, ..)| *i == 2)
                .map(|(_, reconsume, _)| *reconsume)
                .collect::<Vec<_>>();
            assert_eq!(again.len(), 2, "q0/2 failed once and came back: {again:?}");
            assert!(again[1] >= 1, "its redelivery is counted: {again:?}");
        }
    }
    for running in members {
        let report = running.shutdown().await.expect("the consumer shuts down");
        assert_eq!(report.abandoned, 0);
    }
}
