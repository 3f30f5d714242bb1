//! A push consumer driven without any async runtime: one loop thread owns the core's
//! `Consumer`, plain threads move bytes ([`Sockets`]) and run the handler.
//!
//! ```text
//! cargo run -p rocketmq-examples --example consume -- \
//!     --namesrv 127.0.0.1:9876 --topic T --group G --count 100
//! ```
//!
//! Prints each message on standard output (`queue-id offset msg-id body`), what the core
//! reports on standard error, and on Ctrl-C, after `--count` messages or `--idle-exit` seconds
//! without one, shuts down gracefully: in-flight handlers finish, offsets are committed, the
//! client unregisters, and the shutdown report is printed. A second Ctrl-C exits at once.

use std::error::Error;
use std::io::Write;
use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use consumer_core::{
    ConsumeFrom, ConsumeOutcome, Consumer, ConsumerConfig, Delivery, DeliveryId, Event, Output,
    ShutdownReport,
};
use rocketmq_examples::{ClusterArgs, Io, host};

/// Consume a topic with the sans-IO core on plain threads.
#[derive(Parser, Debug)]
struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The consumer group.
    #[arg(long)]
    group: String,
    /// The tag expression.
    #[arg(long, default_value = "*")]
    expression: String,
    /// Where a queue the group never committed starts: `first` or `last` (Java's default).
    #[arg(long, default_value = "last", value_parser = parse_from)]
    from: ConsumeFrom,
    /// Shut down after this many messages.
    #[arg(long)]
    count: Option<u64>,
    /// Shut down after this many seconds without a message.
    #[arg(long, value_parser = parse_seconds)]
    idle_exit: Option<Duration>,
    /// Handler threads.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
}

fn parse_seconds(arg: &str) -> Result<Duration, String> {
    arg.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("expected a number of seconds, got {arg:?}"))
}

fn parse_from(arg: &str) -> Result<ConsumeFrom, String> {
    match arg {
        "first" => Ok(ConsumeFrom::First),
        "last" => Ok(ConsumeFrom::Last),
        _ => Err(format!("expected first or last, got {arg:?}")),
    }
}

/// Everything the loop waits for, on one channel.
enum Input {
    /// Something happened on a connection.
    Io(Io),
    /// A handler finished a delivery of this many messages.
    Done(DeliveryId, usize),
    /// Ctrl-C.
    Stop,
}

impl From<Io> for Input {
    fn from(io: Io) -> Self {
        Self::Io(io)
    }
}

fn main() -> ExitCode {
    rocketmq_examples::exit_code("consume", run(&Args::parse()))
}

