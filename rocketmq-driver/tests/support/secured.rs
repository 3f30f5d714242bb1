//! Consumers and the producer on a cluster whose brokers enforce ACL (`scripts/broker start
//! --acl`, which `scripts/test` starts beside the main cluster and names in
//! `ACL_NAMESRV_ADDR`, with its users in `RMQ_ACL_ADMIN`, `RMQ_ACL_USER` and `RMQ_ACL_READER`
//! as `accessKey:secretKey`):
//!
//! - with the user's credentials, the producer's sends, a push consumer's pulls, a failed
//!   message's send-back, the final commit, an orderly consumer's queue locks and a lite pull
//!   consumer's commits all work, and nothing is refused;
//! - with a wrong secret, or none, a consumer gets nothing and reports `Event::AccessDenied`
//!   (naming the request and the broker's reason), and a send fails as access denied;
//! - the reader user, who may read every topic but no group, is refused where the broker
//!   checks the group.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::broker_scenario::{Topic, WAIT, assert_exactly_once, body_of, sleep, wait_for};
use driver::prelude::*;
use driver::{LitePullConsumer, Producer, PushConsumer, PushConsumerBuilder};
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rmq_cli::admin::{self, Cluster};
use rocketmq_tests::unique;

/// Queues of each topic.
const QUEUES: i32 = 4;
/// Messages of each batch.
const MESSAGES: usize = 24;

/// The ACL cluster and its users.
pub(crate) struct Secured {
    pub(crate) namesrv: String,
    pub(crate) admin: Credentials,
    pub(crate) user: Credentials,
    pub(crate) reader: Credentials,
}

/// An environment variable `scripts/test` sets for these scenarios; fails loudly without it.
fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: this test needs the cluster with ACL that scripts/test starts \
             (`RMQ_CLUSTER_DIR=/tmp/rmq-acl RMQ_NAMESRV_PORT=29876 RMQ_BROKER_PORT=30911 \
             scripts/broker start --acl`, then export what it prints)"
        )
    })
}

/// `accessKey:secretKey` from the variable `name`.
fn user(name: &str) -> Credentials {
    let value = env(name);
    let (access_key, secret_key) = value
        .split_once(':')
        .unwrap_or_else(|| panic!("{name} is accessKey:secretKey"));
    Credentials::new(access_key, secret_key)
}

/// The cluster with ACL, from the environment.
pub(crate) fn secured() -> Secured {
    Secured {
        namesrv: env("ACL_NAMESRV_ADDR"),
        admin: user("RMQ_ACL_ADMIN"),
        user: user("RMQ_ACL_USER"),
        reader: user("RMQ_ACL_READER"),
    }
}

impl Secured {
    /// Admin requests signed as `credentials`.
    pub(crate) fn cluster(&self, credentials: &Credentials) -> Cluster {
        Cluster::new(self.namesrv.as_str()).with_credentials(Some(credentials.clone()))
    }

    /// A new topic, created by the admin user.
    pub(crate) fn topic(&self, prefix: &str) -> Topic {
        let name = unique(prefix);
        let route = admin::create_topic(&self.cluster(&self.admin), &name, QUEUES)
            .unwrap_or_else(|e| panic!("the admin creates {name}: {e}"));
        let broker = route
            .broker_datas
            .first()
            .and_then(|b| b.broker_addrs.get(&0))
            .unwrap_or_else(|| panic!("{name} has a master: {route:?}"))
            .clone();
        Topic::at(&self.namesrv, &broker, &name, QUEUES)
    }

    /// Sends [`MESSAGES`] messages `{topic}/{batch}/{i}` as the user; returns the bodies.
    pub(crate) async fn produce<R: Runtime>(&self, topic: &Topic, batch: &str) -> BTreeSet<String> {
        let producer = Producer::<R>::builder("secured-producer")
            .name_server(self.namesrv.clone())
            .credentials(self.user.clone())
            .build()
            .expect("the producer's configuration is valid");
        let mut bodies = BTreeSet::new();
        for i in 0..MESSAGES {
            let body = format!("{}/{batch}/{i}", topic.name);
            producer
                .send(&topic.name, ProducerMessage::new(body.clone()))
                .await
                .unwrap_or_else(|e| panic!("the user sends {body}: {e}"));
            bodies.insert(body);
        }
        producer.close();
        bodies
    }

