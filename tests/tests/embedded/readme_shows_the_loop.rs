//! README's "Embedding the consumer core" shows the `consume` example's loop as the example
//! has it, not a sketch: the code between the example's `ANCHOR: embedding` and
//! `ANCHOR_END: embedding` comments is one of the README's `rust` blocks, dedented.

use std::fs;

use crate::support::workspace;

#[test]
fn the_readme_shows_the_examples_loop() {
    let example = fs::read_to_string(workspace().join("examples/examples/consume.rs"))
        .expect("read the consume example");
    let readme = fs::read_to_string(workspace().join("README.md")).expect("read the README");
    let region = example
        .split_once("// ANCHOR: embedding\n")
        .and_then(|(_, rest)| rest.split_once("// ANCHOR_END: embedding"))
        .map(|(region, _)| region)
        .expect("consume.rs marks its loop with ANCHOR: embedding and ANCHOR_END: embedding");
    // The region is the body of `run`, one level in; the README shows it at the margin.
    let shown: Vec<&str> = region
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .collect();
    let block = format!("```rust\n{}\n```", shown.join("\n").trim_end());
    assert!(
        shown.len() > 20 && readme.contains(&block),
        "README.md must show consume.rs's loop as it is now; put this block in \"Embedding the \
         consumer core\":\n{block}"
    );
}
