//! The lite pull consumer against the real broker:
//!
//! - subscribe mode reads exactly the produced set (each body once);
//! - a paused queue yields nothing while messages arrive for every queue, and its messages
//!   come after `resume`;
//! - `commit` resolves once the broker holds the offsets (a query right after it sees them),
//!   and a new consumer of the group starts after them;
//! - assign mode reads its queues, and `seek_to_begin` reads them all again;
//! - `offset_for_timestamp` answers the queue's start for an old time and its end for a
//!   future one;
//! - a commit or a shutdown in the middle of a batch commits only what was read, and the rest
//!   of the batch is read later, once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use super::broker_scenario::{QUIET, Topic, WAIT, assert_exactly_once};
use driver::LitePullConsumer;
use driver::prelude::*;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::{BrokerImpl, broker_impl, unique};

/// Queues of the topic.
const QUEUES: i32 = 4;
/// Messages of each batch (`Topic::send` puts message `i` in queue `i % QUEUES`).
const MESSAGES: usize = 40;

/// Reads bodies until every one of `expected` arrived (panicking after [`WAIT`]), then for
/// [`QUIET`] more; returns every body read, with the queue it came from.
async fn read<R: Runtime>(
    pull: &mut LitePullConsumer<R>,
    expected: &BTreeSet<String>,
) -> Vec<(i32, String)> {
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    let mut read = Vec::new();
    let mut seen = BTreeSet::new();
    loop {
        let waiting = !expected.is_subset(&seen);
        let until = if waiting {
            deadline
        } else {
            runtime.now() + QUIET
        };
        let mut timer = runtime.sleep_until(until);
        match future::select(pull.next(), timer.as_mut()).await {
            Either::Left((Some(message), _)) => {
                let body = String::from_utf8_lossy(message.body()).into_owned();
                seen.insert(body.clone());
                read.push((message.queue_id(), body));
            }
            Either::Left((None, _)) => panic!("the stream ended while reading"),
            Either::Right(((), _)) if waiting => panic!(
                "{} of {} expected messages read within {WAIT:?}; missing: {:?}",
                expected.intersection(&seen).count(),
                expected.len(),
                expected.difference(&seen).collect::<Vec<_>>()
            ),
            Either::Right(((), _)) => return read,
        }
    }
}

