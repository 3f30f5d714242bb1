//! The examples of `rocketmq-examples`, which drive the core without any async runtime, run as
//! a user runs them against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`), one
//! scenario per module; the tests fail, never skip, without the broker.

#[path = "embedded/connection_break_loses_nothing.rs"]
mod connection_break_loses_nothing;
#[path = "embedded/hostile_broker_bad_frames.rs"]
mod hostile_broker_bad_frames;
#[path = "embedded/no_async_runtime.rs"]
mod no_async_runtime;
#[path = "embedded/produced_once_consumed_once.rs"]
mod produced_once_consumed_once;
#[path = "embedded/readme_shows_the_loop.rs"]
mod readme_shows_the_loop;
#[path = "embedded/support.rs"]
mod support;
