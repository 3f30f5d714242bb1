//! The `consumer_ops` fuzz target: the check is `rocketmq_fuzz_checks::consumer_ops` (in the main workspace, so
//! `cargo test` replays this target's committed corpus through the same code).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rocketmq_fuzz_checks::consumer_ops::check(data));
