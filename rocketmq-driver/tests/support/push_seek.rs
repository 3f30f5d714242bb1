//! A running push consumer's `seek_to_begin`, `seek` and `seek_to_timestamp` on the real
//! broker: the queue's messages are delivered again from the start, then from the sought
//! offset, then from the first stored after a moment; a queue the consumer does not own is
//! refused.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::broker_scenario::{
    Topic, WAIT, build_tracked, builder, read_until, sleep, start_forwarding, wait_for,
};
use driver::ControlError;
use driver::prelude::*;
use rocketmq_tests::unique;

pub(crate) async fn seeking_back_delivers_again<R: Runtime>(prefix: &str) {
    let topic = Topic::create(&format!("{prefix}-seek"), 1);
    let (consumer, owned) = build_tracked(
        &topic,
        builder::<R>(
            &topic,
            &unique(&format!("{prefix}-seek")),
            "*",
            ConsumeFrom::First,
        ),
    );
    let (running, mut bodies) = start_forwarding(consumer, |m| {
        (
            m.queue_offset(),
            String::from_utf8_lossy(m.body()).into_owned(),
        )
    });
    wait_for::<R>("the consumer owns the queue", || {
        owned.get() == BTreeSet::from([0])
    })
    .await;
    let sent = topic.send("seek", 10, None);
    let first = read_until::<R, _>(&mut bodies, WAIT, |got| got.len() >= 10).await;
    // Concurrent handlers may finish out of order: compare the offsets as sets.
    let offsets = |got: &[(i64, String)]| got.iter().map(|(o, _)| *o).collect::<BTreeSet<_>>();
    assert_eq!(offsets(&first), (0..10).collect(), "{first:?}");

    let queue = MessageQueue::new(&topic.name, &topic.broker_name(), 0);
    running
        .seek_to_begin(&queue)
        .await
        .expect("an owned queue seeks to its start");
    let again = read_until::<R, _>(&mut bodies, WAIT, |got| got.len() >= 10).await;
    let bodies_again: BTreeSet<String> = again.iter().map(|(_, b)| b.clone()).collect();
    assert_eq!(
        bodies_again, sent,
        "everything again from the start: {again:?}"
    );

    running
        .seek(&queue, 5)
        .await
        .expect("an owned queue seeks to an offset");
    let tail = read_until::<R, _>(&mut bodies, WAIT, |got| got.len() >= 5).await;
    assert_eq!(
        offsets(&tail),
        (5..10).collect(),
        "from the sought offset: {tail:?}"
    );

    // Messages stored after a moment; seeking to it delivers them again, and nothing older.
    // The moment is much nearer the later messages than the earlier ones: Java 4.9 answers the
    // offset of the message stored nearest the time, on either side
    // (`ConsumeQueue.getOffsetInQueueByTime`), where 5.x and Rust answer the first at or after
    // it, so with the moment half-way both were possible on 4.9.
    sleep::<R>(Duration::from_millis(400)).await;
    let mark = i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
    )
    .unwrap_or(i64::MAX);
    sleep::<R>(Duration::from_millis(20)).await;
    topic.send("later", 5, None);
    let later = read_until::<R, _>(&mut bodies, WAIT, |got| got.len() >= 5).await;
    assert_eq!(offsets(&later), (10..15).collect(), "{later:?}");
    running
        .seek_to_timestamp(&queue, mark)
        .await
        .expect("an owned queue seeks to a time");
    let since = read_until::<R, _>(&mut bodies, WAIT, |got| got.len() >= 5).await;
    assert_eq!(
        offsets(&since),
        (10..15).collect(),
        "what was stored since the moment, again: {since:?}"
    );

    let other = MessageQueue::new(&topic.name, &topic.broker_name(), 7);
    assert!(
        matches!(
            running.seek(&other, 0).await,
            Err(ControlError::Rejected(_))
        ),
        "a queue it does not own is refused"
    );
    drop(running.shutdown().await);
}
