//! What the examples `consume` and `produce` share: the core's connections on plain threads
//! and blocking `std::net` sockets ([`Sockets`]), and where this process is ([`host`]).
//!
//! The examples drive `rocketmq-consumer-core` without any async runtime, the way a program
//! with a loop of its own (a game loop, an in-house reactor, a thread-per-core server) would:
//! one thread owns the core's state machine and waits on one channel for everything that can
//! happen to it (a connection opened, a frame, a connection lost, a handler done, Ctrl-C) or
//! for the core's next timeout, whichever comes first. README, "Embedding the consumer core",
//! walks through them.

pub mod host;
mod sockets;

pub use sockets::{Io, Sockets};

/// Parses `FROM=TO`, an address the core names and the one to connect to instead (`--redirect`).
pub fn parse_redirect(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((from, to)) if !from.is_empty() && !to.is_empty() => {
            Ok((from.to_owned(), to.to_owned()))
        }
        _ => Err(format!(
            "expected FROM=TO (host:port=host:port), got {arg:?}"
        )),
    }
}
