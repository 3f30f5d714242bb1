//! A running push consumer's `pause` on the real broker: the paused queue's messages stop
//! reaching the handler within a pull round trip while the other queue's flow; after `resume`
//! they all arrive.

use std::collections::BTreeSet;

use super::broker_scenario::{
    QUIET, Topic, WAIT, build_tracked, builder, read_until, start_forwarding,
};
use driver::prelude::*;
use rocketmq_tests::unique;

pub(crate) async fn a_paused_queue_waits_until_resumed<R: Runtime>(prefix: &str) {
    let topic = Topic::create(&format!("{prefix}-pause"), 2);
    let (consumer, owned) = build_tracked(
        &topic,
        builder::<R>(
            &topic,
            &unique(&format!("{prefix}-pause")),
            "*",
            ConsumeFrom::First,
        ),
    );
    let (running, mut bodies) = start_forwarding(consumer, |m| {
        (m.queue_id(), String::from_utf8_lossy(m.body()).into_owned())
    });
    super::broker_scenario::wait_for::<R>("the consumer owns both queues", || {
        owned.get() == BTreeSet::from([0, 1])
    })
    .await;
    let paused = MessageQueue::new(&topic.name, &topic.broker_name(), 0);
    running.pause([paused.clone()]);
    // `Topic::send` puts message i in queue i % 2.
    let sent = topic.send("paused", 20, None);
    let expect_open: BTreeSet<&String> = sent.iter().filter(|b| ends_odd(b)).collect();
    let got = read_until::<R, _>(&mut bodies, WAIT, |got| {
        expect_open.iter().all(|b| got.iter().any(|(_, g)| g == *b))
    })
    .await;
    let mut got = got;
    got.extend(read_until::<R, _>(&mut bodies, QUIET, |_| false).await);
    assert!(
        got.iter().all(|(queue, _)| *queue == 1),
        "nothing of the paused queue 0 arrives: {got:?}"
    );
    assert_eq!(got.len(), 10, "every message of queue 1 arrives: {got:?}");

    running.resume([paused]);
    let rest = read_until::<R, _>(&mut bodies, WAIT, |got| got.len() >= 10).await;
    let rest_bodies: BTreeSet<&String> = rest.iter().map(|(_, b)| b).collect();
    let expect_paused: BTreeSet<&String> = sent.iter().filter(|b| !ends_odd(b)).collect();
    assert!(
        rest.iter().all(|(queue, _)| *queue == 0) && rest_bodies == expect_paused,
        "after resume, queue 0's messages arrive: {rest:?}"
    );
    drop(running.shutdown().await);
}

/// Whether body `{topic}/{batch}/{i}` has an odd `i` (it went to queue 1).
fn ends_odd(body: &str) -> bool {
    body.rsplit('/')
        .next()
        .and_then(|i| i.parse::<u32>().ok())
        .is_some_and(|i| i % 2 == 1)
}
