//! A producer driven without any async runtime: one loop thread owns the core's `Producer`,
//! plain threads move bytes ([`Sockets`]).
//!
//! ```text
//! cargo run -p rocketmq-examples --example produce -- \
//!     --namesrv 127.0.0.1:9876 --topic T --count 100
//! ```
//!
//! Sends `--count` messages (bodies `<prefix><n>`), at most `--in-flight` at a time, waits for
//! every receipt, and prints one line per message on standard output (`queue-id offset msg-id
//! body`). Failed sends are reported on standard error and make the exit status 1. Ctrl-C
//! stops starting new sends; those in flight are waited for.

use std::collections::BTreeMap;
use std::error::Error;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Instant;

use clap::Parser;
use consumer_core::producer::{
    Prepared, Producer, ProducerConfig, ProducerMessage, ProducerOutput, UniqueIds,
};
use rocketmq_examples::{ClusterArgs, Io, host};

/// Send messages with the sans-IO core on plain threads.
#[derive(Parser, Debug)]
struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The producer group.
    #[arg(long, default_value = "embedded-producer")]
    group: String,
    /// How many messages to send.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Each body is this prefix and the message's number.
    #[arg(long, default_value = "message-")]
    prefix: String,
    /// Sends in flight at most.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    in_flight: u64,
}

/// Everything the loop waits for, on one channel.
enum Input {
    /// Something happened on a connection.
    Io(Io),
    /// Ctrl-C.
    Stop,
}

impl From<Io> for Input {
    fn from(io: Io) -> Self {
        Self::Io(io)
    }
}

fn main() -> ExitCode {
    rocketmq_examples::exit_code("produce", run(&Args::parse()))
}

/// Sends every message; fails when a send failed.
fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let (inputs, received) = mpsc::channel();
    rocketmq_examples::stop_on_ctrl_c(&inputs, || Input::Stop)?;

    let (namesrv, topic) = (&args.cluster.namesrv, &args.cluster.topic);
    let config = ProducerConfig::new(args.group.as_str(), vec![namesrv.clone()]);
    let mut sockets = args.cluster.sockets(inputs, config.connect_timeout);
    let ip = match host::local_ip(namesrv) {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    let mut ids = UniqueIds::new(&ip, std::process::id(), 0, host::unix_ms());
    let mut producer = Producer::new(config.clone())?;

    let mut to_send = args.count;
    let (mut started, mut finished, mut failed) = (0, 0, 0);
    let mut bodies = BTreeMap::new();
    while finished < to_send {
        // 1. Start sends while there is room.
        while started < to_send && finished + args.in_flight > started {
            let body = format!("{}{started}", args.prefix);
            let message = ProducerMessage::new(body.as_str());
            let prepared = Prepared::single(&config, topic, message, &mut ids, host::unix_ms())?;
            bodies.insert(producer.send(Instant::now(), prepared), body);
            started += 1;
        }

        // 2. Carry out everything it caused.
        while let Some(output) = producer.poll_output() {
            match output {
                ProducerOutput::Wire(wire) => sockets.handle_wire(wire),
                ProducerOutput::Sent { send, result, peer } => {
                    finished += 1;
                    let body = bodies.remove(&send).unwrap_or_default();
                    match result {
                        Ok(sent) => println!(
                            "{} {} {} {body}",
                            sent.queue.queue_id(),
                            sent.queue_offset,
                            sent.msg_ids.join(",")
                        ),
                        Err(e) => {
                            failed += 1;
                            eprintln!("send of {body} failed ({peer}): {e}");
                        }
                    }
                }
            }
        }
        if finished >= to_send {
            break;
        }

        // 3. Sleep until the next timeout or something arrives; feed it in; fire what is due.
        let input = rocketmq_examples::next_input(&received, producer.poll_timeout());
        let now = Instant::now();
        match input {
            Some(Input::Io(io)) if sockets.is_live(&io) => match io {
                Io::Connected(conn) => producer.handle_connected(now, conn),
                Io::Frame(conn, command) => producer.handle_command(now, conn, command),
                Io::Lost(conn, why) => producer.handle_disconnected(now, conn, &why),
            },
            Some(Input::Io(_)) | None => {}
            // Those in flight finish; no new ones start.
            Some(Input::Stop) => to_send = started,
        }
        if producer.poll_timeout().is_some_and(|at| at <= now) {
            producer.handle_timeout(now);
        }
    }
    producer.close();
    while let Some(output) = producer.poll_output() {
        if let ProducerOutput::Wire(wire) = output {
            sockets.handle_wire(wire);
        }
    }
    sockets.close_all();
    eprintln!("sent {} of {} messages", finished - failed, args.count);
    match failed {
        0 => Ok(()),
        _ => Err(format!("{failed} of {} sends failed", args.count).into()),
    }
}
