//! Broadcasting against the real broker: two members of one group, each with its own offset
//! directory, each receive every message; one shuts down (its offsets land in
//! `<dir>/<ip>@DEFAULT/<group>/offsets.json`, Java's path, covering everything it consumed)
//! while the other keeps receiving, and a third consumer pointed at that other's file is refused
//! at `build` (the file is locked); restarted with the same directory, and though configured to
//! start from the first offset, the first receives exactly the messages sent while it was away,
//! none of the earlier ones.

use std::path::{Path, PathBuf};

use super::broker_scenario::{Consuming, Topic, builder, start_built};
use driver::prelude::*;
use proto::body::OffsetTable;
use rocketmq_tests::unique;

/// Messages both members receive.
const FIRST: usize = 40;
/// Messages sent while one member is away.
const AWAY: usize = 30;

/// A member of `group` keeping its offsets under `dir`.
fn member<R: Runtime>(topic: &Topic, group: &str, dir: &Path) -> Consuming {
    start_built(
        topic,
        builder::<R>(topic, group, "*", ConsumeFrom::First)
            .broadcasting()
            .offset_dir(dir),
    )
}

/// A fresh directory for one member's offsets.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// The sum of the offsets of `topic` in the table `report` lists.
fn covered(offsets: &[(MessageQueue, i64)], topic: &str) -> i64 {
    offsets
        .iter()
        .filter(|(queue, _)| queue.topic() == topic)
        .map(|(_, offset)| offset)
        .sum()
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn every_member_gets_everything_and_resumes_from_its_file<R: Runtime>(
    prefix: &str,
) {
    let topic = Topic::create(prefix, 4);
    let group = unique("broadcast");
    let (dir_a, dir_b) = (scratch("broadcast-a"), scratch("broadcast-b"));
    let mut a = member::<R>(&topic, &group, &dir_a);
    let mut b = member::<R>(&topic, &group, &dir_b);
    let all: std::collections::BTreeSet<i32> = (0..4).collect();
    // Both own every queue: broadcasting does not share them.
    a.owns::<R>(&all).await;
    b.owns::<R>(&all).await;

    let first = topic.send("first", FIRST, None);
    a.exactly::<R>(&first, "member a").await;
    b.exactly::<R>(&first, "member b").await;

    let report = a.shutdown().await;
    let first_count = i64::try_from(FIRST).unwrap_or(i64::MAX);
    assert_eq!(
        covered(&report.committed, &topic.name),
        first_count,
        "member a's final offsets cover what it consumed: {report:?}"
    );
    let file = rocketmq_tests::broadcast_offset_file(&dir_a, &group);
    let stored = std::fs::read(&file)
        .unwrap_or_else(|e| panic!("member a's offset file {}: {e}", file.display()));
    let table = OffsetTable::decode(&stored).expect("the offset file decodes");
    let stored: Vec<(MessageQueue, i64)> = table.offset_table.into_iter().collect();
    assert_eq!(
        covered(&stored, &topic.name),
        first_count,
        "the offset file holds the final offsets: {stored:?}"
    );

    let away = topic.send("away", AWAY, None);
    b.exactly::<R>(&away, "member b while a is away").await;
    // A second live member on b's file would replace its table: it does not start.
    let second = builder::<R>(&topic, &group, "*", ConsumeFrom::First)
        .broadcasting()
        .offset_dir(&dir_b)
        .build();
    let Err(error) = second else {
        panic!("a second consumer of member b's offset file started");
    };
    assert!(
        error
            .to_string()
            .contains("in use by another live consumer"),
        "the refusal says why: {error}"
    );
    let mut restarted = member::<R>(&topic, &group, &dir_a);
    restarted
        .exactly::<R>(&away, "member a after its restart")
        .await;
    restarted.shutdown().await;
    b.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir_a);
    let _ = std::fs::remove_dir_all(&dir_b);
}