fn bodies(read: &[(i32, String)]) -> Vec<String> {
    read.iter().map(|(_, body)| body.clone()).collect()
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn reads_pauses_commits_and_seeks<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, QUEUES);
    let group = unique("lite-pull");
    let first = topic.send("first", MESSAGES, None);
    let mut pull = LitePullConsumer::<R>::builder(&group)
        .name_server(topic.namesrv.clone())
        .subscribe(topic.name.clone(), "*")
        .consume_from(ConsumeFrom::First)
        .auto_commit(false)
        .poll_batch_size(8)
        .build()
        .expect("the consumer's configuration is valid");
    let got = read(&mut pull, &first).await;
    assert_exactly_once(&bodies(&got), &first, "subscribe mode");

    // Pause one queue: what arrives for it stays behind until resumed.
    let queues = pull.assignment().await.expect("the assignment");
    assert_eq!(queues.len(), 4, "one member owns every queue: {queues:?}");
    let paused = queues
        .iter()
        .find(|q| q.queue_id() == 0)
        .cloned()
        .expect("queue 0 is owned");
    pull.pause(&paused).await.expect("pause queue 0");
    let second = topic.send("second", MESSAGES, None);
    let (held, flowing): (BTreeSet<String>, BTreeSet<String>) =
        second.iter().cloned().partition(|body| {
            body.rsplit('/')
                .next()
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| i % 4 == 0)
        });
    let got = read(&mut pull, &flowing).await;
    assert_exactly_once(&bodies(&got), &flowing, "the unpaused queues");
    pull.resume(&paused).await.expect("resume queue 0");
    let got = read(&mut pull, &held).await;
    assert_exactly_once(&bodies(&got), &held, "the resumed queue");

    // Commit: the broker holds the offsets as soon as it resolves.
    let report = pull.commit().await.expect("commit");
    let total = i64::try_from(2 * MESSAGES).unwrap_or(i64::MAX);
    let committed: i64 = report.committed.iter().map(|(_, offset)| offset).sum();
    assert_eq!(
        committed, total,
        "the commit covers everything read: {report:?}"
    );
    assert!(report.unconfirmed.is_empty(), "{report:?}");
    let on_broker = rmq_cli::admin::offsets(
        &rmq_cli::admin::Cluster::new(topic.namesrv.as_str()),
        &group,
        &topic.name,
    )
    .expect("query the group's offsets");
    assert_eq!(
        on_broker
            .iter()
            .map(|q| q.committed_offset.unwrap_or(0))
            .sum::<i64>(),
        total,
        "the broker holds the committed offsets: {on_broker:?}"
    );

    // offset_for_timestamp: an old time is the queue's start, a future one its end.
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default();
    let start = pull
        .offset_for_timestamp(&paused, 0)
        .await
        .expect("offset for an old time");
    let end = pull
        .offset_for_timestamp(&paused, now_ms + 3_600_000)
        .await
        .expect("offset for a future time");
    // For a time after the last message, Apache 4.9's ConsumeQueue.getOffsetInQueueByTime
    // answers the last message's offset, the Rust broker the queue's end.
    let last = match broker_impl() {
        BrokerImpl::Java4 => 19,
        BrokerImpl::Java5 | BrokerImpl::Rust => 20,
    };
    assert_eq!((start, end), (0, last), "queue 0 holds 20 messages");
    drop(pull.shutdown().await.expect("the consumer shuts down"));

    // A new consumer of the group starts after the committed offsets.
    let third = topic.send("third", MESSAGES, None);
    let mut again = LitePullConsumer::<R>::builder(&group)
        .name_server(topic.namesrv.clone())
        .subscribe(topic.name.clone(), "*")
        .consume_from(ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid");
    let got = read(&mut again, &third).await;
    assert_exactly_once(&bodies(&got), &third, "a new consumer after the commit");
    drop(again.shutdown().await.expect("the consumer shuts down"));

    // Assign mode, then seek_to_begin: everything once, then everything again.
    let broker = topic.broker_name();
    let assigned: Vec<MessageQueue> = (0..QUEUES)
        .map(|q| MessageQueue::new(&topic.name, &broker, q))
        .collect();
    let mut assign = LitePullConsumer::<R>::builder(unique("lite-assign"))
        .name_server(topic.namesrv.clone())
        .assign(assigned.clone())
        .consume_from(ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid");
    let everything: BTreeSet<String> = first.iter().chain(&second).chain(&third).cloned().collect();
    let got = read(&mut assign, &everything).await;
    assert_exactly_once(&bodies(&got), &everything, "assign mode");
    for queue in &assigned {
        assign
            .seek_to_begin(queue)
            .await
            .unwrap_or_else(|e| panic!("seek {queue:?} to its beginning: {e}"));
    }
    let got = read(&mut assign, &everything).await;
    assert_exactly_once(
        &bodies(&got),
        &everything,
        "assign mode after seek_to_begin",
    );
    let per_queue: BTreeMap<i32, usize> = got.iter().fold(BTreeMap::new(), |mut m, (q, _)| {
        *m.entry(*q).or_default() += 1;
        m
    });
    assert_eq!(
        per_queue,
        (0..QUEUES).map(|q| (q, 30)).collect(),
        "each queue read again from its start"
    );
    drop(assign.shutdown().await.expect("the consumer shuts down"));
}

/// Reads exactly `n` messages (panicking after [`WAIT`]); returns their bodies.
async fn read_n<R: Runtime>(pull: &mut LitePullConsumer<R>, n: usize) -> Vec<String> {
    let runtime = R::default();
    let mut timer = runtime.sleep_until(runtime.now() + WAIT);
    let mut read = Vec::new();
    while read.len() < n {
        match future::select(pull.next(), timer.as_mut()).await {
            Either::Left((Some(message), _)) => {
                read.push(String::from_utf8_lossy(message.body()).into_owned());
            }
            Either::Left((None, _)) => panic!("the stream ended while reading"),
            Either::Right(((), _)) => panic!("{} of {n} messages read within {WAIT:?}", read.len()),
        }
    }
    read
}

/// Committing or shutting down in the middle of a batch: the unread rest of the batch is
/// handed back, not committed, and read later exactly once (by the same consumer after a
/// commit, by the group's next consumer after a shutdown).
pub(crate) async fn commit_and_shutdown_mid_batch<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, QUEUES);
    let group = unique("lite-mid-batch");
    // `auto_commit` on: shutdown commits what was read (off, it commits only what `commit`
    // did, as Java's). No periodic commit within the test, which would count a batch taken
    // as consumed whether read or not (see the module docs of `lite_pull`).
    let build = |auto_commit| {
        LitePullConsumer::<R>::builder(&group)
            .name_server(topic.namesrv.clone())
            .subscribe(topic.name.clone(), "*")
            .consume_from(ConsumeFrom::First)
            .auto_commit(auto_commit)
            .configure(|c| c.persist_interval = std::time::Duration::from_secs(3600))
            .poll_batch_size(8)
            .build()
            .expect("the consumer's configuration is valid")
    };
    let committed_on_broker = || {
        rmq_cli::admin::offsets(
            &rmq_cli::admin::Cluster::new(topic.namesrv.as_str()),
            &group,
            &topic.name,
        )
        .expect("query the group's offsets")
        .iter()
        .map(|q| q.committed_offset.unwrap_or(0))
        .sum::<i64>()
    };
    let rest_of = |sent: &BTreeSet<String>, read: &[String]| -> BTreeSet<String> {
        sent.iter()
            .filter(|body| !read.contains(body))
            .cloned()
            .collect()
    };

    // Five read of a batch of eight (a queue holds ten), then commit: five committed.
    let first = topic.send("first", MESSAGES, None);
    let mut pull = build(false);
    let head = read_n(&mut pull, 5).await;
    let report = pull.commit().await.expect("commit");
    let committed: i64 = report.committed.iter().map(|(_, offset)| offset).sum();
    assert_eq!(committed, 5, "only what was read is committed: {report:?}");
    assert_eq!(committed_on_broker(), 5);
    let rest = rest_of(&first, &head);
    let got = read(&mut pull, &rest).await;
    assert_exactly_once(&bodies(&got), &rest, "the rest, after a mid-batch commit");
    pull.commit().await.expect("commit");
    drop(pull.shutdown().await.expect("the consumer shuts down"));
    assert_eq!(committed_on_broker(), 40);

    // Three read of a batch, then shut down: the group's next consumer reads the rest.
    let second = topic.send("second", MESSAGES, None);
    let mut pull = build(true);
    let head = read_n(&mut pull, 3).await;
    let report = pull.shutdown().await.expect("the consumer shuts down");
    assert_eq!(
        committed_on_broker(),
        43,
        "shutdown commits what was read, not the unread rest of the batch: {report:?}; {:?}",
        rmq_cli::admin::offsets(
            &rmq_cli::admin::Cluster::new(topic.namesrv.as_str()),
            &group,
            &topic.name
        )
    );
    let rest = rest_of(&second, &head);
    let mut next = build(true);
    let got = read(&mut next, &rest).await;
    assert_exactly_once(&bodies(&got), &rest, "the rest, after a mid-batch shutdown");
    drop(next.shutdown().await.expect("the consumer shuts down"));
}
