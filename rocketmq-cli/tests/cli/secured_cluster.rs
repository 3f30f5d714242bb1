//! `rmq` on the cluster whose brokers enforce ACL (`ACL_NAMESRV_ADDR` and the users
//! `RMQ_ACL_ADMIN` and `RMQ_ACL_USER`, as `scripts/test` starts it): the admin creates a topic
//! with `--access-key`/`--secret-key`, the user produces and consumes with the keys in
//! `RMQ_ACCESS_KEY`/`RMQ_SECRET_KEY` and reads the group's lag; with a wrong secret `consume`,
//! `produce` and the operator commands (`lag`, `consumer-status`, `reset-offset`, `query`) end
//! with exit status 1 and one line saying access was denied, and no output ever shows the secret.

use std::ffi::OsStr;

use crate::support::{fresh_topic_and_group, rmq_with_env};

/// An environment variable `scripts/test` sets for this scenario; fails loudly without it.
fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: this test needs the cluster with ACL that scripts/test starts")
    })
}

/// `(access key, secret key)` of the user in variable `name`.
fn keys(name: &str) -> (String, String) {
    let value = env(name);
    let (ak, sk) = value
        .split_once(':')
        .unwrap_or_else(|| panic!("{name} is accessKey:secretKey"));
    (ak.to_owned(), sk.to_owned())
}

#[test]
fn keys_sign_every_subcommand_and_a_wrong_secret_is_one_line() {
    let namesrv = env("ACL_NAMESRV_ADDR");
    let (admin_ak, admin_sk) = keys("RMQ_ACL_ADMIN");
    let (user_ak, user_sk) = keys("RMQ_ACL_USER");
    let (topic, group) = fresh_topic_and_group("rmq-acl");
    let none: &[(&str, &OsStr)] = &[];
    let (ok, _, stderr) = rmq_with_env(
        &[
            "topic",
            "create",
            &topic,
            "--queues",
            "2",
            "--namesrv",
            &namesrv,
            "--access-key",
            &admin_ak,
            "--secret-key",
            &admin_sk,
        ],
        none,
    );
    assert!(ok, "the admin creates the topic: {stderr}");

    let user: [(&str, &OsStr); 2] = [
        ("RMQ_ACCESS_KEY", OsStr::new(&user_ak)),
        ("RMQ_SECRET_KEY", OsStr::new(&user_sk)),
    ];
    let (ok, _, stderr) = rmq_with_env(
        &[
            "produce",
            "--topic",
            &topic,
            "--count",
            "6",
            "--namesrv",
            &namesrv,
        ],
        &user,
    );
    assert!(ok, "the user produces: {stderr}");
    let (ok, messages, stderr) = rmq_with_env(
        &[
            "consume",
            "--group",
            &group,
            "--topic",
            &topic,
            "--from",
            "first",
            "--count",
            "6",
            "--namesrv",
            &namesrv,
        ],
        &user,
    );
    assert!(ok, "the user consumes: {stderr}");
    assert_eq!(messages.len(), 6, "{stderr}");
    // The operator commands sign as the others do.
    let (ok, lag, stderr) = rmq_with_env(
        &[
            "lag",
            "--group",
            &group,
            "--topic",
            &topic,
            "--namesrv",
            &namesrv,
        ],
        &user,
    );
    assert!(ok, "the user reads the group's lag: {stderr}");
    assert_eq!(
        lag.last().map(|t| &t["total_lag"]),
        Some(&0.into()),
        "{lag:?}"
    );

    let wrong: [(&str, &OsStr); 2] = [
        ("RMQ_ACCESS_KEY", OsStr::new(&user_ak)),
        ("RMQ_SECRET_KEY", OsStr::new("wrong-secret-value")),
    ];
    for args in [
        vec![
            "consume",
            "--group",
            &group,
            "--topic",
            &topic,
            "--from",
            "first",
            "--idle-exit",
            "30",
            "--namesrv",
            &namesrv,
        ],
        vec![
            "produce",
            "--topic",
            &topic,
            "--count",
            "1",
            "--namesrv",
            &namesrv,
        ],
        vec!["lag", "--group", &group, "--namesrv", &namesrv],
        vec!["consumer-status", "--group", &group, "--namesrv", &namesrv],
        vec![
            "reset-offset",
            "--group",
            &group,
            "--topic",
            &topic,
            "--to",
            "first",
            "--namesrv",
            &namesrv,
        ],
        vec![
            "query",
            "--topic",
            &topic,
            "--key",
            "k",
            "--namesrv",
            &namesrv,
        ],
    ] {
        let (ok, messages, stderr) = rmq_with_env(&args, &wrong);
        assert!(!ok, "{}: exit status 1: {stderr}", args[0]);
        assert!(messages.is_empty(), "{}: {messages:?}", args[0]);
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("rmq: access denied"),
            "{}: one closing line says access was denied: {stderr}",
            args[0]
        );
        assert!(
            !stderr.contains("wrong-secret-value") && !stderr.contains(&user_sk),
            "{}: the secret is never shown: {stderr}",
            args[0]
        );
    }
}
