//! The examples' dependency tree holds no async runtime: what they show is what a runtime of
//! one's own needs, nothing borrowed from tokio, smol, async-std or futures.

use crate::support::cargo;

/// Crates no embedding of the core needs; their presence means the example leans on them.
const RUNTIMES: &[&str] = &[
    "tokio",
    "smol",
    "async-std",
    "async-io",
    "async-executor",
    "futures",
    "futures-util",
    "futures-io",
    "futures-channel",
];

#[test]
fn the_examples_depend_on_no_async_runtime() {
    let output = cargo()
        .args([
            "tree",
            "-p",
            "rocketmq-examples",
            "-e",
            "normal,build,dev",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .expect("run cargo tree");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8_lossy(&output.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(
        crates.contains(&"rocketmq-consumer-core"),
        "the tree names the core: {tree}"
    );
    let runtimes: Vec<&&str> = crates.iter().filter(|c| RUNTIMES.contains(c)).collect();
    assert!(
        runtimes.is_empty(),
        "the examples depend on {runtimes:?}:\n{tree}"
    );
}
