//! `rmq consume` against a name server nobody listens on (a closed loopback port): the driver's
//! warnings reach stderr (`rmq` logs warnings by default), and the run ends with exit status 1
//! and one line naming what never worked, instead of a quiet "committed 0 queues" and exit 0.

use crate::support::rmq;

#[test]
fn consuming_from_a_cluster_never_reached_fails_with_the_reason() {
    let (ok, messages, stderr) = rmq(&[
        "consume",
        "--namesrv",
        "127.0.0.1:1",
        "--group",
        "unreachable-group",
        "--topic",
        "UnreachableTopic",
        "--idle-exit",
        "2",
    ]);
    assert!(!ok, "exit status 1: {stderr}");
    assert!(messages.is_empty(), "{messages:?}");
    assert!(
        stderr.contains("WARN") && stderr.contains("connection lost or refused"),
        "the driver's warnings are shown: {stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("rmq: no queue of UnreachableTopic was ever assigned")
            && last.contains("127.0.0.1:1"),
        "one closing line with the reason: {stderr}"
    );
}
