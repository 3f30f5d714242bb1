//! The codec against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`), one scenario
//! per module, all in one test binary; the tests fail, never skip, without the broker.

#[path = "broker/offsets_and_locks.rs"]
mod offsets_and_locks;
#[path = "broker/send_and_pull.rs"]
mod send_and_pull;
