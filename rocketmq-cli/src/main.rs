//! `rmq`: a command-line tool for RocketMQ, built on this workspace's codec.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rmq_cli::{admin, consume, decode, lag, produce, progress, query, reset, status};

#[derive(Parser)]
#[command(
    name = "rmq",
    version,
    about = "RocketMQ remoting tool: decode captured frames, query a cluster"
)]
struct Cli {
    /// More log output on stderr: `-v` info, `-vv` debug (warnings and errors by default;
    /// `RUST_LOG`, e.g. `RUST_LOG=rocketmq_driver=debug`, overrides both).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Cmd,
}

/// Where the cluster is and how to sign in to it: every subcommand that connects takes these.
#[derive(clap::Args)]
struct ClusterArgs {
    /// Name server address; also NAMESRV_ADDR.
    #[arg(long, env = "NAMESRV_ADDR", default_value = "127.0.0.1:9876")]
    namesrv: String,
    /// ACL access key (also RMQ_ACCESS_KEY): with --secret-key, every request is signed.
    #[arg(long, env = "RMQ_ACCESS_KEY", requires = "secret_key")]
    access_key: Option<String>,
    /// ACL secret key (also RMQ_SECRET_KEY, which keeps it out of `ps`). Never printed.
    #[arg(
        long,
        env = "RMQ_SECRET_KEY",
        hide_env_values = true,
        requires = "access_key"
    )]
    secret_key: Option<String>,
    /// The tenant namespace topics and groups are named in (also RMQ_NAMESPACE).
    #[arg(long, env = "RMQ_NAMESPACE")]
    namespace: Option<String>,
    /// Connect over TLS, checking the servers' certificates against the platform's roots (or
    /// --tls-ca).
    #[arg(long)]
    tls: bool,
    /// TLS: trust the CA certificates of this PEM file.
    #[arg(long, requires = "tls")]
    tls_ca: Option<std::path::PathBuf>,
    /// TLS: show this client certificate chain (PEM), for brokers that ask for one.
    #[arg(long, requires_all = ["tls", "tls_key"])]
    tls_cert: Option<std::path::PathBuf>,
    /// TLS: the private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// TLS: check certificates against this name instead of each address's host.
    #[arg(long, requires = "tls")]
    tls_server_name: Option<String>,
    /// TLS: accept ANY server certificate, unchecked (test clusters only).
    #[arg(long, requires = "tls")]
    tls_insecure: bool,
}

