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

use std::error::Error;
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

pub use sockets::{Io, Sockets};

/// Where the examples connect, as their command lines say it.
#[derive(clap::Args, Debug)]
pub struct ClusterArgs {
    /// The name server.
    #[arg(long, env = "NAMESRV_ADDR", default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    /// The topic.
    #[arg(long)]
    pub topic: String,
    /// Connect to TO wherever the cluster names FROM (`host:port=host:port`, repeatable): a
    /// broker behind NAT, or a proxy.
    #[arg(long, value_parser = parse_redirect)]
    pub redirect: Vec<(String, String)>,
}

impl ClusterArgs {
    /// Connections for a core, reporting on `events`, redirected as the command line says.
    pub fn sockets<T: From<Io> + Send + 'static>(
        &self,
        events: Sender<T>,
        connect_timeout: Duration,
    ) -> Sockets<T> {
        let mut sockets = Sockets::new(events, connect_timeout);
        for (from, to) in &self.redirect {
            sockets.redirect(from.clone(), to.clone());
        }
        sockets
    }
}

/// Sleeps until an input arrives (`Some`) or `until` passes (`None`; without `until`, only an
/// input ends the wait). The loop's `Sockets` holds a sender, so the channel stays open.
pub fn next_input<T>(inputs: &Receiver<T>, until: Option<Instant>) -> Option<T> {
    match until {
        Some(at) => inputs
            .recv_timeout(at.saturating_duration_since(Instant::now()))
            .ok(),
        None => Some(
            inputs
                .recv()
                .expect("the loop's Sockets holds a sender of its input channel"),
        ),
    }
}

/// The exit code of `program`'s run; a failure's reason goes to stderr first.
pub fn exit_code(program: &str, run: Result<(), Box<dyn Error>>) -> ExitCode {
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Sends `stop()` on `inputs` at each Ctrl-C.
pub fn stop_on_ctrl_c<T: Send + 'static>(
    inputs: &Sender<T>,
    stop: fn() -> T,
) -> Result<(), ctrlc::Error> {
    let inputs = inputs.clone();
    ctrlc::set_handler(move || {
        let _ = inputs.send(stop());
    })
}

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
