//! Reconsume-later against the real broker, with `max_reconsume_times(1)`: of messages whose
//! handler succeeds, fails once, or always fails,
//!
//! - the successful ones arrive once;
//! - a failed one comes back through the group's retry topic, no sooner than the broker's
//!   delay for a first retry (level 3, 10 s; anything under 5 s means no delay was applied),
//!   with `reconsume_times` 1, its original topic restored and `RETRY_TOPIC` naming it;
//! - the one that fails again has used its one reconsume: the broker moves it to
//!   `%DLQ%<group>` (whose queue 0 then holds one message) and it never comes back.
//!
//! About 15 s: one 10 s retry delay, then a few seconds of listening for extra deliveries.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::broker_scenario::{QUIET, Topic, builder, max_offset, sleep, wait_for};
use driver::prelude::*;
use proto::message::property;
use rocketmq_tests::unique;

/// The broker's delay before a first retry is level 3, 10 s; a retry sooner than this was not
/// delayed at all.
const MIN_RETRY_DELAY: Duration = Duration::from_secs(5);
/// How long the retries may take: 10 s delay, plus the scheduler's one-second ticks and pulls.
const RETRY_WAIT: Duration = Duration::from_secs(40);

/// One delivery as the handler saw it.
#[derive(Clone, Debug)]
struct Seen {
    body: String,
    topic: String,
    reconsume_times: i32,
    retry_topic: Option<String>,
    at: Instant,
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn failed_messages_retry_then_reach_the_dead_letter_queue<R: Runtime>(
    prefix: &str,
) {
    let topic = Topic::create(prefix, 2);
    let group = unique("reconsume");
    let ok = format!("{}/ok", topic.name);
    let once = format!("{}/fail-once", topic.name);
    let always = format!("{}/fail-always", topic.name);
    let mut client = topic.client();
    topic.send_to(&mut client, 0, &ok, None);
    topic.send_to(&mut client, 1, &once, None);
    topic.send_to(&mut client, 0, &always, None);

    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let record = Arc::clone(&seen);
    let (fail_once, fail_always) = (once.clone(), always.clone());
    let running = builder::<R>(&topic, &group, "*", ConsumeFrom::First)
        .max_reconsume_times(1)
        .build()
        .expect("the consumer's configuration is valid")
        .start_concurrently(move |messages: Messages| {
            let record = Arc::clone(&record);
            let (fail_once, fail_always) = (fail_once.clone(), fail_always.clone());
            async move {
                let mut outcome = ConsumeOutcome::Success;
                for message in &messages {
                    let body = String::from_utf8_lossy(message.body()).into_owned();
                    let fails = body == fail_always
                        || (body == fail_once && message.reconsume_times() == 0);
                    if fails {
                        outcome = ConsumeOutcome::ReconsumeLater;
                    }
                    if let Ok(mut seen) = record.lock() {
                        seen.push(Seen {
                            body,
                            topic: message.topic().to_owned(),
                            reconsume_times: message.reconsume_times(),
                            retry_topic: message.property(property::RETRY_TOPIC).map(str::to_owned),
                            at: Instant::now(),
                        });
                    }
                }
                outcome
            }
        });

    let snapshot = || seen.lock().map(|s| s.clone()).unwrap_or_default();
    let times = |body: &str| snapshot().iter().filter(|s| s.body == body).count();
    wait_for::<R>("the first deliveries", || {
        times(&ok) == 1 && times(&once) == 1 && times(&always) == 1
    })
    .await;
    let runtime = R::default();
    let deadline = runtime.now() + RETRY_WAIT;
    while times(&once) < 2 || times(&always) < 2 {
        assert!(
            runtime.now() < deadline,
            "the failed messages did not come back within {RETRY_WAIT:?}: {:#?}",
            snapshot()
        );
        sleep::<R>(Duration::from_millis(200)).await;
    }
    let dlq = format!("%DLQ%{group}");
    wait_for::<R>(
        "the dead-letter queue holds the message that failed twice",
        || max_offset(topic.broker(), &dlq, 0) == Ok(1),
    )
    .await;
    sleep::<R>(QUIET).await;
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");

    let seen = snapshot();
    let of =
        |body: &str| -> Vec<Seen> { seen.iter().filter(|s| s.body == body).cloned().collect() };
    assert_eq!(
        of(&ok).len(),
        1,
        "the successful message arrived once: {seen:#?}"
    );
    for body in [&once, &always] {
        let arrivals = of(body);
        assert_eq!(
            arrivals
                .iter()
                .map(|s| s.reconsume_times)
                .collect::<Vec<_>>(),
            vec![0, 1],
            "{body} arrives once, then once more through the retry topic: {seen:#?}"
        );
        let (first, retry) = (&arrivals[0], &arrivals[1]);
        assert!(
            retry.at.duration_since(first.at) >= MIN_RETRY_DELAY,
            "{body} came back after {:?}: the broker applied no retry delay",
            retry.at.duration_since(first.at)
        );
        assert_eq!(first.topic, topic.name, "{first:?}");
        assert_eq!(first.retry_topic, None, "{first:?}");
        assert_eq!(
            retry.topic, topic.name,
            "the original topic is restored: {retry:?}"
        );
        assert_eq!(
            retry.retry_topic.as_deref(),
            Some(topic.name.as_str()),
            "the retry copy names its original topic: {retry:?}"
        );
    }
    assert_eq!(
        max_offset(topic.broker(), &dlq, 0),
        Ok(1),
        "exactly one message (the one that failed twice) reached {dlq}"
    );
    assert!(
        report.uncommitted.is_empty(),
        "queues left uncommitted: {report:?}"
    );
}
