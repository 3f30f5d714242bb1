//! Running consumers' `stats()` agree with the real broker. A push consumer that drained what
//! was sent reports, per queue, the broker's max offset as its committable offset, no lag and
//! an empty cache; the offset it reports committed is the one the broker then holds for the
//! group; a paused queue shows paused, every message shows in the consume latency and the
//! broker's connection is open. A lite pull consumer's `committed(queue)` is what the broker
//! holds after its `commit`.

use std::time::Duration;

use super::broker_scenario::{Topic, WAIT, group_offset, max_offset, sleep, start};
use driver::prelude::*;
use driver::{ConnectionState, LitePullConsumer};
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::unique;

/// Messages sent (`Topic::send` puts message `i` in queue `i % 2`).
const MESSAGES: usize = 40;

pub(crate) async fn stats_agree_with_the_broker<R: Runtime>(prefix: &str) {
    let topic = Topic::create(&format!("{prefix}-stats"), 2);
    let group = unique(&format!("{prefix}-stats"));
    let mut consuming = start::<R>(&topic, &group, "*", ConsumeFrom::First);
    let sent = topic.send("stats", MESSAGES, None);
    consuming.exactly::<R>(&sent, "every message once").await;
    let broker = topic.broker().to_owned();
    let max: Vec<i64> = (0..2)
        .map(|q| max_offset(&broker, &topic.name, q).expect("the broker's max offset"))
        .collect();
    assert_eq!(max.iter().sum::<i64>(), MESSAGES as i64);

    // Drained at once; committed at the next periodic persist (every 5 s), then on the broker.
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    let stats = loop {
        let stats = consuming.running.stats().await.expect("the driver answers");
        // The group's retry topic is consumed too; it stays empty here.
        let settled = stats
            .queues
            .iter()
            .filter(|q| q.queue.topic() == topic.name)
            .count()
            == 2
            && stats
                .queues
                .iter()
                .filter(|q| q.queue.topic() == topic.name)
                .all(|q| {
                    let max = max[q.queue.queue_id() as usize];
                    q.committable_offset == max
                        && q.committed_offset == Some(max)
                        && group_offset(&broker, &group, &topic.name, q.queue.queue_id())
                            == Ok(Some(max))
                });
        if settled {
            break stats;
        }
        assert!(
            runtime.now() < deadline,
            "stats and broker did not settle within {WAIT:?}: {stats:#?}"
        );
        sleep::<R>(Duration::from_millis(300)).await;
    };
    let ours: Vec<_> = stats
        .queues
        .iter()
        .filter(|q| q.queue.topic() == topic.name)
        .collect();
    for q in &ours {
        let max = max[q.queue.queue_id() as usize];
        assert_eq!(
            q.max_offset, max,
            "the broker's max offset as last seen: {q:?}"
        );
        assert_eq!((q.lag, q.cached_messages, q.in_flight), (0, 0, 0), "{q:?}");
        assert!(q.last_pull.is_some() && !q.paused && !q.revoking, "{q:?}");
    }
    assert_eq!((stats.lag, stats.cached_messages), (0, 0));
    assert!(stats.delivered >= MESSAGES as u64, "{stats:?}");
    assert_eq!(stats.consume_latency.samples, stats.delivered);
    assert!(
        stats
            .connections
            .iter()
            .any(|c| c.addr == broker && c.state == ConnectionState::Connected),
        "the broker's connection is open: {:?}",
        stats.connections
    );

    let paused = ours[0].queue.clone();
    consuming.running.pause([paused.clone()]);
    let after = consuming.running.stats().await.expect("the driver answers");
    assert!(
        after.queues.iter().any(|q| q.queue == paused && q.paused),
        "the pause shows at once: {after:?}"
    );
    drop(consuming.shutdown().await);

    // A lite pull consumer of another group reads everything and commits it.
    let lite_group = unique(&format!("{prefix}-stats-lite"));
    let mut pull = LitePullConsumer::<R>::builder(&lite_group)
        .name_server(topic.namesrv.clone())
        .subscribe(topic.name.clone(), "*")
        .consume_from(ConsumeFrom::First)
        .auto_commit(false)
        .build()
        .expect("the consumer's configuration is valid");
    let mut timer = runtime.sleep_until(runtime.now() + WAIT);
    for read in 0..MESSAGES {
        match future::select(pull.next(), timer.as_mut()).await {
            Either::Left((Some(_), _)) => {}
            Either::Left((None, _)) => panic!("the stream ended while reading"),
            Either::Right(((), _)) => panic!("{read} of {MESSAGES} messages within {WAIT:?}"),
        }
    }
    let report = pull.commit().await.expect("commit");
    assert!(report.unconfirmed.is_empty(), "{report:?}");
    let assigned = pull.assignment().await.expect("the assignment");
    for queue in assigned.iter().filter(|q| q.topic() == topic.name) {
        let committed = pull.committed(queue).await.expect("the driver answers");
        let on_broker = group_offset(&broker, &lite_group, &topic.name, queue.queue_id())
            .expect("the broker answers");
        assert_eq!(committed, Some(max[queue.queue_id() as usize]), "{queue:?}");
        assert_eq!(committed, on_broker, "{queue:?}: ours and the broker's");
    }
    drop(pull.shutdown().await);
}
