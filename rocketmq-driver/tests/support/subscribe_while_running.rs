//! Changing what a running consumer reads, on the real broker. A push consumer subscribes to
//! a second topic while running and receives its messages; after it unsubscribes from the
//! first, that topic's new messages stay away while the second's arrive. A lite pull consumer
//! re-assigned from one queue to another reads only the new queue's messages from then on.

use std::collections::BTreeSet;

use super::broker_scenario::{QUIET, Topic, WAIT, assert_exactly_once, start};
use driver::LitePullConsumer;
use driver::prelude::*;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::unique;

pub(crate) async fn topics_join_and_leave_a_running_consumer<R: Runtime>(prefix: &str) {
    let first = Topic::create(&format!("{prefix}-sub-first"), 2);
    let second = Topic::create(&format!("{prefix}-sub-second"), 2);
    let group = unique(&format!("{prefix}-sub"));
    let mut consuming = start::<R>(&first, &group, "*", ConsumeFrom::First);
    let sent = first.send("one", 10, None);
    consuming.exactly::<R>(&sent, "the first topic").await;

    consuming
        .running
        .subscribe(second.name.clone(), "*")
        .await
        .expect("the subscription is valid");
    let sent = second.send("two", 10, None);
    consuming
        .exactly::<R>(&sent, "the topic subscribed while running")
        .await;

    let was = consuming
        .running
        .unsubscribe(first.name.clone())
        .await
        .expect("the driver answers");
    assert!(was, "the first topic was subscribed");
    first.send("gone", 10, None);
    let sent = second.send("three", 10, None);
    // Only the second topic's messages arrive; `exactly` fails on any other.
    consuming
        .exactly::<R>(&sent, "the topic left after unsubscribing")
        .await;
    drop(consuming.shutdown().await);
}

pub(crate) async fn a_lite_pull_consumer_is_reassigned<R: Runtime>(prefix: &str) {
    let topic = Topic::create(&format!("{prefix}-reassign"), 2);
    let queue = |id| MessageQueue::new(&topic.name, &topic.broker_name(), id);
    let mut pull = LitePullConsumer::<R>::builder(unique(&format!("{prefix}-reassign")))
        .name_server(topic.namesrv.clone())
        .assign([queue(0)])
        .consume_from(ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid");
    // `Topic::send` puts message i in queue i % 2.
    let sent = topic.send("a", 20, None);
    let odd = |body: &String| body.ends_with(['1', '3', '5', '7', '9']);
    let even: BTreeSet<String> = sent.iter().filter(|b| !odd(b)).cloned().collect();
    let got = read_for::<R>(&mut pull, &even).await;
    assert_exactly_once(&got, &even, "queue 0 as first assigned");

    pull.assign([queue(1)])
        .await
        .expect("the assignment is valid");
    let later = topic.send("b", 20, None);
    let expect: BTreeSet<String> = sent
        .iter()
        .chain(&later)
        .filter(|b| odd(b))
        .cloned()
        .collect();
    let got = read_for::<R>(&mut pull, &expect).await;
    assert_exactly_once(&got, &expect, "queue 1 once re-assigned, from its start");
    drop(pull.shutdown().await);
}

/// Reads until every one of `expected` arrived (panicking after [`WAIT`]), then for [`QUIET`]
/// more; returns every body read.
async fn read_for<R: Runtime>(
    pull: &mut LitePullConsumer<R>,
    expected: &BTreeSet<String>,
) -> Vec<String> {
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    let mut read = Vec::new();
    loop {
        let waiting = !expected.iter().all(|b| read.contains(b));
        let until = if waiting {
            deadline
        } else {
            runtime.now() + QUIET
        };
        let mut timer = runtime.sleep_until(until);
        match future::select(pull.next(), timer.as_mut()).await {
            Either::Left((Some(message), _)) => {
                read.push(String::from_utf8_lossy(message.body()).into_owned());
            }
            Either::Left((None, _)) => panic!("the stream ended while reading"),
            Either::Right(((), _)) if waiting => {
                panic!(
                    "{} of {} expected within {WAIT:?}",
                    read.len(),
                    expected.len()
                )
            }
            Either::Right(((), _)) => return read,
        }
    }
}
