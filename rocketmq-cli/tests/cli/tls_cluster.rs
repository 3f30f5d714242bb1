//! `rmq` on the cluster whose name server and brokers require TLS (`TLS_NAMESRV_ADDR`, the test
//! CA in `RMQ_TLS_CA`, an unrelated CA in `RMQ_TLS_OTHER_CA`, as `scripts/test` starts it):
//! with `--tls --tls-ca` it creates a topic, produces and consumes; a CA that did not sign the
//! servers' certificates and a name they do not carry end with exit status 1 and the
//! handshake's reason; plain TCP against it fails instead of hanging.

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
    let (ok, _, stderr) = run(&["produce", "--topic", &topic, "--count", "5"]);
    assert!(ok, "produce over TLS: {stderr}");
    let (ok, messages, stderr) = run(&[
        "consume", "--group", &group, "--topic", &topic, "--from", "first", "--count", "5",
    ]);
    assert!(ok, "consume over TLS: {stderr}");
    assert_eq!(messages.len(), 5, "{stderr}");

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
        (vec![], "connection closed"),
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
}
