//! Consumers and the producer on a cluster whose name server and brokers require TLS
//! (`scripts/broker start --tls`, which `scripts/test` starts beside the main cluster and names
//! in `TLS_NAMESRV_ADDR`, with its test CA in `RMQ_TLS_CA`, a client certificate in
//! `RMQ_TLS_CLIENT_CERT`/`RMQ_TLS_CLIENT_KEY` and an unrelated CA in `RMQ_TLS_OTHER_CA`):
//!
//! - with the cluster's CA, the producer sends and a push consumer reads every message over
//!   TLS, and so do they when they also show the client certificate (mutual TLS);
//! - with a CA that did not sign the servers' certificates, or a server name the certificates
//!   do not carry, a send fails with the handshake's reason, and nothing connects;
//! - with a client certificate of a CA the servers do not trust, a send fails;
//! - with TLS against a plain server, a send fails with the handshake's reason too.

use std::collections::BTreeSet;

use super::broker_scenario::{WAIT, assert_exactly_once, body_of, start_forwarding};
use driver::prelude::*;
use driver::{Producer, PushConsumer};
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rmq_cli::admin::{self, Cluster};
use rocketmq_tests::unique;

/// Messages of each run.
const MESSAGES: usize = 12;

/// An environment variable `scripts/test` sets for these scenarios; fails loudly without it.
pub(crate) fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: this test needs the cluster with TLS that scripts/test starts \
             (`RMQ_CLUSTER_DIR=/tmp/rmq-tls RMQ_NAMESRV_PORT=21876 RMQ_BROKER_PORT=22911 \
             scripts/broker start --tls`, then export what it prints)"
        )
    })
}

/// TLS trusting the cluster's CA.
pub(crate) fn trusted() -> Tls {
    Tls::new().ca_file(env("RMQ_TLS_CA"))
}

/// A new topic on the TLS cluster, created over TLS.
fn new_topic(prefix: &str) -> String {
    let name = unique(prefix);
    let cluster = Cluster::new(env("TLS_NAMESRV_ADDR")).with_tls(Some(trusted()));
    admin::create_topic(&cluster, &name, 2)
        .unwrap_or_else(|e| panic!("create {name} over TLS: {e}"));
    name
}

/// A producer of the cluster at `namesrv` with `tls`.
fn producer<R: Runtime>(namesrv: &str, tls: Tls) -> Producer<R> {
    Producer::<R>::builder("tls-producer")
        .name_server(namesrv)
        .tls(tls)
        .build()
        .expect("the producer's configuration is valid")
}

/// Sends [`MESSAGES`] messages `{topic}/{i}` with `tls`; returns the bodies.
async fn produce<R: Runtime>(topic: &str, tls: Tls) -> BTreeSet<String> {
    let producer = producer::<R>(&env("TLS_NAMESRV_ADDR"), tls);
    let mut bodies = BTreeSet::new();
    for i in 0..MESSAGES {
        let body = format!("{topic}/{i}");
        producer
            .send(topic, ProducerMessage::new(body.clone()))
            .await
            .unwrap_or_else(|e| panic!("send {body} over TLS: {e}"));
        bodies.insert(body);
    }
    producer.close();
    bodies
}

/// A push consumer with `tls` reads every body of `expected` from `topic`.
async fn consume<R: Runtime>(topic: &str, tls: Tls, expected: &BTreeSet<String>) {
    let consumer = PushConsumer::<R>::builder(unique("tls-group"))
        .name_server(env("TLS_NAMESRV_ADDR"))
        .subscribe(topic, "*")
        .consume_from(ConsumeFrom::First)
        .tls(tls)
        .build()
        .expect("the consumer's configuration is valid");
    let (running, mut bodies) = start_forwarding(consumer, body_of);
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    let mut got = Vec::new();
    while !expected.iter().all(|b| got.contains(b)) {
        let mut timer = runtime.sleep_until(deadline);
        match future::select(bodies.next(), timer.as_mut()).await {
            Either::Left((Some(body), _)) => got.push(body),
            Either::Left((None, _)) | Either::Right(((), _)) => break,
        }
    }
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    assert_exactly_once(&got, expected, "over TLS");
    assert!(
        report.uncommitted.is_empty(),
        "the final commits went over TLS too: {report:?}"
    );
}

