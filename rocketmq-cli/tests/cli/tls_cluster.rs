//! `rmq` on the cluster whose name server and brokers require TLS (`TLS_NAMESRV_ADDR`, the test
//! CA in `RMQ_TLS_CA`, an unrelated CA in `RMQ_TLS_OTHER_CA`, as `scripts/test` starts it):
//! with `--tls --tls-ca` it creates a topic, produces and consumes, and the operator commands
//! work (but `query --key` on 4.9, whose broker cuts that answer short); a CA that did not sign the
//! servers' certificates and a name they do not carry end with exit status 1 and the
//! handshake's reason; plain TCP against it fails instead of hanging (at the name server on
//! Apache's clusters, at the broker on the Rust one, whose name server also answers plain TCP).

use std::ffi::OsStr;

use crate::support::{fresh_topic_and_group, rmq_with_env};

/// An environment variable `scripts/test` sets for this scenario; fails loudly without it.
fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: this test needs the cluster with TLS that scripts/test starts")
    })
}

#[test]
fn tls_flags_reach_the_cluster_and_bad_certificates_say_why() {
    let namesrv = env("TLS_NAMESRV_ADDR");
    let ca = env("RMQ_TLS_CA");
    let other = env("RMQ_TLS_OTHER_CA");
    let (topic, group) = fresh_topic_and_group("rmq-tls");
    let none: &[(&str, &OsStr)] = &[];
    let tls = [
        "--namesrv",
        namesrv.as_str(),
        "--tls",
        "--tls-ca",
        ca.as_str(),
    ];
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&tls);
        rmq_with_env(&all, none)
    };
    let (ok, _, stderr) = run(&["topic", "create", &topic, "--queues", "2"]);
    assert!(ok, "topic create over TLS: {stderr}");
    let (ok, _, stderr) = run(&[
        "produce", "--topic", &topic, "--count", "5", "--keys", "tls-key",
    ]);
    assert!(ok, "produce over TLS: {stderr}");
    let (ok, messages, stderr) = run(&[
        "consume", "--group", &group, "--topic", &topic, "--from", "first", "--count", "5",
    ]);
    assert!(ok, "consume over TLS: {stderr}");
    assert_eq!(messages.len(), 5, "{stderr}");

    // The operator commands over TLS.
    let (ok, lag, stderr) = run(&["lag", "--group", &group, "--topic", &topic]);
    assert!(ok, "lag over TLS: {stderr}");
    assert_eq!(
        lag.last().map(|t| &t["total_lag"]),
        Some(&0.into()),
        "{lag:?}"
    );
    let (ok, reset, stderr) = run(&[
        "reset-offset",
        "--group",
        &group,
        "--topic",
        &topic,
        "--to",
        "first",
    ]);
    assert!(
        ok && reset.len() == 2,
        "reset-offset over TLS: {reset:?} {stderr}"
    );
    let id = messages[0]["offset_msg_id"].as_str().expect("an offset id");
    let (ok, found, stderr) = run(&["query", "--id", id]);
    assert!(
        ok && found.len() == 1,
        "query --id over TLS: {found:?} {stderr}"
    );
    // Java 4.9 cuts a QUERY_MESSAGE answer short over TLS (its FileRegionEncoder counts the
    // buffer's capacity as written): `rmq query --key` says so; 5.x answers whole.
    let (ok, found, stderr) = run(&["query", "--topic", &topic, "--key", "tls-key"]);
    assert!(
        (ok && found.len() == 5) || (!ok && stderr.contains("FileRegionEncoder")),
        "query --key over TLS: {found:?} {stderr}"
    );

    for (tls, reason) in [
        (vec!["--tls", "--tls-ca", &other], "UnknownIssuer"),
        (
            vec![
                "--tls",
                "--tls-ca",
                &ca,
                "--tls-server-name",
                "wrong.example",
            ],
            "not valid for name",
        ),
    ] {
        let mut args = vec!["cluster", "--namesrv", &namesrv];
        args.extend(tls);
        let (ok, _, stderr) = rmq_with_env(&args, none);
        assert!(!ok, "{args:?}: exit status 1: {stderr}");
        assert!(
            stderr.contains(reason),
            "{args:?}: says {reason:?}: {stderr}"
        );
    }

    // Plain TCP: Apache's name server closes the connection after the first bytes; the Rust
    // cluster's name server is permissive (its broker registers over plain TCP) and answers,
    // and then the broker resets the connection the send goes out on. Either way, one line
    // says which connection failed, and nothing was stored.
    let args = [
        "produce",
        "--namesrv",
        &namesrv,
        "--topic",
        &topic,
        "--count",
        "1",
    ];
    let (ok, _, stderr) = rmq_with_env(&args, none);
    assert!(!ok, "plain produce: exit status 1: {stderr}");
    assert!(
        ["closed by the peer", "reset by peer"]
            .iter()
            .any(|r| stderr.contains(r)),
        "plain produce: says the connection was closed or reset: {stderr}"
    );
}