    /// A push consumer of `topic` for `group`, from the first message, signing as
    /// `credentials` (unsigned when `None`).
    fn consumer<R: Runtime>(
        &self,
        topic: &Topic,
        group: &str,
        credentials: Option<&Credentials>,
    ) -> PushConsumerBuilder<R> {
        let builder = PushConsumer::<R>::builder(group)
            .name_server(self.namesrv.clone())
            .subscribe(topic.name.clone(), "*")
            .consume_from(ConsumeFrom::First);
        match credentials {
            Some(credentials) => builder.credentials(credentials.clone()),
            None => builder,
        }
    }
}

/// The events a consumer reported, kept for the test to look at.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<Event>>>);

impl Events {
    fn observer(&self) -> impl Fn(&Event) + Send + Sync + 'static {
        let events = self.clone();
        move |event| {
            if let Ok(mut all) = events.0.lock() {
                all.push(event.clone());
            }
        }
    }

    /// Whether any event so far is one `wanted` picks.
    fn any(&self, wanted: impl Fn(&Event) -> bool) -> bool {
        self.0.lock().is_ok_and(|all| all.iter().any(wanted))
    }

    /// The `(request, remark)` of each `AccessDenied` so far.
    fn denied(&self) -> Vec<(&'static str, Option<String>)> {
        self.0
            .lock()
            .map(|all| {
                all.iter()
                    .filter_map(|e| match e {
                        Event::AccessDenied {
                            request, remark, ..
                        } => Some((*request, remark.clone())),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Reads bodies until `complete(read so far)` holds, then for `extra` more, or until [`WAIT`]
/// passed; returns every body read.
async fn collect<R: Runtime>(
    bodies: &mut futures_channel::mpsc::UnboundedReceiver<String>,
    complete: impl Fn(&[String]) -> bool,
    extra: Duration,
) -> Vec<String> {
    let runtime = R::default();
    let mut got = Vec::new();
    let mut deadline = runtime.now() + WAIT;
    let mut done = false;
    loop {
        let mut timer = runtime.sleep_until(deadline);
        match future::select(bodies.next(), timer.as_mut()).await {
            Either::Left((Some(body), _)) => got.push(body),
            Either::Left((None, _)) | Either::Right(((), _)) => return got,
        }
        if !done && complete(&got) {
            done = true;
            deadline = runtime.now() + extra;
        }
    }
}

/// Whether `got` holds every body of `expected`.
fn has_all(got: &[String], expected: &BTreeSet<String>) -> bool {
    let seen: BTreeSet<&String> = got.iter().collect();
    expected.iter().all(|b| seen.contains(b))
}

/// With the user's credentials a push consumer reads every message, a failed one comes back
/// through the broker's send-back, the final commit is confirmed, and nothing is refused.
pub(crate) async fn signed_user_consumes_and_commits<R: Runtime>(prefix: &str) {
    let secured = secured();
    let topic = secured.topic(&format!("{prefix}-push"));
    let group = unique(&format!("{prefix}-push"));
    let sent = secured.produce::<R>(&topic, "push").await;
    let events = Events::default();
    let consumer = secured
        .consumer::<R>(&topic, &group, Some(&secured.user))
        .configure(|c| c.reconsume_delay = Duration::from_secs(1))
        .build()
        .expect("the consumer's configuration is valid")
        .on_event(events.observer());
    // The first delivery of `/0` fails: it must come back through CONSUMER_SEND_MSG_BACK and
    // the retry topic, both checked by the broker's ACL.
    let failed_once = format!("{}/push/0", topic.name);
    let (tx, mut bodies) = futures_channel::mpsc::unbounded::<String>();
    let retried = Arc::new(Mutex::new(false));
    let running = consumer.start_concurrently(move |messages: Messages| {
        let mut outcome = ConsumeOutcome::Success;
        for message in &messages {
            let body = body_of(message);
            if body == failed_once && !std::mem::replace(&mut *lock(&retried), true) {
                outcome = ConsumeOutcome::ReconsumeLater;
            }
            let _ = tx.unbounded_send(body);
        }
        future::ready(outcome)
    });
    // The broker sends the failed message back after its first retry delay (level 3: 10 s).
    let first = format!("{}/push/0", topic.name);
    let got = collect::<R>(
        &mut bodies,
        |got| has_all(got, &sent) && got.iter().filter(|b| **b == first).count() == 2,
        Duration::from_secs(3),
    )
    .await;
    let mut counts = BTreeMap::<&str, usize>::new();
    for body in &got {
        *counts.entry(body).or_default() += 1;
    }
    assert_eq!(
        counts.get(first.as_str()),
        Some(&2),
        "the failed message came back once through the send-back: {counts:?}"
    );
    let once: Vec<String> = got.iter().filter(|b| **b != first).cloned().collect();
    let rest: BTreeSet<String> = sent.iter().filter(|b| **b != first).cloned().collect();
    assert_exactly_once(&once, &rest, "signed push consumer");
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    assert!(
        report.uncommitted.is_empty() && !report.committed.is_empty(),
        "the final commits were confirmed: {report:?}"
    );
    // Offset reads are admin requests on 5.x and the Rust broker (`PUB|SUB` does not cover
    // them); 4.9 answers anyone signed.
    let offsets = admin::offsets(&secured.cluster(&secured.admin), &group, &topic.name)
        .expect("the admin reads the group's offsets");
    for queue in &offsets {
        assert_eq!(
            queue.committed_offset,
            Some(queue.max_offset),
            "every queue committed to its end: {offsets:?}"
        );
    }
    assert!(
        events.denied().is_empty(),
        "nothing refused: {:?}",
        events.denied()
    );
    assert!(
        !events.any(|e| matches!(e, Event::SendBackFailed { .. })),
        "the failed message went back to the broker, not redelivered locally"
    );
}

/// With the user's credentials an orderly consumer locks its queues and reads each in order,
/// and a lite pull consumer reads and commits.
pub(crate) async fn signed_user_locks_and_lite_pull_commits<R: Runtime>(prefix: &str) {
    let secured = secured();
    let topic = secured.topic(&format!("{prefix}-orderly"));
    let sent = secured.produce::<R>(&topic, "orderly").await;
    let group = unique(&format!("{prefix}-orderly"));
    let events = Events::default();
    let (tx, mut bodies) = futures_channel::mpsc::unbounded::<String>();
    let orderly = secured
        .consumer::<R>(&topic, &group, Some(&secured.user))
        .build()
        .expect("the consumer's configuration is valid")
        .on_event(events.observer())
        .start_orderly(move |messages: Messages| {
            for message in &messages {
                let _ = tx.unbounded_send(body_of(message));
            }
            future::ready(ConsumeOutcome::Success)
        });
    let got = collect::<R>(
        &mut bodies,
        |got| has_all(got, &sent),
        Duration::from_secs(1),
    )
    .await;
    assert_exactly_once(&got, &sent, "signed orderly consumer");
    drop(orderly.shutdown().await);
    assert!(
        events.denied().is_empty(),
        "nothing refused: {:?}",
        events.denied()
    );

    let pull_group = unique(&format!("{prefix}-lite"));
    let mut pull = LitePullConsumer::<R>::builder(&pull_group)
        .name_server(secured.namesrv.clone())
        .subscribe(topic.name.clone(), "*")
        .consume_from(ConsumeFrom::First)
        .auto_commit(false)
        .credentials(secured.user.clone())
        .build()
        .expect("the consumer's configuration is valid");
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    let mut read = BTreeSet::new();
    while !sent.is_subset(&read) {
        let mut timer = runtime.sleep_until(deadline);
        match future::select(pull.next(), timer.as_mut()).await {
            Either::Left((Some(message), _)) => {
                read.insert(body_of(&message));
            }
            Either::Left((None, _)) => panic!("the lite pull stream ended"),
            Either::Right(((), _)) => panic!(
                "the lite pull consumer read {} of {} within {WAIT:?}",
                read.len(),
                sent.len()
            ),
        }
    }
    let report = pull.commit().await.expect("the commit is answered");
    assert!(
        report.unconfirmed.is_empty() && report.committed.len() == QUEUES as usize,
        "every queue's commit confirmed: {report:?}"
    );
    drop(pull.shutdown().await);
}

/// A consumer with `credentials` is refused: it reports `AccessDenied` whose remark contains
/// one of `reasons` for a request, and reads nothing.
async fn refused<R: Runtime>(
    secured: &Secured,
    topic: &Topic,
    label: &str,
    credentials: Option<&Credentials>,
) -> Vec<(&'static str, Option<String>)> {
    let group = unique(label);
    let events = Events::default();
    let (running, mut bodies) = super::broker_scenario::start_forwarding(
        secured
            .consumer::<R>(topic, &group, credentials)
            .build()
            .expect("the consumer's configuration is valid")
            .on_event(events.observer()),
        body_of,
    );
    wait_for::<R>(&format!("{label}: an AccessDenied event"), || {
        !events.denied().is_empty()
    })
    .await;
    // A little longer, for the other requests' refusals and any message that slips through.
    sleep::<R>(Duration::from_secs(3)).await;
    drop(running.shutdown().await);
    let mut leaked = Vec::new();
    while let Ok(body) = bodies.try_recv() {
        leaked.push(body);
    }
    assert!(leaked.is_empty(), "{label}: nothing is read: {leaked:?}");
    events.denied()
}

/// A wrong secret and no credentials are refused, for consumers and the producer.
pub(crate) async fn wrong_or_missing_credentials_are_refused<R: Runtime>(prefix: &str) {
    let secured = secured();
    let topic = secured.topic(&format!("{prefix}-refused"));
    secured.produce::<R>(&topic, "refused").await;
    let wrong = Credentials::new(secured.user.access_key(), "not-the-secret");
    for (label, credentials) in [("wrong-secret", Some(&wrong)), ("unsigned", None)] {
        let denied =
            refused::<R>(&secured, &topic, &format!("{prefix}-{label}"), credentials).await;
        assert!(
            denied.iter().all(|(_, remark)| remark.is_some()),
            "{label}: the broker's reason is kept: {denied:?}"
        );
    }

    let producer = Producer::<R>::builder("secured-refused-producer")
        .name_server(secured.namesrv.clone())
        .credentials(wrong)
        .build()
        .expect("the producer's configuration is valid");
    let error = producer
        .send(&topic.name, ProducerMessage::new("refused"))
        .await
        .expect_err("a wrong secret cannot send");
    assert!(
        error.is_access_denied(),
        "refused as access denied: {error}"
    );
    assert!(
        !error.to_string().contains("not-the-secret"),
        "the secret is not in the error: {error}"
    );
}

/// The reader user may read every topic but use no group: the broker refuses its group's
/// requests.
pub(crate) async fn reader_without_group_permission_is_refused<R: Runtime>(prefix: &str) {
    let secured = secured();
    let topic = secured.topic(&format!("{prefix}-reader"));
    secured.produce::<R>(&topic, "reader").await;
    let denied = refused::<R>(
        &secured,
        &topic,
        &format!("{prefix}-reader"),
        Some(&secured.reader),
    )
    .await;
    assert!(
        !denied.is_empty(),
        "the group's requests are refused: {denied:?}"
    );
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
