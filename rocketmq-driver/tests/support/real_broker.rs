//! The push-consume scenario against the real local broker, written once and run by each
//! adapter's tests (they include this file with `#[path]`): produce [`MESSAGES`] messages to a
//! new topic with the blocking client, consume them all with a `PushConsumer` on the adapter's
//! runtime, shut down, and check the bodies and the committed offsets.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use driver::prelude::*;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use proto::message::OutgoingMessage;
use proto::{Command, RequestCode, ResponseCode};
use rmq_cli::blocking::BlockingClient;
use rocketmq_tests::{TIMEOUT, any_broker, create_topic, namesrv, send_header, unique};

/// Messages produced and expected back.
pub(crate) const MESSAGES: usize = 200;
/// Queues of the test topic.
const QUEUES: i32 = 4;
/// How long consuming them all may take.
const CONSUME_TIMEOUT: Duration = Duration::from_secs(60);

/// A topic filled with messages.
pub(crate) struct Produced {
    namesrv: String,
    topic: String,
    bodies: BTreeSet<String>,
}

/// Creates a unique topic and sends [`MESSAGES`] messages to it, spread over its queues.
/// Fails the test when the cluster is not running (see `rocketmq_tests::namesrv`).
pub(crate) fn produce(prefix: &str) -> Produced {
    let namesrv = namesrv();
    let broker = any_broker(&namesrv);
    let topic = unique(prefix);
    create_topic(&namesrv, &broker, &topic, QUEUES);
    let mut client = BlockingClient::connect(&broker, TIMEOUT)
        .unwrap_or_else(|e| panic!("connect to the broker at {broker}: {e}"));
    let mut bodies = BTreeSet::new();
    for i in 0..MESSAGES {
        let body = format!("{topic}/{i}");
        let message = OutgoingMessage::new(topic.clone(), body.clone());
        let queue = i32::try_from(i).unwrap_or(0) % QUEUES;
        let header = send_header(&topic, queue, 0, message.encoded_properties());
        let request =
            Command::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(body.clone());
        let response = client
            .call(request, TIMEOUT)
            .unwrap_or_else(|e| panic!("send {i}: {e}"));
        assert_eq!(
            response.response_code(),
            ResponseCode::SUCCESS,
            "send {i}: {response:?}"
        );
        bodies.insert(body);
    }
    Produced {
        namesrv,
        topic,
        bodies,
    }
}

/// Consumes `produced` from the first offset with a new group on runtime `R`, shuts down, and
/// checks that every body arrived and that the final commit covers every message.
pub(crate) async fn consume_all<R: Runtime>(produced: Produced) {
    let Produced {
        namesrv,
        topic,
        bodies,
    } = produced;
    let (tx, mut rx) = futures_channel::mpsc::unbounded::<String>();
    let started = Instant::now();
    let running = driver::PushConsumer::<R>::builder(unique("push-consume"))
        .name_server(namesrv)
        .subscribe(topic.clone(), "*")
        .consume_from(ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid")
        .start_concurrently(move |messages: Vec<Message>| {
            let tx = tx.clone();
            async move {
                for message in messages {
                    let body = String::from_utf8_lossy(message.body()).into_owned();
                    let _ = tx.unbounded_send(body);
                }
                ConsumeOutcome::Success
            }
        });

    let runtime = R::default();
    let mut deadline = runtime.sleep_until(runtime.now() + CONSUME_TIMEOUT);
    let mut received = BTreeSet::new();
    let mut deliveries = 0usize;
    while received.len() < bodies.len() {
        match future::select(rx.next(), deadline.as_mut()).await {
            Either::Left((Some(body), _)) => {
                deliveries += 1;
                received.insert(body);
            }
            Either::Left((None, _)) => panic!("the handler was dropped while consuming"),
            Either::Right(((), _)) => panic!(
                "only {} of {} messages arrived within {CONSUME_TIMEOUT:?} (first missing: {:?})",
                received.len(),
                bodies.len(),
                bodies.difference(&received).next()
            ),
        }
    }
    let consumed = started.elapsed();
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    let total = started.elapsed();
    eprintln!(
        "consumed {} messages ({deliveries} deliveries) in {consumed:?}; shut down after \
         {total:?}; report: {report:?}",
        received.len()
    );

    assert_eq!(received, bodies, "the bodies consumed are the bodies sent");
    let committed: Vec<_> = report
        .committed
        .iter()
        .filter(|(queue, _)| queue.topic() == topic)
        .collect();
    assert!(!committed.is_empty(), "no offsets committed: {report:?}");
    let covered: i64 = committed.iter().map(|(_, offset)| offset).sum();
    assert_eq!(
        covered,
        i64::try_from(MESSAGES).unwrap_or(i64::MAX),
        "the committed offsets cover every message: {report:?}"
    );
    assert!(
        report.uncommitted.is_empty(),
        "queues left uncommitted: {report:?}"
    );
}