impl ClusterArgs {
    fn cluster(self) -> admin::Cluster {
        let credentials = match (self.access_key, self.secret_key) {
            (Some(access_key), Some(secret_key)) => {
                Some(driver::Credentials::new(access_key, secret_key))
            }
            _ => None,
        };
        let tls = self.tls.then(|| {
            let mut tls = driver::Tls::new();
            if let Some(ca) = self.tls_ca {
                tls = tls.ca_file(ca);
            }
            if let (Some(cert), Some(key)) = (self.tls_cert, self.tls_key) {
                tls = tls.client_certificate(cert, key);
            }
            if let Some(name) = self.tls_server_name {
                tls = tls.server_name(name);
            }
            if self.tls_insecure {
                tls = tls.dangerous_accept_any_server_certificate();
            }
            tls
        });
        admin::Cluster::new(self.namesrv)
            .with_credentials(credentials)
            .with_namespace(self.namespace)
            .with_tls(tls)
    }
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
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Send messages to a topic, round robin over its queues (or to one queue, in order, with
    /// --sharding-key). Shows a progress bar on a terminal; prints count, rate and errors.
    Produce {
        #[command(flatten)]
        options: produce::ProduceOptions,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Consume a topic and print one JSON line per message; commits offsets before exiting.
    /// On a terminal, a status line on stderr shows the rate and the lag once a second.
    Consume {
        /// The consumer group.
        #[arg(long)]
        group: String,
        /// The topic.
        #[arg(long)]
        topic: String,
        /// Tag expression, e.g. 'TagA || TagB'.
        #[arg(long, default_value = "*")]
        expr: String,
        /// Where a new group starts: first, last, or timestamp:MS.
        #[arg(long, default_value = "last")]
        from: String,
        /// Exit after this many messages.
        #[arg(long)]
        count: Option<usize>,
        /// Exit after this many seconds without a message.
        #[arg(long)]
        idle_exit: Option<u64>,
        /// The async runtime: tokio or smol.
        #[arg(long, default_value = "tokio")]
        runtime: consume::RuntimeKind,
        /// Broadcasting: every consumer gets every message; offsets in a local file
        /// (`~/.rocketmq_offsets/<ip>@DEFAULT/<group>/offsets.json`, Java's path).
        #[arg(long)]
        broadcast: bool,
        /// Orderly: one delivery per queue at a time, in order, under the queue's lock.
        #[arg(long)]
        orderly: bool,
        /// At most this many messages a second (the consumer's rate limit: messages wait in
        /// its cache and pulls slow down; none is dropped). Must be positive.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        rate: Option<u32>,
        /// Trace every message to RMQ_SYS_TRACE_TOPIC (Java's message trace, which Java's
        /// dashboard and `mqadmin queryMsgTraceById` read; the broker needs
        /// traceTopicEnable=true).
        #[arg(long)]
        trace: bool,
        /// Pop consumption (RocketMQ 5.x brokers): the broker shares messages, not queues,
        /// between the group's members, so a group may have more members than the topic has
        /// queues. Each message is acked once printed; one popped after --count is reached
        /// comes back to the group after its retry delay. Where a new group starts is the
        /// broker's choice (the first stored message). With --orderly, orderly pop: each
        /// queue's messages in order, one at a time across the group.
        #[arg(long, conflicts_with_all = ["broadcast", "rate", "trace", "from"])]
        pop: bool,
        /// With --pop: how long a popped message stays invisible to the group's other members
        /// before it comes back unless acked (renewed while it is being printed).
        #[arg(long, requires = "pop", value_parser = clap::value_parser!(u64).range(1..))]
        invisible_time: Option<u64>,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Per queue of a topic: the broker's offset range, the group's committed offset, the lag.
    Offsets {
        /// The consumer group.
        #[arg(long)]
        group: String,
        /// The topic.
        #[arg(long)]
        topic: String,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// A consumer group's progress (GET_CONSUME_STATS from every broker): one JSON line per
    /// queue (broker and consumer offsets, lag, last consumed store time), then the totals.
    Lag {
        /// The consumer group.
        #[arg(long)]
        group: String,
        /// Only this topic (by default every topic the group committed offsets for, its retry
        /// topic included, as `mqadmin consumerProgress` lists them).
        #[arg(long)]
        topic: Option<String>,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Each live member's running info (GET_CONSUMER_RUNNING_INFO, relayed by a broker to the
    /// member): one JSON line per member; exit status 1 when one did not answer.
    ConsumerStatus {
        /// The consumer group.
        #[arg(long)]
        group: String,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Move a group's offsets of a topic to a store time through the brokers, so running
    /// members restart there (INVOKE_BROKER_TO_RESET_OFFSET); prints each queue's new offset.
    #[command(group(clap::ArgGroup::new("target").required(true).args(["timestamp", "to"])))]
    ResetOffset {
        /// The consumer group.
        #[arg(long)]
        group: String,
        /// The topic.
        #[arg(long)]
        topic: String,
        /// The first message stored at or after this time, in ms since the epoch.
        #[arg(long, allow_negative_numbers = true)]
        timestamp: Option<i64>,
        /// `first` (timestamp 0: every stored message again) or `last` (timestamp -1: each
        /// queue's end, skipping everything stored so far).
        #[arg(long, value_parser = ["first", "last"])]
        to: Option<String>,
        /// Only move offsets back: a queue whose offset the reset would move forward keeps it
        /// (Java's isForce=false; by default offsets move both ways, as mqadmin's do).
        #[arg(long)]
        no_force: bool,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Find stored messages by key (QUERY_MESSAGE, the brokers' index) or by id
    /// (VIEW_MESSAGE_BY_ID for an offset message id; a unique key with --topic); prints them as
    /// `rmq consume` does.
    #[command(group(clap::ArgGroup::new("what").required(true).args(["key", "id"])))]
    Query {
        /// The topic (required with --key; with --id, for an id that is a unique key).
        #[arg(long, required_unless_present = "id")]
        topic: Option<String>,
        /// A message key: every message of the topic with it, oldest first.
        #[arg(long)]
        key: Option<String>,
        /// A message id: an offset message id, or with --topic a message's unique key
        /// (`msg_id` in `rmq consume` output).
        #[arg(long)]
        id: Option<String>,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Topic administration.
    Topic {
        #[command(subcommand)]
        command: TopicCmd,
    },
    /// Print a topic's route (GET_ROUTEINFO_BY_TOPIC) as JSON.
    Route {
        /// The topic.
        topic: String,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

#[derive(Subcommand)]
enum TopicCmd {
    /// Create (or update) a topic on every broker master, and wait until it is routed.
    Create {
        /// The topic.
        topic: String,
        /// Read and write queues per broker.
        #[arg(long, default_value_t = 4)]
        queues: i32,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rmq: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Sends the library's `tracing` events to stderr, so an operator sees a broker that refuses
/// connections or answers garbage (the driver warns) instead of a silent run; stdout stays the
/// JSON lines. Warnings and errors by default, as tracing users expect; `RUST_LOG` wins.
fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_target(true)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
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
        Cmd::Cluster { cluster } => {
            let info = admin::cluster_info(&cluster.cluster()).map_err(|e| e.to_string())?;
            writeln!(out, "{info}").map_err(|e| format!("stdout: {e}"))?;
        }
        Cmd::Produce { options, cluster } => {
            let mut bar = progress::ProgressBar::new(options.count, progress::stderr_is_terminal());
            let result = produce::produce(&cluster.cluster(), &options, |done, errors| {
                bar.update(done, errors);
            });
            bar.finish();
            let summary = result.map_err(|e| e.to_string())?;
            eprintln!("{}", summary.line());
            if let Some(first) = &summary.first_error {
                return Err(format!(
                    "{} messages were not stored (first: {first})",
                    summary.errors
                ));
            }
        }
        Cmd::Consume {
            group,
            topic,
            expr,
            from,
            count,
            idle_exit,
            runtime,
            broadcast,
            orderly,
            rate,
            trace,
            pop,
            invisible_time,
            cluster,
        } => {
            let from = match from.as_str() {
                "first" => consume::ConsumeFrom::First,
                "last" => consume::ConsumeFrom::Last,
                other => match other.strip_prefix("timestamp:").map(str::parse::<i64>) {
                    Some(Ok(ms)) => consume::ConsumeFrom::Timestamp(ms),
                    _ => {
                        return Err(format!(
                            "--from {other}: expected first, last or timestamp:MS"
                        ));
                    }
                },
            };
            let options = consume::ConsumeOptions {
                cluster: cluster.cluster(),
                group,
                topic,
                expression: expr,
                from,
                count,
                idle_exit: idle_exit.map(std::time::Duration::from_secs),
                runtime,
                broadcast,
                orderly,
                rate,
                trace,
                pop: pop.then(|| std::time::Duration::from_secs(invisible_time.unwrap_or(60))),
                stop: Some(stop_on_signals()?),
            };
            let live = progress::stderr_is_terminal().then(|| consume::LiveLine::start(&options));
            let mut write_error = None;
            let result = consume::consume(&options, live.as_ref(), |value| {
                if write_error.is_none() {
                    write_error = writeln!(out, "{value}").and_then(|()| out.flush()).err();
                }
            });
            if let Some(live) = live {
                live.stop();
            }
            let report = result?;
            if let Some(e) = write_error {
                return Err(format!("stdout: {e}"));
            }
            eprintln!("{report}");
        }
        Cmd::Topic {
            command:
                TopicCmd::Create {
                    topic,
                    queues,
                    cluster,
                },
        } => {
            let route = admin::create_topic(&cluster.cluster(), &topic, queues)
                .map_err(|e| e.to_string())?;
            let value = serde_json::to_value(&route).map_err(|e| e.to_string())?;
            writeln!(out, "{value}").map_err(|e| format!("stdout: {e}"))?;
        }
        Cmd::Offsets {
            group,
            topic,
            cluster,
        } => {
            let cluster = cluster.cluster();
            for queue in admin::offsets(&cluster, &group, &topic).map_err(|e| e.to_string())? {
                let value = serde_json::to_value(&queue).map_err(|e| e.to_string())?;
                writeln!(out, "{value}").map_err(|e| format!("stdout: {e}"))?;
            }
        }
        Cmd::Lag {
            group,
            topic,
            cluster,
        } => {
            let lag = lag::lag(&cluster.cluster(), &group, topic.as_deref())
                .map_err(|e| e.to_string())?;
            for queue in &lag.queues {
                let value = serde_json::to_value(queue).map_err(|e| e.to_string())?;
                writeln!(out, "{value}").map_err(|e| format!("stdout: {e}"))?;
            }
            writeln!(out, "{}", lag.totals_json()).map_err(|e| format!("stdout: {e}"))?;
        }
        Cmd::ConsumerStatus { group, cluster } => {
            let cluster = cluster.cluster();
            let members = status::consumer_status(&cluster, &group).map_err(|e| e.to_string())?;
            let mut failed = Vec::new();
            for member in &members {
                writeln!(out, "{}", member.to_json(&cluster))
                    .map_err(|e| format!("stdout: {e}"))?;
                if let Err(e) = &member.result {
                    failed.push(format!("{}: {e}", member.client_id));
                }
            }
            if let Some(first) = failed.first() {
                out.flush().map_err(|e| format!("stdout: {e}"))?;
                return Err(format!(
                    "{} of {} members did not answer (first: {first})",
                    failed.len(),
                    members.len()
                ));
            }
        }
        Cmd::ResetOffset {
            group,
            topic,
            timestamp,
            to,
            no_force,
            cluster,
        } => {
            let to = match (timestamp, to.as_deref()) {
                (Some(ms), _) => reset::ResetTo::Timestamp(ms),
                (None, Some("first")) => reset::ResetTo::First,
                (None, Some("last")) => reset::ResetTo::Last,
                _ => return Err("give --timestamp MS or --to first|last".into()),
            };
            let cluster = cluster.cluster();
            let queues = reset::reset_offset(&cluster, &group, &topic, to, !no_force)
                .map_err(|e| e.to_string())?;
            for queue in &queues {
                let value = serde_json::to_value(queue).map_err(|e| e.to_string())?;
                writeln!(out, "{value}").map_err(|e| format!("stdout: {e}"))?;
            }
            if queues.iter().any(|q| q.via == "direct") {
                eprintln!(
                    "no member of {group} was online at some brokers: their offsets were \
                     committed directly (UPDATE_CONSUMER_OFFSET), as mqadmin does"
                );
            }
        }
        Cmd::Query {
            topic,
            key,
            id,
            cluster,
        } => {
            let cluster = cluster.cluster();
            let messages = match (key, id, topic) {
                (Some(key), _, Some(topic)) => {
                    let messages =
                        query::by_key(&cluster, &topic, &key).map_err(|e| e.to_string())?;
                    if messages.is_empty() {
                        return Err(format!("no message of topic {topic} has key {key}"));
                    }
                    messages
                }
                (None, Some(id), topic) => {
                    vec![query::by_id(&cluster, &id, topic.as_deref()).map_err(|e| e.to_string())?]
                }
                _ => return Err("give --topic T --key K, or --id ID".into()),
            };
            for message in messages {
                writeln!(out, "{message}").map_err(|e| format!("stdout: {e}"))?;
            }
        }
        Cmd::Route { topic, cluster } => {
            let route = admin::route(&cluster.cluster(), &topic).map_err(|e| e.to_string())?;
            let value = serde_json::to_value(&route).map_err(|e| e.to_string())?;
            writeln!(out, "{value}").map_err(|e| format!("stdout: {e}"))?;
        }
    }
    out.flush().map_err(|e| format!("stdout: {e}"))
}

/// SIGINT (Ctrl-C) and SIGTERM (a rolling deploy's stop) end `rmq consume` gracefully: the
/// final commits, the queues handed over, the report on stderr. A second signal exits at once
/// (status 130), leaving what was not committed to the group's next member.
fn stop_on_signals() -> Result<consume::Stop, String> {
    let stop = consume::Stop::default();
    let asked = stop.clone();
    ctrlc::set_handler(move || {
        if asked.ask() {
            eprintln!("stopping: committing offsets (a second signal exits at once)");
        } else {
            eprintln!("second signal: exiting without committing");
            std::process::exit(130);
        }
    })
    .map_err(|e| format!("signal handler: {e}"))?;
    Ok(stop)
}
