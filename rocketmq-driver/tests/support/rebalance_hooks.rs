//! A push consumer's rebalance hooks on the real broker. `on_assigned` tells the first member
//! of an orderly group its four queues with their start offsets; when a second member joins,
//! the first member's `on_revoke` gets the queues it gives up, and, as their final commit and
//! unlock wait for the hook's future (here one second), the new owner receives nothing of a
//! queue before the hook finished for it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::broker_scenario::{Topic, builder, sleep, wait_for};
use driver::prelude::*;
use rocketmq_tests::unique;

/// How long the revoke hook takes.
const HOOK_TIME: Duration = Duration::from_secs(1);

type Log<T> = Arc<Mutex<Vec<T>>>;

fn push<T>(log: &Log<T>, item: T) {
    if let Ok(mut log) = log.lock() {
        log.push(item);
    }
}

fn read<T: Clone>(log: &Log<T>) -> Vec<T> {
    log.lock().map(|l| l.clone()).unwrap_or_default()
}

/// Starts an orderly member whose handler logs `(when, queue id)` of every message.
fn member<R: Runtime>(
    builder: driver::PushConsumerBuilder<R>,
    delivered: &Log<(Instant, i32)>,
) -> RunningConsumer {
    let delivered = Arc::clone(delivered);
    builder
        .build()
        .expect("the consumer's configuration is valid")
        .start_orderly(move |messages: Messages| {
            let now = R::default().now();
            for m in &messages {
                push(&delivered, (now, m.queue_id()));
            }
            std::future::ready(ConsumeOutcome::Success)
        })
}

pub(crate) async fn the_revoke_hook_runs_before_the_next_owner_gets_the_queue<R: Runtime>(
    prefix: &str,
) {
    let topic = Topic::create(&format!("{prefix}-hooks"), 4);
    let group = unique(&format!("{prefix}-hooks"));
    let assigned: Log<(MessageQueue, i64)> = Log::default();
    let revoked: Log<(Instant, MessageQueue)> = Log::default();
    let first_got: Log<(Instant, i32)> = Log::default();
    let second_got: Log<(Instant, i32)> = Log::default();

    let on_assigned = Arc::clone(&assigned);
    let on_revoke = Arc::clone(&revoked);
    let first = member(
        builder::<R>(&topic, &group, "*", ConsumeFrom::First)
            .on_assigned(move |queues| {
                for q in queues {
                    push(&on_assigned, q);
                }
                std::future::ready(())
            })
            .on_revoke(move |queues| {
                let on_revoke = Arc::clone(&on_revoke);
                async move {
                    sleep::<R>(HOOK_TIME).await;
                    let done = R::default().now();
                    for q in queues {
                        push(&on_revoke, (done, q));
                    }
                }
            }),
        &first_got,
    );
    wait_for::<R>("the first member started its four queues", || {
        read(&assigned).len() == 4
    })
    .await;
    let starts: BTreeMap<i32, i64> = read(&assigned)
        .into_iter()
        .map(|(q, offset)| (q.queue_id(), offset))
        .collect();
    assert_eq!(
        starts,
        (0..4).map(|q| (q, 0)).collect(),
        "a new group starts at the first offset everywhere"
    );
    let sent = topic.send("before", 40, None);
    wait_for::<R>("the first member consumed everything", || {
        read(&first_got).len() >= sent.len()
    })
    .await;

    let second = member(
        builder::<R>(&topic, &group, "*", ConsumeFrom::First),
        &second_got,
    );
    wait_for::<R>("the first member gave up two queues", || {
        read(&revoked).len() == 2
    })
    .await;
    topic.send("after", 40, None);
    wait_for::<R>("the second member consumed from its queues", || {
        read(&second_got)
            .iter()
            .map(|(_, q)| *q)
            .collect::<BTreeSet<_>>()
            .len()
            == 2
    })
    .await;
    let revoked = read(&revoked);
    let second_queues: BTreeSet<i32> = read(&second_got).iter().map(|(_, q)| *q).collect();
    assert_eq!(
        revoked
            .iter()
            .map(|(_, q)| q.queue_id())
            .collect::<BTreeSet<_>>(),
        second_queues,
        "the revoked queues are the ones the new member consumes"
    );
    for (hook_done, queue) in &revoked {
        let first_delivery = read(&second_got)
            .iter()
            .filter(|(_, q)| *q == queue.queue_id())
            .map(|(at, _)| *at)
            .min()
            .expect("the second member got the revoked queue");
        assert!(
            first_delivery >= *hook_done,
            "queue {} reached the new owner {:?} before the revoke hook finished",
            queue.queue_id(),
            hook_done.saturating_duration_since(first_delivery)
        );
    }
    drop(second.shutdown().await);
    drop(first.shutdown().await);
}
