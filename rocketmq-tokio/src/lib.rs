//! The tokio adapter for `rocketmq-consumer-core`.
//!
//! **Not yet implemented.** It will own sockets, one timer and the handler executor, and nothing
//! else (see `ARCHITECTURE.md`); no consumer runs on it yet.

pub use consumer_core::MessageQueue;
