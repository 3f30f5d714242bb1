//! The consumers' stats through the [`metrics`] facade (the `metrics` feature), for whatever
//! recorder the application installed (a Prometheus or OpenTelemetry exporter, say).
//!
//! A task beside the driver asks for a snapshot every interval (the same one
//! `RunningConsumer::stats` answers) and sets the metrics below from it. Nothing is recorded
//! per message: the core counts into its own fixed histograms and counters, and the exporter
//! hands the recorder what changed since the last interval (histograms as `record_many` per
//! bucket, each bucket's middle as the value).
//!
//! Every metric has the label `group` (the group as the application names it). Per queue,
//! also `topic`, `broker` and `queue` (the queue id):
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `rocketmq_consumer_messages_total` | counter | group | messages handed to handlers (poll mode: taken) |
//! | `rocketmq_consumer_deliveries_total` | counter | group | deliveries (poll mode: takes) |
//! | `rocketmq_consumer_pulls_total` | counter | group | pull answers and failures |
//! | `rocketmq_consumer_flow_control_pauses_total` | counter | group | pulls held back by flow control |
//! | `rocketmq_consumer_rate_limited_total` | counter | group | times a rate limit held messages back |
//! | `rocketmq_consumer_sent_back_total` | counter | group | failed messages the broker took back |
//! | `rocketmq_consumer_expired_deliveries_total` | counter | group | deliveries past `consume_timeout` |
//! | `rocketmq_consumer_stale_completions_total` | counter | group | completions after the queue went |
//! | `rocketmq_consumer_handovers_total` | counter | group | queues that waited for their previous owner to release them |
//! | `rocketmq_consumer_handover_timeouts_total` | counter | group | of those, the ones that started without the release after `handover_timeout` |
//! | `rocketmq_consumer_lag` | gauge | group | the queues' lag, summed |
//! | `rocketmq_consumer_cached_messages` | gauge | group | messages cached |
//! | `rocketmq_consumer_cached_bytes` | gauge | group | body bytes cached |
//! | `rocketmq_consumer_in_flight_deliveries` | gauge | group | deliveries running |
//! | `rocketmq_consumer_queues` | gauge | group | queues owned |
//! | `rocketmq_consumer_connections` | gauge | group, state (`connecting`, `connected`, `down`) | connections |
//! | `rocketmq_consumer_queue_lag` | gauge | group, topic, broker, queue | the broker's max offset minus the committable one |
//! | `rocketmq_consumer_queue_cached_messages` | gauge | group, topic, broker, queue | messages cached |
//! | `rocketmq_consumer_queue_cached_bytes` | gauge | group, topic, broker, queue | body bytes cached |
//! | `rocketmq_consumer_queue_in_flight` | gauge | group, topic, broker, queue | messages being handled |
//! | `rocketmq_consumer_queue_paused` | gauge | group, topic, broker, queue | 1 while paused |
//! | `rocketmq_consumer_pull_latency_seconds` | histogram | group | pull round trips answered at once |
//! | `rocketmq_consumer_consume_latency_seconds` | histogram | group | delivery to completion |
//!
//! A queue the consumer no longer owns has its gauges set to 0 once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use consumer_core::MessageQueue;
use consumer_core::stats::{ConnectionState, ConsumerStats, LatencyBuckets};
use futures_channel::{mpsc, oneshot};
use metrics::{counter, gauge, histogram};

use crate::input::{Input, PullCommand};
use crate::runtime::Runtime;

/// Exports every `every` until the driver task is gone.
pub(crate) async fn run<R: Runtime>(
    runtime: R,
    inputs: mpsc::UnboundedSender<Input>,
    group: String,
    every: Duration,
) {
    let mut exporter = Exporter::new(group);
    loop {
        runtime.sleep_until(runtime.now() + every).await;
        let (reply, answer) = oneshot::channel();
        if inputs
            .unbounded_send(Input::Pull(PullCommand::Metrics(reply)))
            .is_err()
        {
            return;
        }
        let Ok((stats, buckets)) = answer.await else {
            return;
        };
        exporter.export(&stats, &buckets);
    }
}

/// What was exported last, to hand the recorder only the change.
struct Exporter {
    group: String,
    pull: BTreeMap<Duration, u64>,
    consume: BTreeMap<Duration, u64>,
    queues: BTreeSet<MessageQueue>,
}

impl Exporter {
    fn new(group: String) -> Self {
        Self {
            group,
            pull: BTreeMap::new(),
            consume: BTreeMap::new(),
            queues: BTreeSet::new(),
        }
    }

