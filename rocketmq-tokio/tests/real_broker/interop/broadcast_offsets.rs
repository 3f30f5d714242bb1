//! Broadcasting offsets kept in Java's local file: a Java broadcasting consumer consumes a first
//! batch and writes `<dir>/<clientId>/<group>/offsets.json` (`LocalFileOffsetStore`); ours, with
//! the same offset directory, instance name and client address, finds that file by the same key
//! (`<dir>/<ip>@<instance>/<group>/offsets.json`), resumes there and gets only the second batch;
//! Java, started again, reads the file ours replaced and gets only the third.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rocketmq_tests::unique;
use rocketmq_tokio::{ConsumeFrom, TokioRuntime};

use super::peer::{JavaPeer, events, text};
use crate::scenario::broker_scenario::{Topic, builder, start_built};

/// Messages per batch.
const BATCH: usize = 20;

/// A Java broadcasting member's run: consumes `count` messages and returns the bodies it got
/// and the offset file it uses.
fn java_run(topic: &Topic, group: &str, dir: &Path, count: usize) -> (BTreeSet<String>, PathBuf) {
    let dir = dir.to_string_lossy();
    let count = count.to_string();
    let lines = JavaPeer::consume(
        &topic.namesrv,
        group,
        &topic.name,
        &[
            "--broadcasting",
            "--offset-dir",
            &dir,
            "--instance",
            "bc-java",
            "--from",
            "first",
            "--count",
            &count,
            "--idle-exit",
            "3",
        ],
    )
    .finish();
    let started = events(&lines, "started").next().expect("a started line");
    let file = PathBuf::from(text(started, "offset_file"));
    let bodies = events(&lines, "message")
        .map(|line| text(line, "body").to_owned())
        .collect();
    (bodies, file)
}

#[test]
fn broadcasting_offsets_pass_between_java_and_ours() {
    crate::support::block_on(async {
        let topic = Topic::create("interop-bc", 4);
        let group = unique("interop-bc");
        let dir = std::env::temp_dir().join(unique("interop-bc-offsets"));
        let first = topic.send("first", BATCH, None);
        let (got, file) = java_run(&topic, &group, &dir, BATCH);
        assert_eq!(got, first, "Java's first run");
        assert!(file.exists(), "Java wrote {}", file.display());
        // <dir>/<ip>@bc-java/<group>/offsets.json: Java's client address, for ours to use too.
        let client = file
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .and_then(|name| name.to_str())
            .expect("the file is under <dir>/<clientId>/<group>");
        let ip = client
            .strip_suffix("@bc-java")
            .unwrap_or_else(|| panic!("Java's client id {client} is <ip>@bc-java"));

        let second = topic.send("second", BATCH, None);
        let mut ours = start_built(
            &topic,
            builder::<TokioRuntime>(&topic, &group, "*", ConsumeFrom::First)
                .broadcasting()
                .offset_dir(dir.clone())
                .instance_name("bc-java")
                .client_ip(ip),
        );
        ours.exactly::<TokioRuntime>(&second, "ours resumes from Java's offsets")
            .await;
        drop(ours.shutdown().await);

        let third = topic.send("third", BATCH, None);
        let (got, again) = java_run(&topic, &group, &dir, BATCH);
        assert_eq!(again, file, "the same client id, so the same file");
        assert_eq!(got, third, "Java resumes from the offsets ours wrote");
        let _ = std::fs::remove_dir_all(&dir);
    });
}
