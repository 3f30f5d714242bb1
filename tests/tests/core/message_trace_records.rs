//! With `trace`, every delivered message gets a `SubBefore` record as its delivery starts and
//! a `SubAfter` record as it completes, in Java's trace format: the pair shares a request id
//! (one per delivery), names the group and the message's id and keys, and the `SubAfter` says
//! whether the handler consumed it (context code 0, or 4 for a failure) and what it cost.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::{ConsumeOutcome, MessageQueue};
use proto::trace::TraceRecord;
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn each_message_is_traced_before_and_after_its_handler() {
    let mut config = quiet_config(347, 1);
    config.handler_time = (Duration::from_millis(10), Duration::from_millis(10));
    config.consumer_config = |mut c| {
        c.trace = true;
        c
    };
    let mut world = World::new(config);
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(2));
    world.produce_to(&a, 6);
    world.run_until(world.now + Duration::from_secs(2));

    // One more, failed by the handler.
    world.nodes[0].hold = true;
    world.produce_to(&a, 1);
    world.run_until(world.now + Duration::from_secs(2));
    let held = world.nodes[0].held.clone();
    assert_eq!(held.len(), 1, "the seventh message is held");
    let at = world.now + Duration::from_millis(30);
    world.complete_at(0, held[0], ConsumeOutcome::ReconsumeLater, at);
    world.nodes[0].held.clear();
    world.run_until(world.now + Duration::from_millis(100));

    let delivered: Vec<String> = world.nodes[0]
        .delivered
        .iter()
        .flat_map(|(_, d)| d.messages.iter().map(|m| m.msg_id()))
        .collect();
    assert_eq!(delivered.len(), 7);
    let mut before = BTreeMap::new();
    let mut after = BTreeMap::new();
    for (_, record) in &world.nodes[0].traces {
        match record {
            TraceRecord::SubBefore(b) => {
                assert_eq!(b.group, GROUP);
                assert_eq!(b.region, "DefaultRegion");
                before.insert(b.msg_id.clone(), b.clone());
            }
            TraceRecord::SubAfter(a) => {
                after.insert(a.msg_id.clone(), a.clone());
            }
            TraceRecord::Pub(_) => panic!("a consumer traces no sends"),
        }
    }
    assert_eq!(before.len(), 7, "a SubBefore per message");
    assert_eq!(after.len(), 7, "a SubAfter per message");
    for id in &delivered[..6] {
        let (b, a) = (&before[id], &after[id]);
        assert_eq!(a.request_id, b.request_id, "the pair shares its request id");
        assert!(a.success && a.context_code == 0, "{a:?}");
        assert_eq!(a.cost_ms, 10, "the handler's time: {a:?}");
        assert_eq!(a.timestamp - b.timestamp, 10);
    }
    let failed = &after[&delivered[6]];
    assert!(!failed.success && failed.context_code == 4, "{failed:?}");
    let (started, _) = world.nodes[0].delivered[6];
    // Both ends are wall-clock milliseconds, each rounded down.
    let took = (at - started).as_millis() as i64;
    assert!(
        i64::from(failed.cost_ms).abs_diff(took) <= 1,
        "from its start to its completion: {} ms, took {took} ms",
        failed.cost_ms
    );
    let ids: std::collections::BTreeSet<_> = before.values().map(|b| &b.request_id).collect();
    assert_eq!(
        ids.len(),
        7,
        "one request id per delivery (of one message each)"
    );
}