/// Consumes until the shutdown; fails when a final commit was not confirmed.
fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let (inputs, received) = mpsc::channel();
    rocketmq_examples::stop_on_ctrl_c(&inputs, || Input::Stop)?;

    let namesrv = &args.cluster.namesrv;
    let mut config = ConsumerConfig::new(args.group.as_str(), vec![namesrv.clone()]);
    config.consume_from = args.from;
    let mut sockets = args.cluster.sockets(inputs.clone(), config.connect_timeout);
    let instance = consumer_core::default_instance_name(std::process::id(), host::unix_nanos());
    let client_id = consumer_core::client_id(&host::local_ip(namesrv).to_string(), &instance);
    // ANCHOR: embedding
    let start = Instant::now();
    let mut consumer = Consumer::new(config, client_id, start, host::unix_ms())?;
    consumer.subscribe(start, &args.cluster.topic, &args.expression)?;
    let handlers = Handlers::start(args.threads, &inputs)?;

    let mut consumed = 0;
    let mut last_message = start;
    let mut stopping = false;
    loop {
        // 1. Carry out everything the last input caused.
        while let Some(output) = consumer.poll_output() {
            match output {
                Output::Wire(wire) => sockets.handle_wire(wire),
                Output::Deliver(delivery) => handlers.run(delivery),
                Output::Event(Event::Closed(report)) => {
                    sockets.close_all();
                    print_report(consumed, &report);
                    return match report.uncommitted.as_slice() {
                        [] => Ok(()),
                        queues => Err(format!("no commit confirmed for {queues:?}").into()),
                    };
                }
                Output::Event(event) => eprintln!("event: {event:?}"),
                // Only with `ConsumerConfig::revoke_hook`, off here: nothing to flush.
                Output::Revoking { request, .. } => consumer.revoke_done(Instant::now(), request),
                // Only in broadcasting (this consumes in clustering, where the brokers keep
                // the offsets) and with `ConsumerConfig::trace`, off here.
                Output::StoreOffsets(_) | Output::Trace(_) => {}
            }
        }

        // 2. Sleep until the core's next timeout, or until something arrives.
        let idle_at = args
            .idle_exit
            .filter(|_| !stopping)
            .map(|idle| last_message + idle);
        let wake_at = [consumer.poll_timeout(), idle_at]
            .into_iter()
            .flatten()
            .min();
        let input = rocketmq_examples::next_input(&received, wake_at);

        // 3. Feed it in, with the time now; then fire what is due.
        let now = Instant::now();
        match input {
            Some(Input::Io(io)) if sockets.is_live(&io) => match io {
                Io::Connected(conn) => consumer.handle_connected(now, conn),
                Io::Frame(conn, command) => consumer.handle_command(now, conn, command),
                Io::Lost(conn, why) => {
                    eprintln!("connection {} lost: {why}", conn.0);
                    consumer.handle_disconnected(now, conn);
                }
            },
            Some(Input::Io(_)) => {}
            Some(Input::Done(delivery, messages)) => {
                consumer.complete(now, delivery, ConsumeOutcome::Success);
                consumed += messages as u64;
                last_message = now;
                if args.count.is_some_and(|count| consumed >= count) && !stopping {
                    stopping = true;
                    consumer.shutdown(now);
                }
            }
            Some(Input::Stop) if stopping => {
                return Err("interrupted twice: exiting at once".into());
            }
            Some(Input::Stop) => {
                stopping = true;
                consumer.shutdown(now);
            }
            None => {
                if idle_at.is_some_and(|at| at <= now) {
                    stopping = true;
                    consumer.shutdown(now);
                }
            }
        }
        if consumer.poll_timeout().is_some_and(|at| at <= now) {
            consumer.handle_timeout(now);
        }
    }
    // ANCHOR_END: embedding
}

/// The shutdown report, on standard error.
fn print_report(consumed: u64, report: &ShutdownReport) {
    let committed: Vec<String> = report
        .committed
        .iter()
        .map(|(queue, offset)| format!("{queue:?}={offset}"))
        .collect();
    eprintln!(
        "consumed {consumed} messages; shutdown: {} deliveries drained, {} abandoned, \
         committed [{}], unconfirmed {:?}",
        report.drained,
        report.abandoned,
        committed.join(" "),
        report.uncommitted
    );
}

/// The handler, on a few threads: each delivery is printed, then reported done on the loop's
/// channel (where `Consumer::complete` takes it). A real handler would decide the outcome.
struct Handlers {
    deliveries: Sender<Delivery>,
}

impl Handlers {
    fn start(threads: u16, done: &Sender<Input>) -> std::io::Result<Self> {
        let (deliveries, queue) = mpsc::channel::<Delivery>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads {
            let (queue, done) = (Arc::clone(&queue), done.clone());
            thread::Builder::new()
                .name(format!("handler-{n}"))
                .spawn(move || {
                    loop {
                        // The lock is held only to take the next delivery.
                        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        let Ok(delivery) = next else { return };
                        handle(&delivery);
                        if done
                            .send(Input::Done(delivery.id, delivery.messages.len()))
                            .is_err()
                        {
                            return;
                        }
                    }
                })?;
        }
        Ok(Self { deliveries })
    }

    fn run(&self, delivery: Delivery) {
        // The threads live as long as the loop holds `self`.
        let _ = self.deliveries.send(delivery);
    }
}

fn handle(delivery: &Delivery) {
    let mut out = std::io::stdout().lock();
    for message in &delivery.messages {
        let _ = writeln!(
            out,
            "{} {} {} {}",
            delivery.queue.queue_id(),
            message.queue_offset(),
            message.msg_id(),
            String::from_utf8_lossy(message.body())
        );
    }
}
