//! `rmq lag`: a consumer group's progress per queue, as `mqadmin consumerProgress -g` shows it,
//! from `GET_CONSUME_STATS` (208) answered by every broker group of the route.
//!
//! Which brokers: with a topic, the topic's route; without one, the route of the group's retry
//! topic `%RETRY%<group>`, as Java's `DefaultMQAdminExtImpl.examineConsumeStats` does (every
//! broker a member ever pulled from has it). Each broker then reports the topics the group
//! committed offsets for there (`AdminBrokerProcessor.getConsumeStats`), the retry topic among
//! them once the group committed there: it is listed as mqadmin lists it, since messages
//! waiting for a retry are lag too.

use proto::body::{ConsumeStats, OffsetWrapper};
use proto::headers::GetConsumeStatsRequest;
use proto::{Command, MessageQueue, RequestCode, ResponseCode};
use serde_json::{Value, json};

use crate::admin::{self, AdminError, Cluster, TIMEOUT, expect_success};

/// One queue's progress, as `rmq lag` prints it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueLag {
    /// The topic (without the namespace).
    pub topic: String,
    /// The broker group.
    pub broker_name: String,
    /// The queue.
    pub queue_id: i32,
    /// The queue's max offset (the next to be written).
    pub broker_offset: i64,
    /// The group's committed offset (0 when it has none: the broker does not tell them apart).
    pub consumer_offset: i64,
    /// `broker_offset - consumer_offset`, as mqadmin computes it (not clamped).
    pub lag: i64,
    /// The store time of the last consumed message, ms since the epoch; `None` when the broker
    /// does not know it (nothing consumed, or the message is gone).
    pub last_timestamp: Option<i64>,
    /// 5.x: messages pulled but not committed yet (pull offset minus `consumer_offset`, as 5.x
    /// mqadmin's "#Inflight"); `None` from 4.9 brokers, which do not report pull offsets.
    pub inflight: Option<i64>,
}

/// The whole group's progress: every queue, in Java's `MessageQueue` order, and the totals.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupLag {
    /// The group (without the namespace).
    pub group: String,
    /// Per queue.
    pub queues: Vec<QueueLag>,
    /// The group's pull rate over the brokers, messages per second (mqadmin's "Consume TPS").
    pub consume_tps: f64,
}

impl GroupLag {
    /// The sum of the queues' lags (mqadmin's "Diff Total").
    pub fn total_lag(&self) -> i64 {
        self.queues
            .iter()
            .map(|q| q.lag)
            .fold(0, i64::saturating_add)
    }

    /// The sum of the queues' in-flight counts (5.x mqadmin's "Consume Inflight Total"), `None`
    /// when no broker reported pull offsets (4.9).
    pub fn total_inflight(&self) -> Option<i64> {
        self.queues
            .iter()
            .filter_map(|q| q.inflight)
            .reduce(i64::saturating_add)
    }

    /// The totals line `rmq lag` ends with.
    pub fn totals_json(&self) -> Value {
        json!({
            "group": self.group,
            "queues": self.queues.len(),
            "total_lag": self.total_lag(),
            "total_inflight": self.total_inflight(),
            "consume_tps": self.consume_tps,
        })
    }
}

/// Asks every broker group of the route (see the module docs) for `group`'s consume stats,
/// only of `topic` when given.
pub fn lag(cluster: &Cluster, group: &str, topic: Option<&str>) -> Result<GroupLag, AdminError> {
    let route_topic = match topic {
        Some(topic) => topic.to_owned(),
        None => format!("%RETRY%{group}"),
    };
    let route = match admin::route(cluster, &route_topic) {
        Err(AdminError::Refused {
            code: ResponseCode::TOPIC_NOT_EXIST,
            ..
        }) if topic.is_none() => {
            return Err(AdminError::NotFound(format!(
                "consumer group {group} not found: the name server has no route for its retry \
                 topic %RETRY%{group} (no member of it ever ran on this cluster)"
            )));
        }
        Err(AdminError::Refused {
            code: ResponseCode::TOPIC_NOT_EXIST,
            ..
        }) => {
            return Err(AdminError::NotFound(format!(
                "topic {route_topic} not found"
            )));
        }
        other => other?,
    };
    let wire_group = cluster.wire_name(group)?;
    let wire_topic = topic.map(|t| cluster.wire_name(t)).transpose()?;
    let mut merged = ConsumeStats::default();
    for broker in admin::brokers_of(&route, false) {
        let mut client = cluster.connect(&broker.addr)?;
        let header = GetConsumeStatsRequest {
            consumer_group: wire_group.clone(),
            topic: wire_topic.clone(),
        };
        // Java gives this request three admin timeouts (`examineConsumeStats`): a broker walks
        // every queue of every topic of the group.
        let response = expect_success(client.call(
            Command::request(RequestCode::GET_CONSUME_STATS, &header),
            TIMEOUT * 3,
        )?)
        .map_err(|e| e.at(&broker.name))?;
        let stats = ConsumeStats::decode(&response.body)
            .map_err(|e| AdminError::Body(format!("{}: {e}", broker.name)))?;
        merged.offset_table.extend(stats.offset_table);
        merged.consume_tps += stats.consume_tps;
    }
    if merged.offset_table.is_empty() {
        // Java's examineConsumeStats fails the same way (CONSUMER_NOT_ONLINE).
        return Err(AdminError::NotFound(match topic {
            Some(topic) => format!(
                "consumer group {group} has no offsets on topic {topic}: it never consumed it, \
                 or none of its live members subscribes it"
            ),
            None => format!(
                "consumer group {group} has no offsets on any broker: it never consumed anything"
            ),
        }));
    }
    Ok(GroupLag {
        group: group.to_owned(),
        queues: merged
            .offset_table
            .iter()
            .map(|(mq, offsets)| queue_lag(cluster, mq, offsets))
            .collect(),
        consume_tps: merged.consume_tps,
    })
}

fn queue_lag(cluster: &Cluster, mq: &MessageQueue, offsets: &OffsetWrapper) -> QueueLag {
    QueueLag {
        topic: cluster.app_name(mq.topic()),
        broker_name: mq.broker_name().to_owned(),
        queue_id: mq.queue_id(),
        broker_offset: offsets.broker_offset,
        consumer_offset: offsets.consumer_offset,
        lag: offsets
            .broker_offset
            .saturating_sub(offsets.consumer_offset),
        last_timestamp: (offsets.last_timestamp > 0).then_some(offsets.last_timestamp),
        inflight: offsets
            .pull_offset
            .map(|pulled| pulled.saturating_sub(offsets.consumer_offset)),
    }
}
