//! A consumer in a namespace (Java's `ClientConfig.namespace`) reads the tenant's topic: on the
//! wire its group is `tenant%group`, its topic `tenant%topic` and its retry topic
//! `%RETRY%tenant%group`, so it shares nothing with a consumer of the same names outside the
//! namespace; everything it hands out (deliveries, messages, assignment, events, stats) names
//! the topic without the namespace.

use std::time::Duration;

use consumer_core::{Event, MessageQueue};
use rocketmq_tests::scenario::{GROUP, TOPIC, quiet_config};
use rocketmq_tests::world::World;

#[test]
fn a_tenant_reads_its_own_topic_under_its_names() {
    let mut world = World::new(quiet_config(211, 0));
    let wrapped = format!("tenant-a%{TOPIC}");
    world.cluster.create_topic(&wrapped, 2);
    let tenant = world.add_consumer_with(|mut c| {
        c.namespace = Some("tenant-a".to_owned());
        c
    });
    let plain = world.add_consumer();
    let tenant_queue = MessageQueue::new(&wrapped, "broker-a", 0);
    let plain_queue = MessageQueue::new(TOPIC, "broker-a", 0);
    world.run_until(world.epoch() + Duration::from_secs(3));
    world.produce_to(&tenant_queue, 3);
    world.produce_to(&plain_queue, 2);
    world.run_until(world.now + Duration::from_secs(3));

    // The application's names, on everything handed out.
    let delivered = &world.nodes[tenant].delivered;
    assert_eq!(delivered.len(), 3, "the tenant's three messages");
    for (_, delivery) in delivered {
        assert_eq!(delivery.queue.topic(), TOPIC, "{delivery:?}");
        for message in &delivery.messages {
            assert_eq!(message.topic(), TOPIC);
        }
    }
    let assignment: Vec<MessageQueue> = world.nodes[tenant].consumer.assignment().collect();
    assert!(
        assignment.iter().all(|q| !q.topic().contains("tenant-a")),
        "{assignment:?}"
    );
    assert!(assignment.contains(&MessageQueue::new(TOPIC, "broker-a", 0)));
    assert!(
        assignment
            .iter()
            .any(|q| q.topic() == format!("%RETRY%{GROUP}")),
        "the retry topic without the namespace: {assignment:?}"
    );
    let stats = world.nodes[tenant].consumer.stats();
    assert!(
        stats
            .queues
            .iter()
            .all(|q| !q.queue.topic().contains("tenant-a")),
        "{stats:?}"
    );
    for (_, event) in &world.nodes[tenant].events {
        if let Event::Assigned(queues) = event {
            assert!(
                queues.iter().all(|q| !q.topic().contains("tenant-a")),
                "{event:?}"
            );
        }
    }

    // The wire names: the broker knows the tenant's group, separate from the plain one.
    assert_eq!(
        world.nodes[tenant].consumer.config().group,
        format!("tenant-a%{GROUP}")
    );
    let members = world
        .cluster
        .members("broker-a", &format!("tenant-a%{GROUP}"));
    assert_eq!(
        members.len(),
        1,
        "only the tenant is in the tenant's group: {members:?}"
    );
    let plain_members = world.cluster.members("broker-a", GROUP);
    assert_eq!(plain_members.len(), 1, "{plain_members:?}");
    // The plain consumer got only the plain topic's messages.
    let plain_delivered: usize = world.nodes[plain]
        .delivered
        .iter()
        .map(|(_, d)| d.messages.len())
        .sum();
    assert_eq!(plain_delivered, 2);
}
