//! Two namespaces (Java's `ClientConfig.namespace`) with the same topic and group names share
//! nothing on the real broker: each tenant's producer sends to `tenant%topic`, each tenant's
//! consumer of `group` reads exactly its own tenant's messages, sees the topic without the
//! namespace on every message, queue and send result, and commits under `tenant%group`.

use std::collections::BTreeSet;
use std::time::Duration;

use super::broker_scenario::{WAIT, assert_exactly_once, body_of, start_forwarding};
use driver::prelude::*;
use driver::{Producer, PushConsumer};
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rmq_cli::admin::{self, Cluster};
use rocketmq_tests::{any_broker, create_topic, namesrv, unique};

/// Queues of each tenant's topic.
const QUEUES: i32 = 2;
/// Messages each tenant sends.
const MESSAGES: usize = 10;

/// Sends [`MESSAGES`] messages `{tenant}/{i}` to `topic` in `tenant`; returns the bodies.
pub(crate) async fn produce<R: Runtime>(
    namesrv: &str,
    tenant: &str,
    topic: &str,
) -> BTreeSet<String> {
    let producer = Producer::<R>::builder("namespace-producer")
        .name_server(namesrv)
        .namespace(tenant)
        .build()
        .expect("the producer's configuration is valid");
    let mut bodies = BTreeSet::new();
    for i in 0..MESSAGES {
        let body = format!("{tenant}/{i}");
        let result = producer
            .send(topic, ProducerMessage::new(body.clone()))
            .await
            .unwrap_or_else(|e| panic!("{tenant} sends {body}: {e}"));
        assert_eq!(
            result.queue.topic(),
            topic,
            "the result names the topic without the namespace"
        );
        bodies.insert(body);
    }
    producer.close();
    bodies
}

/// What a consumer of `group` in `tenant` reads from `topic`: (body, message topic) pairs,
/// until every body of `expected` came and 2 s more; and its shutdown report.
pub(crate) async fn consume<R: Runtime>(
    namesrv: &str,
    tenant: &str,
    topic: &str,
    group: &str,
    expected: &BTreeSet<String>,
) -> (Vec<(String, String)>, ShutdownReport) {
    let consumer = PushConsumer::<R>::builder(group)
        .name_server(namesrv)
        .namespace(tenant)
        .subscribe(topic, "*")
        .consume_from(ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid");
    let (running, mut read) = start_forwarding(consumer, |m| (body_of(m), m.topic().to_owned()));
    let runtime = R::default();
    let mut got: Vec<(String, String)> = Vec::new();
    let mut deadline = runtime.now() + WAIT;
    let mut all = false;
    loop {
        let mut timer = runtime.sleep_until(deadline);
        match future::select(read.next(), timer.as_mut()).await {
            Either::Left((Some(item), _)) => got.push(item),
            Either::Left((None, _)) | Either::Right(((), _)) => break,
        }
        if !all && expected.iter().all(|b| got.iter().any(|(g, _)| g == b)) {
            all = true;
            deadline = runtime.now() + Duration::from_secs(2);
        }
    }
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    (got, report)
}

/// Two tenants, the same topic and group names: isolated.
pub(crate) async fn namespaces_with_the_same_names_are_isolated<R: Runtime>(prefix: &str) {
    let namesrv = namesrv();
    let broker = any_broker(&namesrv);
    let topic = unique(prefix);
    let group = unique(&format!("{prefix}-group"));
    let tenants = ["tenant-a", "tenant-b"];
    for tenant in tenants {
        create_topic(&namesrv, &broker, &format!("{tenant}%{topic}"), QUEUES);
    }
    let mut sent = Vec::new();
    for tenant in tenants {
        sent.push(produce::<R>(&namesrv, tenant, &topic).await);
    }
    for (tenant, expected) in tenants.iter().zip(&sent) {
        let (got, report) = consume::<R>(&namesrv, tenant, &topic, &group, expected).await;
        let bodies: Vec<String> = got.iter().map(|(b, _)| b.clone()).collect();
        assert_exactly_once(&bodies, expected, &format!("{tenant} reads only its own"));
        assert!(
            got.iter().all(|(_, t)| *t == topic),
            "{tenant}: every message names the topic without the namespace: {got:?}"
        );
        assert!(
            report
                .committed
                .iter()
                .all(|(q, _)| !q.topic().contains(tenant)),
            "{tenant}: the report names queues without the namespace: {report:?}"
        );
        let offsets = admin::offsets(
            &Cluster::new(namesrv.as_str()).with_namespace(Some((*tenant).to_owned())),
            &group,
            &topic,
        )
        .expect("the tenant's offsets");
        assert!(
            offsets
                .iter()
                .all(|q| q.committed_offset == Some(q.max_offset)),
            "{tenant} committed under {tenant}%{group}: {offsets:?}"
        );
    }
}
