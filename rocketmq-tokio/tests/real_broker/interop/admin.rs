//! Broker-initiated commands from Java's admin (`DefaultMQAdminExt`, as `mqadmin` sends them) to
//! our running push consumer, for real: Java lists it among the group's clients, fetches and
//! parses its running info (subscriptions, queues with their committed offsets), has it consume
//! one message directly (our handler answers `CR_SUCCESS`), and resets the group's offsets to
//! the start, after which our consumer gets every message again.

use std::collections::BTreeSet;

use rocketmq_tests::unique;
use rocketmq_tokio::{ConsumeFrom, ProducerMessage, TokioRuntime};

use super::peer::{JavaPeer, int, text};
use crate::scenario::broker_scenario::{Topic, builder, start_built, wait_for};

/// Messages in the topic.
const MESSAGES: usize = 20;

#[test]
fn java_admin_commands_reach_our_running_consumer() {
    crate::support::block_on(async {
        let topic = Topic::create("interop-admin", 4);
        let ns = topic.namesrv.clone();
        let group = unique("interop-admin");
        let producer = super::peer::our_producer(&ns, "interop-admin-producer");
        let mut bodies = BTreeSet::new();
        let mut offset_ids = Vec::new();
        for i in 0..MESSAGES {
            let body = format!("admin/{i}");
            let result = producer
                .send(&topic.name, ProducerMessage::new(body.clone()))
                .await
                .unwrap_or_else(|e| panic!("send {body}: {e}"));
            offset_ids.push(result.offset_msg_ids[0].clone());
            bodies.insert(body);
        }
        producer.close();

        let mut ours = start_built(
            &topic,
            builder::<TokioRuntime>(&topic, &group, "*", ConsumeFrom::First),
        );
        ours.exactly::<TokioRuntime>(&bodies, "before the admin commands")
            .await;
        let client_id = ours.running.client_id().to_owned();

        // Java sees our client in the group.
        let clients = JavaPeer::run(&ns, &["admin", "clients", "--group", &group]);
        let listed: Vec<&str> = clients
            .iter()
            .flat_map(|l| l["clients"].as_array().into_iter().flatten())
            .map(|c| text(c, "client_id"))
            .collect();
        assert_eq!(listed, [client_id.as_str()], "{clients:?}");

        // Running info, as Java parses it, once the committed offsets reached the broker.
        let running_info = || {
            JavaPeer::run(
                &ns,
                &[
                    "admin",
                    "running-info",
                    "--group",
                    &group,
                    "--client-id",
                    &client_id,
                ],
            )
            .pop()
            .expect("a running_info line")
        };
        let mut info = running_info();
        assert!(
            info["subscriptions"]
                .as_array()
                .is_some_and(|s| s.iter().any(|t| t == topic.name.as_str())),
            "{info}"
        );
        let queues = |info: &serde_json::Value| -> Vec<(i64, i64)> {
            info["queues"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|q| q["topic"] == topic.name.as_str())
                .map(|q| (int(q, "queue_id"), int(q, "commit_offset")))
                .collect()
        };
        assert_eq!(queues(&info).len(), 4, "{info}");
        for _ in 0..20 {
            if queues(&info).iter().map(|q| q.1).sum::<i64>() == MESSAGES as i64 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
            info = running_info();
        }
        assert_eq!(
            queues(&info).iter().map(|q| q.1).sum::<i64>(),
            MESSAGES as i64,
            "committed offsets in our running info: {info}"
        );

        // Consume directly: our handler gets the message and says it consumed it.
        let direct = JavaPeer::run(
            &ns,
            &[
                "admin",
                "consume-directly",
                "--group",
                &group,
                "--client-id",
                &client_id,
                "--msg-id",
                &offset_ids[3],
            ],
        )
        .pop()
        .expect("a consume_directly line");
        assert_eq!(direct["result"], "CR_SUCCESS", "{direct}");
        let again = ours
            .until::<TokioRuntime>(&BTreeSet::from(["admin/3".to_owned()]))
            .await;
        assert_eq!(again, ["admin/3"], "the direct delivery, and nothing else");

        // Reset to the start: our running consumer consumes everything again. The broker
        // refuses a reset while a queue of the group has no stored offset ("consumer group not
        // exist", Broker2Client.resetOffset), so first the periodic commit (5 s, like Java's
        // persistConsumerOffset) must have reached it.
        wait_for::<TokioRuntime>("the broker holds the group's offsets", || {
            rmq_cli::admin::offsets(
                &rmq_cli::admin::Cluster::new(ns.as_str()),
                &group,
                &topic.name,
            )
            .is_ok_and(|queues| {
                queues.iter().all(|q| q.committed_offset.is_some())
                    && queues
                        .iter()
                        .filter_map(|q| q.committed_offset)
                        .sum::<i64>()
                        == MESSAGES as i64
            })
        })
        .await;
        JavaPeer::run(
            &ns,
            &[
                "admin",
                "reset-offset",
                "--group",
                &group,
                "--topic",
                &topic.name,
                "--timestamp",
                "0",
                "--force",
            ],
        );
        ours.exactly::<TokioRuntime>(&bodies, "after the reset to the start")
            .await;
        drop(ours.shutdown().await);
    });
}