/// A pop consumer (RocketMQ 5.x only) with the cluster's CA pops and acks every message over
/// TLS: each arrives once, and nothing comes back after the shutdown.
pub(crate) async fn pop_consumes_over_tls<R: Runtime>(prefix: &str) {
    let topic = new_topic(&format!("{prefix}-pop-tls"));
    let expected = produce::<R>(&topic, trusted()).await;
    let (tx, mut bodies) = futures_channel::mpsc::unbounded::<String>();
    let running = driver::PopConsumer::<R>::builder(unique("tls-pop-group"))
        .name_server(env("TLS_NAMESRV_ADDR"))
        .subscribe(&topic, "*")
        .tls(trusted())
        .build()
        .expect("the pop consumer's configuration is valid")
        .start(move |messages: Messages| {
            for message in &messages {
                let _ = tx.unbounded_send(body_of(message));
            }
            future::ready(ConsumeOutcome::Success)
        })
        .expect("the pop consumer starts");
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    let mut got = Vec::new();
    while !expected.iter().all(|b| got.contains(b)) {
        let mut timer = runtime.sleep_until(deadline);
        match future::select(bodies.next(), timer.as_mut()).await {
            Either::Left((Some(body), _)) => got.push(body),
            Either::Left((None, _)) | Either::Right(((), _)) => break,
        }
    }
    assert_exactly_once(&got, &expected, "popped over TLS");
    // The acks go out as the handlers return, just after the last body arrived.
    let all = u64::try_from(expected.len()).unwrap_or(u64::MAX);
    let mut stats = running.stats().await.expect("the pop consumer answers");
    while stats.acked < all && runtime.now() < deadline {
        runtime
            .sleep_until(runtime.now() + std::time::Duration::from_millis(100))
            .await;
        stats = running.stats().await.expect("the pop consumer answers");
    }
    assert_eq!(
        stats.acked, all,
        "every message was acked over TLS: {stats:?}"
    );
    running
        .shutdown()
        .await
        .expect("the pop consumer shuts down and reports");
}

/// With the cluster's CA (and then with a client certificate as well) everything flows.
pub(crate) async fn produce_and_consume_over_tls<R: Runtime>(prefix: &str) {
    let topic = new_topic(&format!("{prefix}-tls"));
    let sent = produce::<R>(&topic, trusted()).await;
    consume::<R>(&topic, trusted(), &sent).await;

    let mutual =
        || trusted().client_certificate(env("RMQ_TLS_CLIENT_CERT"), env("RMQ_TLS_CLIENT_KEY"));
    let topic = new_topic(&format!("{prefix}-mtls"));
    let sent = produce::<R>(&topic, mutual()).await;
    consume::<R>(&topic, mutual(), &sent).await;
}

/// One send with `tls` to the cluster at `namesrv`; it must fail, and its error must contain
/// one of `reasons`.
async fn refused<R: Runtime>(namesrv: &str, tls: Tls, reasons: &[&str], what: &str) {
    let producer = producer::<R>(namesrv, tls);
    let error = producer
        .send(&unique("tls-refused"), ProducerMessage::new("never"))
        .await
        .expect_err(what);
    let text = error.to_string();
    assert!(
        reasons.iter().any(|r| text.contains(r)),
        "{what}: the error gives the handshake's reason: {text}"
    );
    producer.close();
}

/// An untrusted CA, a wrong server name and a plain server fail the handshake, with reasons.
pub(crate) async fn bad_certificates_and_plain_servers_fail_with_reasons<R: Runtime>() {
    let namesrv = env("TLS_NAMESRV_ADDR");
    refused::<R>(
        &namesrv,
        Tls::new().ca_file(env("RMQ_TLS_OTHER_CA")),
        &["UnknownIssuer", "certificate"],
        "a CA that did not sign the server's certificate",
    )
    .await;
    refused::<R>(
        &namesrv,
        trusted().server_name("wrong.example"),
        &["NotValidForName", "certificate"],
        "a name the server's certificate does not carry",
    )
    .await;
    // A client certificate the servers do not trust: they ask for one (optional) and check
    // what they get against the cluster's CA. Under TLS 1.3 the client's side of the handshake
    // is over before the server has read the certificate, so the refusal is the server's alert
    // on the first read (Java 4.9: CertificateUnknown; Rust 1.0: UnknownCA).
    refused::<R>(
        &namesrv,
        trusted().client_certificate(
            env("RMQ_TLS_OTHER_CLIENT_CERT"),
            env("RMQ_TLS_OTHER_CLIENT_KEY"),
        ),
        &["fatal alert"],
        "a client certificate of a CA the servers do not trust",
    )
    .await;
    // Apache's servers are permissive by default (they answer TLS too), so the plain server is
    // one of the test's own: it answers whatever it reads with plain bytes.
    let plain = plain_server();
    refused::<R>(
        &plain,
        trusted(),
        &["InvalidContentType", "corrupt message"],
        "a plain server",
    )
    .await;
}

/// A plain-TCP server on loopback that answers every connection with bytes that are no TLS
/// record (the start of a RocketMQ frame) and closes it; its address.
fn plain_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().expect("a bound address").to_string();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        // Bounded: the scenario makes a handful of connections.
        for stream in listener.incoming().take(256) {
            let Ok(mut stream) = stream else { continue };
            let mut hello = [0u8; 512];
            let _ = stream.read(&mut hello);
            let _ = stream.write_all(&[0, 0, 0, 20, 0, 0, 0, 16, b'{', b'}']);
        }
    });
    addr
}
