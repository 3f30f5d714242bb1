//! `rmq reset-offset`: move a group's offsets of a topic to a store time, through the brokers
//! (`INVOKE_BROKER_TO_RESET_OFFSET`, 222), so running members restart there, as
//! `mqadmin resetOffsetByTime` does.
//!
//! What each broker does with it:
//!
//! - Java 4.9 (`Broker2Client.resetOffset`) computes each queue's offset for the time (`-1`: the
//!   queue's end), pushes `RESET_CONSUMER_CLIENT_OFFSET` to every live member, and answers the
//!   offsets. With no live member it answers `CONSUMER_NOT_ONLINE`; mqadmin then writes the
//!   offsets itself (`ResetOffsetByTimeOldCommand`), and so does this command. It refuses
//!   ("consumer group not exist") while any queue of the topic has no committed offset of the
//!   group.
//! - Java 5.x with `useServerSideResetOffset` (its default) stores the offsets and answers the
//!   members' next pull of each queue with `PULL_OFFSET_MOVED` to the new offset
//!   (`AdminBrokerProcessor.resetOffsetInner`, `PullMessageProcessor`); nothing is pushed, and
//!   no member needs to be online.
//!
//! `--to first` is timestamp 0 and `--to last` is timestamp -1, as mqadmin's `-s now` is: both
//! brokers map -1 to the queue's max offset, while a search for the current time would answer,
//! on 4.9, the offset of the last message rather than the end (`SEARCH_OFFSET_BY_TIMESTAMP`,
//! README "Compatibility" 2), so the last message would be delivered again.

use proto::body::ResetOffsetBody;
use proto::headers::{
    GetMaxOffsetRequest, GetMaxOffsetResponse, QueryConsumerOffsetRequest,
    QueryConsumerOffsetResponse, ResetOffsetRequest, SearchOffsetRequest, SearchOffsetResponse,
    UpdateConsumerOffsetRequest,
};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use crate::admin::{self, AdminError, BrokerTarget, Cluster, TIMEOUT, expect_success, header_of};
use crate::blocking::BlockingClient;

/// Where to move the offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetTo {
    /// The first message stored at or after this time (ms since the epoch).
    Timestamp(i64),
    /// Each queue's first message (timestamp 0).
    First,
    /// Each queue's end: nothing stored so far is delivered again (timestamp -1).
    Last,
}

impl ResetTo {
    /// The timestamp the brokers take for it (see the module docs).
    pub fn timestamp(self) -> i64 {
        match self {
            Self::Timestamp(ms) => ms,
            Self::First => 0,
            Self::Last => -1,
        }
    }
}

/// One queue's new offset, as `rmq reset-offset` prints it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueReset {
    /// The topic (without the namespace).
    pub topic: String,
    /// The broker group.
    pub broker_name: String,
    /// The queue.
    pub queue_id: i32,
    /// The group's offset of the queue from now on (the next message to consume).
    pub offset: i64,
    /// How it got there: `broker` (the broker reset it, and tells running members) or `direct`
    /// (no member was online at that broker: this command committed it, as mqadmin does).
    pub via: &'static str,
}

