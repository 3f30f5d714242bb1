//! Java's client and ours in one namespace interoperate: what our producer sends in namespace
//! `tenant-j` reaches Java's `DefaultMQPushConsumer` with `setNamespace("tenant-j")`, and what
//! Java's `DefaultMQProducer` with that namespace sends reaches our consumer; both sides see
//! the topic without the namespace.

use std::collections::BTreeSet;

use rocketmq_tests::{any_broker, create_topic, namesrv, unique};
use rocketmq_tokio::TokioRuntime;

use super::peer::{JavaPeer, text};
use crate::scenario::namespaces;

#[test]
fn java_and_ours_in_one_namespace_interoperate() {
    crate::support::block_on(async {
        let namesrv = namesrv();
        let broker = any_broker(&namesrv);
        let topic = unique("interop-ns");
        let tenant = "tenant-j";
        create_topic(&namesrv, &broker, &format!("{tenant}%{topic}"), 2);

        let ours = namespaces::produce::<TokioRuntime>(&namesrv, tenant, &topic).await;
        let java_group = unique("interop-ns-java");
        let count = ours.len().to_string();
        let lines = JavaPeer::run(
            &namesrv,
            &[
                "consume",
                "--group",
                &java_group,
                "--topic",
                &topic,
                "--namespace",
                tenant,
                "--from",
                "first",
                "--count",
                &count,
            ],
        );
        let messages: Vec<_> = lines.iter().filter(|l| l["event"] == "message").collect();
        for line in &messages {
            assert_eq!(
                text(line, "topic"),
                topic,
                "Java sees the topic without the namespace"
            );
        }
        let got: BTreeSet<String> = messages
            .iter()
            .map(|l| text(l, "body").to_owned())
            .collect();
        assert_eq!(got, ours, "Java in the namespace reads what ours sent");

        JavaPeer::run(
            &namesrv,
            &[
                "produce",
                "--topic",
                &topic,
                "--namespace",
                tenant,
                "--count",
                "10",
                "--body",
                "java-{i}",
            ],
        );
        let java: BTreeSet<String> = (0..10).map(|i| format!("java-{i}")).collect();
        let everything: BTreeSet<String> = ours.union(&java).cloned().collect();
        let (read, _) = namespaces::consume::<TokioRuntime>(
            &namesrv,
            tenant,
            &topic,
            &unique("interop-ns-ours"),
            &everything,
        )
        .await;
        let bodies: BTreeSet<String> = read.iter().map(|(b, _)| b.clone()).collect();
        assert_eq!(
            bodies, everything,
            "ours in the namespace reads both producers' messages"
        );
        assert!(read.iter().all(|(_, t)| *t == topic), "{read:?}");
    });
}
