//! Brokers that check ACL signatures refuse a consumer with the wrong secret, and one with no
//! credentials at all: each refused request is reported once per broker as
//! `Event::AccessDenied` (naming the request, the topic and the broker's reason), the refused
//! requests are retried on their usual schedule, never in a tight loop, and nothing is
//! consumed. Once the application sets the right credentials on the running consumer, every
//! message is consumed without a restart, and nothing new is refused.

use std::collections::BTreeMap;
use std::time::Duration;

use consumer_core::{Credentials, Event, MessageQueue};
use rocketmq_tests::scenario::{TOPIC, events_where, quiet_config};
use rocketmq_tests::world::{SIM_ACCESS_KEY, SIM_SECRET_KEY, World};

/// Node 0's `AccessDenied` events by `(broker, request)`, with their remarks.
fn denials(world: &World) -> BTreeMap<(String, &'static str), Vec<Option<String>>> {
    let mut by_request: BTreeMap<_, Vec<_>> = BTreeMap::new();
    for event in events_where(world, 0, |e| matches!(e, Event::AccessDenied { .. })) {
        if let Event::AccessDenied {
            addr,
            request,
            remark,
            group,
            ..
        } = event
        {
            assert_eq!(group, "sim-group");
            by_request.entry((addr, request)).or_default().push(remark);
        }
    }
    by_request
}

fn refused_then_fixed(credentials: Option<Credentials>, reason: &str) {
    let mut config = quiet_config(77, 0);
    config.acl = true;
    let mut world = World::new(config);
    world.add_consumer_with(|mut c| {
        c.credentials = credentials;
        c
    });
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    let b = MessageQueue::new(TOPIC, "broker-b", 1);
    world.produce_to(&a, 4);
    world.produce_to(&b, 4);
    world.run_until(world.epoch() + Duration::from_secs(60));

    assert!(world.acknowledged(&a).is_empty() && world.acknowledged(&b).is_empty());
    let denied = denials(&world);
    assert!(
        denied.keys().any(|(_, request)| *request == "HEART_BEAT"),
        "the refused heartbeat is reported: {denied:?}"
    );
    for ((addr, request), remarks) in &denied {
        assert_eq!(
            remarks.len(),
            1,
            "{request} to {addr} reported once: {remarks:?}"
        );
        assert!(
            remarks[0].as_deref().is_some_and(|r| r.contains(reason)),
            "{request} to {addr}: the broker's reason is kept: {remarks:?}"
        );
    }
    let refused = world.cluster.refused_unsigned();
    // Each refused request waits its usual retry delay (1 s for rebalances and start offsets,
    // 30 s for heartbeats): a few per second per broker, never a tight loop.
    assert!(
        (10..=400).contains(&refused),
        "{refused} refusals in 60 s: retried, but paced"
    );

    world.nodes[0]
        .consumer
        .set_credentials(Some(Credentials::new(SIM_ACCESS_KEY, SIM_SECRET_KEY)));
    world.run_until(world.now + Duration::from_secs(40));
    assert_eq!(world.acknowledged(&a).len(), 4, "broker-a's queue consumed");
    assert_eq!(world.acknowledged(&b).len(), 4, "broker-b's queue consumed");
    let settled = world.cluster.refused_unsigned();
    world.run_until(world.now + Duration::from_secs(30));
    assert_eq!(
        world.cluster.refused_unsigned(),
        settled,
        "nothing refused once the credentials are right"
    );
}

#[test]
fn a_wrong_secret_is_refused_until_the_right_one_is_set() {
    refused_then_fixed(
        Some(Credentials::new(SIM_ACCESS_KEY, "not-the-secret")),
        "signature",
    );
}

#[test]
fn no_credentials_are_refused_until_some_are_set() {
    refused_then_fixed(None, "No accessKey");
}
