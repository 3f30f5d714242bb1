//! Two push consumers of one group against the real broker: they split a 4-queue topic (each
//! owns some queues, none owned twice), each receives exactly the messages of its own queues
//! (so the union is everything and no body arrives twice); when one shuts down the other takes
//! over all queues and receives every message sent from then on, and nothing consumed before.

use std::collections::BTreeSet;
use std::time::Duration;

use super::broker_scenario::{QUIET, Topic, WAIT, assert_exactly_once, start, wait_for};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Queues of the topic.
const QUEUES: i32 = 4;
/// Messages sent while both consumers run, then again after one left.
const MESSAGES: usize = 40;

/// The bodies of `bodies` sent to a queue in `queues` (`Topic::send` puts message `i` in queue
/// `i % QUEUES`, and the body ends with `/i`).
fn of_queues(bodies: &BTreeSet<String>, queues: &BTreeSet<i32>) -> BTreeSet<String> {
    bodies
        .iter()
        .filter(|body| {
            let i: i32 = body
                .rsplit('/')
                .next()
                .and_then(|i| i.parse().ok())
                .unwrap_or_else(|| panic!("no index in {body}"));
            queues.contains(&(i % QUEUES))
        })
        .cloned()
        .collect()
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn two_members_split_then_one_takes_over<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, QUEUES);
    let group = unique("group-split");
    let mut first = start::<R>(&topic, &group, "*", ConsumeFrom::First);
    let mut second = start::<R>(&topic, &group, "*", ConsumeFrom::First);
    let all: BTreeSet<i32> = (0..QUEUES).collect();
    wait_for::<R>("the two consumers split the queues", || {
        let (a, b) = (first.owned.get(), second.owned.get());
        !a.is_empty() && !b.is_empty() && a.is_disjoint(&b) && a.union(&b).eq(all.iter())
    })
    .await;
    let (first_queues, second_queues) = (first.owned.get(), second.owned.get());

    let shared = topic.send("shared", MESSAGES, None);
    let (mut got_first, mut got_second) = (Vec::new(), Vec::new());
    let mut waited = Duration::ZERO;
    let step = Duration::from_millis(200);
    loop {
        got_first.extend(first.during::<R>(step).await);
        got_second.extend(second.during::<R>(step).await);
        let seen: BTreeSet<&String> = got_first.iter().chain(&got_second).collect();
        if shared.iter().all(|body| seen.contains(body)) {
            break;
        }
        waited += step * 2;
        assert!(
            waited < WAIT,
            "not every message arrived within {WAIT:?}; missing: {:?}",
            shared
                .iter()
                .filter(|b| !seen.contains(b))
                .collect::<Vec<_>>()
        );
    }
    got_first.extend(first.during::<R>(QUIET).await);
    got_second.extend(second.during::<R>(Duration::ZERO).await);
    assert_eq!(
        (first.owned.get(), second.owned.get()),
        (first_queues.clone(), second_queues.clone()),
        "the assignment changed while both consumers ran"
    );
    assert_exactly_once(
        &got_first,
        &of_queues(&shared, &first_queues),
        &format!("the first consumer (queues {first_queues:?})"),
    );
    assert_exactly_once(
        &got_second,
        &of_queues(&shared, &second_queues),
        &format!("the second consumer (queues {second_queues:?})"),
    );

    first.shutdown().await;
    let after = topic.send("after", MESSAGES, None);
    second.owns::<R>(&all).await;
    second
        .exactly::<R>(&after, "the remaining consumer after the other left")
        .await;
    second.shutdown().await;
}