    fn export(&mut self, stats: &ConsumerStats, buckets: &LatencyBuckets) {
        let group = self.group.clone();
        let counters = [
            ("rocketmq_consumer_messages_total", stats.delivered_messages),
            ("rocketmq_consumer_deliveries_total", stats.delivered),
            ("rocketmq_consumer_pulls_total", stats.pulls),
            (
                "rocketmq_consumer_flow_control_pauses_total",
                stats.flow_control_pauses,
            ),
            ("rocketmq_consumer_rate_limited_total", stats.rate_limited),
            ("rocketmq_consumer_sent_back_total", stats.sent_back),
            (
                "rocketmq_consumer_expired_deliveries_total",
                stats.expired_deliveries,
            ),
            (
                "rocketmq_consumer_stale_completions_total",
                stats.stale_completions,
            ),
            ("rocketmq_consumer_handovers_total", stats.handovers),
            (
                "rocketmq_consumer_handover_timeouts_total",
                stats.handover_timeouts,
            ),
        ];
        for (name, value) in counters {
            counter!(name, "group" => group.clone()).absolute(value);
        }
        let gauges = [
            ("rocketmq_consumer_lag", stats.lag as f64),
            (
                "rocketmq_consumer_cached_messages",
                stats.cached_messages as f64,
            ),
            ("rocketmq_consumer_cached_bytes", stats.cached_bytes as f64),
            (
                "rocketmq_consumer_in_flight_deliveries",
                stats.in_flight_deliveries as f64,
            ),
            ("rocketmq_consumer_queues", stats.queues.len() as f64),
        ];
        for (name, value) in gauges {
            gauge!(name, "group" => group.clone()).set(value);
        }
        let mut states = [("connecting", 0.0), ("connected", 0.0), ("down", 0.0)];
        for c in &stats.connections {
            let i = match c.state {
                ConnectionState::Connecting => 0,
                ConnectionState::Connected => 1,
                _ => 2,
            };
            states[i].1 += 1.0;
        }
        for (state, count) in states {
            gauge!("rocketmq_consumer_connections", "group" => group.clone(), "state" => state)
                .set(count);
        }

        let owned: BTreeSet<MessageQueue> = stats.queues.iter().map(|q| q.queue.clone()).collect();
        for q in &stats.queues {
            self.queue_gauges(
                &q.queue,
                [
                    q.lag as f64,
                    q.cached_messages as f64,
                    q.cached_bytes as f64,
                    q.in_flight as f64,
                    f64::from(u8::from(q.paused)),
                ],
            );
        }
        for gone in self.queues.difference(&owned) {
            self.queue_gauges(gone, [0.0; 5]);
        }
        self.queues = owned;

        record_new(
            "rocketmq_consumer_pull_latency_seconds",
            &group,
            &buckets.pull,
            &mut self.pull,
        );
        record_new(
            "rocketmq_consumer_consume_latency_seconds",
            &group,
            &buckets.consume,
            &mut self.consume,
        );
    }

    /// Sets the per-queue gauges of `queue`: lag, cached messages, cached bytes, in flight,
    /// paused.
    fn queue_gauges(&self, queue: &MessageQueue, values: [f64; 5]) {
        let names = [
            "rocketmq_consumer_queue_lag",
            "rocketmq_consumer_queue_cached_messages",
            "rocketmq_consumer_queue_cached_bytes",
            "rocketmq_consumer_queue_in_flight",
            "rocketmq_consumer_queue_paused",
        ];
        for (name, value) in names.into_iter().zip(values) {
            gauge!(
                name,
                "group" => self.group.clone(),
                "topic" => queue.topic().to_owned(),
                "broker" => queue.broker_name().to_owned(),
                "queue" => queue.queue_id().to_string(),
            )
            .set(value);
        }
    }
}

/// Records into histogram `name` what `buckets` counted since `seen`, then remembers them.
fn record_new(
    name: &'static str,
    group: &str,
    buckets: &[(Duration, u64)],
    seen: &mut BTreeMap<Duration, u64>,
) {
    let handle = histogram!(name, "group" => group.to_owned());
    for &(middle, count) in buckets {
        let before = seen.insert(middle, count).unwrap_or(0);
        let new = count.saturating_sub(before);
        if new > 0 {
            handle.record_many(
                middle.as_secs_f64(),
                usize::try_from(new).unwrap_or(usize::MAX),
            );
        }
    }
}
