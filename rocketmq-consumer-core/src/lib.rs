//! The sans-IO RocketMQ consumer state machine.
//!
//! **Not yet implemented.** This crate will hold the pure consumer core described in
//! `ARCHITECTURE.md` (routes, heartbeats, rebalance, pulling, flow control, offsets), driven
//! through `handle_*` inputs and `poll_*` outputs with time passed in. Today it only re-exports
//! the codec types the core will be built on.

pub mod rebalance;

pub use proto::MessageQueue;
