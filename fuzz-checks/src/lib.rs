//! The checks of the fuzz targets in `fuzz/` (one module per target), as plain functions, so
//! the libFuzzer targets and `cargo test` run the same code: the targets call
//! [`frame::check`] and the others on each input libFuzzer makes, and this crate's
//! `tests/corpus.rs` replays every committed corpus file (`fuzz/corpus/<target>/`) through
//! them on every test run, CI included. A check panics when it finds a fault.

pub mod acl_sign;
pub mod consumer_ops;
pub mod frame;
pub mod header;
pub mod message_batch;
pub mod route_json;
pub mod trace_decode;
