//! The `acl_sign` fuzz target: the check is `rocketmq_fuzz_checks::acl_sign` (in the main workspace, so
//! `cargo test` replays this target's committed corpus through the same code).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rocketmq_fuzz_checks::acl_sign::check(data));