/// Resets `group`'s offsets of `topic` on every broker master of the topic's route; `force`
/// false keeps an offset that the reset would move forward (Java's `isForce`).
pub fn reset_offset(
    cluster: &Cluster,
    group: &str,
    topic: &str,
    to: ResetTo,
    force: bool,
) -> Result<Vec<QueueReset>, AdminError> {
    let route = match admin::route(cluster, topic) {
        Err(AdminError::Refused {
            code: ResponseCode::TOPIC_NOT_EXIST,
            ..
        }) => return Err(AdminError::NotFound(format!("topic {topic} not found"))),
        other => other?,
    };
    let (wire_group, wire_topic) = (cluster.wire_name(group)?, cluster.wire_name(topic)?);
    let mut out = Vec::new();
    for broker in admin::brokers_of(&route, true) {
        let mut client = cluster.connect(&broker.addr)?;
        let header = ResetOffsetRequest {
            topic: wire_topic.clone(),
            group: wire_group.clone(),
            timestamp: to.timestamp(),
            is_force: force,
            queue_id: None,
            offset: None,
        };
        let response = client.call(
            Command::request(RequestCode::INVOKE_BROKER_TO_RESET_OFFSET, &header),
            TIMEOUT,
        )?;
        if response.response_code() == ResponseCode::CONSUMER_NOT_ONLINE {
            let queues: Vec<MessageQueue> = route
                .subscribe_queues(&wire_topic)
                .into_iter()
                .filter(|q| q.broker_name() == broker.name)
                .collect();
            for queue in queues {
                let offset = reset_directly(&mut client, &wire_group, &queue, to, force)
                    .map_err(|e| e.at(&broker.name))?;
                out.push(QueueReset {
                    topic: topic.to_owned(),
                    broker_name: broker.name.clone(),
                    queue_id: queue.queue_id(),
                    offset,
                    via: "direct",
                });
            }
            continue;
        }
        let response = expect_success(response).map_err(|e| explain(e, &broker, group))?;
        let body = ResetOffsetBody::decode(&response.body)
            .map_err(|e| AdminError::Body(format!("{}: {e}", broker.name)))?;
        out.extend(
            body.offset_table
                .into_iter()
                .map(|(mq, offset)| QueueReset {
                    topic: cluster.app_name(mq.topic()),
                    broker_name: mq.broker_name().to_owned(),
                    queue_id: mq.queue_id(),
                    offset,
                    via: "broker",
                }),
        );
    }
    if out.is_empty() {
        return Err(AdminError::NotFound(format!(
            "topic {topic} has no broker master to reset on"
        )));
    }
    out.sort_by(|a, b| (&a.broker_name, a.queue_id).cmp(&(&b.broker_name, b.queue_id)));
    Ok(out)
}

/// Java 4.9's refusal of a group without a committed offset on some queue says only
/// `THe consumer group <G> not exist`; say what it means.
fn explain(error: AdminError, broker: &BrokerTarget, group: &str) -> AdminError {
    match error {
        AdminError::Refused {
            code: ResponseCode::SYSTEM_ERROR,
            remark,
            ..
        } if remark.ends_with("not exist") && remark.contains("consumer group") => {
            AdminError::Refused {
                code: ResponseCode::SYSTEM_ERROR,
                remark: format!(
                    "{remark} (a 4.9 broker refuses the reset while a queue of the topic has no \
                     committed offset of group {group}: let a member consume it first; members \
                     commit every 5 s)"
                ),
                peer: Some(broker.name.clone()),
            }
        }
        other => other.at(&broker.name),
    }
}

/// What mqadmin does when no member is online (`DefaultMQAdminExtImpl.resetOffsetConsumeOffset`):
/// find the offset for the time, and commit it when `force` or when it moves the offset back.
fn reset_directly(
    client: &mut BlockingClient,
    group: &str,
    queue: &MessageQueue,
    to: ResetTo,
    force: bool,
) -> Result<i64, AdminError> {
    let (topic, queue_id) = (queue.topic().to_owned(), queue.queue_id());
    let target = if to.timestamp() < 0 {
        let max: GetMaxOffsetResponse = header_of(expect_success(client.call(
            Command::request(
                RequestCode::GET_MAX_OFFSET,
                &GetMaxOffsetRequest {
                    topic: topic.clone(),
                    queue_id,
                    committed: Some(true),
                },
            ),
            TIMEOUT,
        )?)?)?;
        max.offset
    } else {
        let found: SearchOffsetResponse = header_of(expect_success(client.call(
            Command::request(
                RequestCode::SEARCH_OFFSET_BY_TIMESTAMP,
                &SearchOffsetRequest {
                    topic: topic.clone(),
                    queue_id,
                    timestamp: to.timestamp(),
                    boundary_type: None,
                },
            ),
            TIMEOUT,
        )?)?)?;
        found.offset
    };
    if !force {
        let response = client.call(
            Command::request(
                RequestCode::QUERY_CONSUMER_OFFSET,
                &QueryConsumerOffsetRequest {
                    consumer_group: group.to_owned(),
                    topic: topic.clone(),
                    queue_id,
                    set_zero_if_not_found: Some(false),
                },
            ),
            TIMEOUT,
        )?;
        if response.response_code() != ResponseCode::QUERY_NOT_FOUND {
            let current: QueryConsumerOffsetResponse = header_of(expect_success(response)?)?;
            if target > current.offset {
                return Ok(current.offset);
            }
        }
    }
    expect_success(client.call(
        Command::request(
            RequestCode::UPDATE_CONSUMER_OFFSET,
            &UpdateConsumerOffsetRequest {
                consumer_group: group.to_owned(),
                topic,
                queue_id,
                commit_offset: target,
            },
        ),
        TIMEOUT,
    )?)?;
    Ok(target)
}
