//! `rmq`: a command-line tool for RocketMQ, built on this workspace's codec.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rmq_cli::{admin, decode};

#[derive(Parser)]
#[command(
    name = "rmq",
    version,
    about = "RocketMQ remoting tool: decode captured frames, query a cluster"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Decode concatenated frames (a capture) into JSON lines, one per frame.
    Decode {
        /// The capture; standard input when absent.
        file: Option<std::path::PathBuf>,
        /// Decode every body as a message batch (by default: SUCCESS responses whose body starts
        /// with a stored-message magic code).
        #[arg(long, conflicts_with = "route")]
        pull: bool,
        /// Decode every body as topic route data.
        #[arg(long)]
        route: bool,
        /// Do not verify message body CRCs (verified by default).
        #[arg(long)]
        no_verify_crc: bool,
    },
    /// Print the cluster's brokers (GET_BROKER_CLUSTER_INFO) as JSON.
    Cluster {
        /// Name server address; also NAMESRV_ADDR.
        #[arg(long, env = "NAMESRV_ADDR", default_value = "127.0.0.1:9876")]
        namesrv: String,
    },
    /// Print a topic's route (GET_ROUTEINFO_BY_TOPIC) as JSON.
    Route {
        /// The topic.
        topic: String,
        /// Name server address; also NAMESRV_ADDR.
        #[arg(long, env = "NAMESRV_ADDR", default_value = "127.0.0.1:9876")]
        namesrv: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rmq: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Cmd) -> Result<(), String> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match command {
        Cmd::Decode {
            file,
            pull,
            route,
            no_verify_crc,
        } => {
            let input = match file {
                Some(path) => {
                    std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?
                }
                None => {
                    let mut input = Vec::new();
                    std::io::stdin()
                        .read_to_end(&mut input)
                        .map_err(|e| format!("stdin: {e}"))?;
                    input
                }
            };
            let mode = if pull {
                decode::BodyMode::Pull
            } else if route {
                decode::BodyMode::Route
            } else {
                decode::BodyMode::Auto
            };
            let options = decode::Options {
                mode,
                verify_crc: !no_verify_crc,
            };
            let mut write_error = None;
            let result = decode::decode_stream(&input, options, |value| {
                if write_error.is_none() {
                    write_error = writeln!(out, "{value}").err();
                }
            });
            if let Some(e) = write_error {
                return Err(format!("stdout: {e}"));
            }
            if let Err(failure) = result {
                writeln!(out, "{}", failure.to_json()).map_err(|e| format!("stdout: {e}"))?;
                out.flush().map_err(|e| format!("stdout: {e}"))?;
                return Err(format!("{} (at byte {})", failure.error, failure.offset));
            }
        }
        Cmd::Cluster { namesrv } => {
            let info = admin::cluster_info(&namesrv).map_err(|e| e.to_string())?;
            writeln!(out, "{info}").map_err(|e| format!("stdout: {e}"))?;
        }
        Cmd::Route { topic, namesrv } => {
            let route = admin::route(&namesrv, &topic).map_err(|e| e.to_string())?;
            let value = serde_json::to_value(&route).map_err(|e| e.to_string())?;
            writeln!(out, "{value}").map_err(|e| format!("stdout: {e}"))?;
        }
    }
    out.flush().map_err(|e| format!("stdout: {e}"))
}
