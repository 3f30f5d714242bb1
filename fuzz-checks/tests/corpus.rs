//! Every committed fuzz corpus replayed through its target's check, so `cargo test` (and CI)
//! runs the inputs the fuzzers kept, including the regression seeds of faults they found. A
//! failing input is named by its file.
//!
//! `consumer_ops` replays only its `seed-*` files: the others in that directory are a local
//! campaign's finds, which git ignores (`.gitignore`), so a clean checkout has only the seeds.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus of {target} at {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .filter(|path| {
            target != "consumer_ops"
                || path
                    .file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with("seed-"))
        })
        .collect();
    files.sort();
    files
}

/// Runs `check` on every corpus file of `target`; fails naming each input that panicked.
fn replay(target: &str, check: fn(&[u8])) {
    let files = corpus(target);
    assert!(!files.is_empty(), "the corpus of {target} is empty");
    let failed: Vec<String> = files
        .iter()
        .filter(|path| {
            let data =
                std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            panic::catch_unwind(AssertUnwindSafe(|| check(&data))).is_err()
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{target}: {} of {} corpus inputs fail: {failed:?}",
        failed.len(),
        files.len()
    );
}

#[test]
fn acl_sign_corpus() {
    replay("acl_sign", rocketmq_fuzz_checks::acl_sign::check);
}

#[test]
fn consumer_ops_corpus() {
    replay("consumer_ops", rocketmq_fuzz_checks::consumer_ops::check);
}

#[test]
fn frame_corpus() {
    replay("frame", rocketmq_fuzz_checks::frame::check);
}

#[test]
fn header_corpus() {
    replay("header", rocketmq_fuzz_checks::header::check);
}

#[test]
fn message_batch_corpus() {
    replay("message_batch", rocketmq_fuzz_checks::message_batch::check);
}

#[test]
fn route_json_corpus() {
    replay("route_json", rocketmq_fuzz_checks::route_json::check);
}

#[test]
fn trace_decode_corpus() {
    replay("trace_decode", rocketmq_fuzz_checks::trace_decode::check);
}
