//! `rmq produce`: send messages to a topic with the tokio [`Producer`], round robin over its
//! queues with several sends in flight, or all to one queue, in order, with a sharding key.
//!
//! It rides through a broker restart as `kcat` does: each message has a delivery timeout (the
//! producer's send timeout, `--delivery-timeout`, 120 s), within which a send waits for a
//! broker that is away (asking the name server again every 200 ms while the topic has no
//! route, dialling a refused broker again after the reconnect backoff) and retries failed
//! attempts; only a message not stored by then counts as an error. Librdkafka's default
//! (`message.timeout.ms`) is 300 s; 120 s covers a 4.9 broker's restart with room to spare
//! (3 to 10 s here; README, Reliability) and still ends a run against a cluster that is gone
//! within two minutes.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rocketmq_tokio::{ConfigError, Producer, ProducerMessage, SendError};

/// Why `rmq produce` stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProduceError {
    /// The tokio runtime could not start.
    #[error("tokio runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// The producer's configuration was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The name server knows no route for the topic, nor the default topic brokers create
    /// topics from: every message would wait its whole delivery timeout for nothing.
    #[error(
        "no route for topic {0}: the name server knows no such topic and no broker creates \
         topics (create it with `rmq topic create`)"
    )]
    UnknownTopic(String),
    /// A send failed in a way every other would (unknown topic, invalid message).
    #[error(transparent)]
    Send(#[from] SendError),
    /// A peer refused for want of credentials or permission.
    #[error("access denied: {0} (check --access-key/--secret-key and the user's permissions)")]
    AccessDenied(SendError),
}

/// What to send; also `rmq produce`'s arguments (the doc lines are its help).
#[derive(Clone, Debug, clap::Args)]
pub struct ProduceOptions {
    /// The topic (it must exist; see `rmq topic create`).
    #[arg(long)]
    pub topic: String,
    /// How many messages.
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Body size in bytes (ignored with --body).
    #[arg(long, default_value_t = 128)]
    pub size: usize,
    /// The tag of every message.
    #[arg(long)]
    pub tag: Option<String>,
    /// The keys of every message (space-separated).
    #[arg(long)]
    pub keys: Option<String>,
    /// Send every message to the queue this key hashes to, one at a time, in order.
    #[arg(long)]
    pub sharding_key: Option<String>,
    /// The body text; `{i}` becomes the message's index.
    #[arg(long)]
    pub body: Option<String>,
    /// Sends in flight at once (without --sharding-key; at least 1).
    #[arg(long, default_value_t = 32)]
    pub in_flight: usize,
    /// How long each message may take to be stored, in seconds, waits for a broker that is
    /// away and retries included: a broker restart shorter than this delays messages but
    /// loses none. A message not stored by then counts as an error.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub delivery_timeout: u64,
}

/// What was sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProduceSummary {
    /// Messages the brokers stored.
    pub sent: usize,
    /// Messages refused or lost: not stored within the delivery timeout, or refused for good.
    pub errors: usize,
    /// Attempts made again for the stored messages (after a failed attempt, or a connection
    /// that could not be opened).
    pub retries: usize,
    /// Body bytes stored.
    pub bytes: usize,
    /// Seconds taken.
    pub seconds: f64,
    /// The first failure, when there were any.
    pub first_error: Option<String>,
}

impl ProduceSummary {
    /// The final line `rmq produce` prints: count, rate and errors.
    pub fn line(&self) -> String {
        let seconds = self.seconds.max(1e-9);
        format!(
            "sent {} messages in {:.2} s ({:.0} msg/s, {:.2} MB/s), {} retries, {} errors",
            self.sent,
            self.seconds,
            self.sent as f64 / seconds,
            self.bytes as f64 / seconds / 1e6,
            self.retries,
            self.errors
        )
    }
}

/// Message `i` of `options`.
fn message(options: &ProduceOptions, i: usize) -> ProducerMessage {
    let body = match &options.body {
        Some(text) => text.replace("{i}", &i.to_string()).into_bytes(),
        None => vec![b'x'; options.size],
    };
    let mut message = ProducerMessage::new(body);
    if let Some(tag) = &options.tag {
        message = message.with_tag(tag.clone());
    }
    if let Some(keys) = &options.keys {
        message = message.with_keys(keys.clone());
    }
    if let Some(key) = &options.sharding_key {
        message = message.with_sharding_key(key.clone());
    }
    message
}

/// Whether every later send would fail the same way, so going on is pointless.
fn is_fatal(error: &SendError) -> bool {
    matches!(
        error,
        SendError::NoRoute { .. }
            | SendError::NoWritableQueue { .. }
            | SendError::InvalidMessage(_)
            | SendError::Closed
    )
}

/// Fails at once when the name server says neither `topic` nor the default topic (which
/// brokers with `autoCreateTopicEnable` create topics from) has a route: a typo, not a broker
/// that is away. Any other answer, or none, lets the sends find out for themselves.
fn check_topic(cluster: &crate::admin::Cluster, topic: &str) -> Result<(), ProduceError> {
    use crate::admin::{AdminError, route};
    let unknown = |name: &str| {
        matches!(
            route(cluster, name),
            Err(AdminError::Refused { code, .. }) if code == proto::ResponseCode::TOPIC_NOT_EXIST
        )
    };
    if unknown(topic) && unknown(driver::DEFAULT_TOPIC) {
        return Err(ProduceError::UnknownTopic(topic.to_owned()));
    }
    Ok(())
}

/// Sends `options.count` messages to `cluster`, calling `progress(done,
/// errors)` after each. Fails at once on an error every message would meet (unknown topic,
/// invalid message); other failures are counted and sending goes on.
pub fn produce(
    cluster: &crate::admin::Cluster,
    options: &ProduceOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<ProduceSummary, ProduceError> {
    check_topic(cluster, &options.topic)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut builder = Producer::builder("rmq-producer")
        .name_server(cluster.namesrv.clone())
        .send_timeout(Duration::from_secs(options.delivery_timeout));
    if let Some(credentials) = &cluster.credentials {
        builder = builder.credentials(credentials.clone());
    }
    if let Some(namespace) = &cluster.namespace {
        builder = builder.namespace(namespace.clone());
    }
    if let Some(tls) = &cluster.tls {
        builder = builder.tls(tls.clone());
    }
    let producer = builder.build()?;
    // A sharding key promises order, which only one send at a time keeps.
    let in_flight = if options.sharding_key.is_some() {
        1
    } else {
        options.in_flight.max(1)
    };
    runtime.block_on(async {
        let started = Instant::now();
        let mut summary = ProduceSummary::default();
        let producer = &producer;
        let mut sends = futures_util::stream::iter(0..options.count)
            .map(|i| {
                let message = message(options, i);
                let len = message.as_outgoing().body.len();
                async move { (len, producer.send(&options.topic, message).await) }
            })
            .buffer_unordered(in_flight);
        let mut done = 0;
        while let Some((len, result)) = sends.next().await {
            done += 1;
            match result {
                Ok(result) => {
                    summary.sent += 1;
                    summary.bytes += len;
                    summary.retries += result.retries as usize;
                }
                Err(error) if error.is_access_denied() => {
                    return Err(ProduceError::AccessDenied(error));
                }
                Err(error) if is_fatal(&error) => return Err(error.into()),
                Err(error) => {
                    summary.errors += 1;
                    summary.first_error.get_or_insert_with(|| error.to_string());
                }
            }
            progress(done, summary.errors);
        }
        summary.seconds = started.elapsed().as_secs_f64();
        Ok(summary)
    })
}
