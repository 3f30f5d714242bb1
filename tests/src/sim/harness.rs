//! [`Harness`]: a minimal test world around a [`SimCluster`] for scenario tests of the
//! simulator itself: a virtual clock, opaques, and per-connection inboxes. Plus request
//! builders for the commands a consumer sends.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::body::{
    ConsumeType, ConsumerData, HeartbeatData, LockBatchRequestBody, MessageModel, SubscriptionData,
};
use proto::headers::{
    ConsumerSendMsgBackRequest, GetConsumerListByGroupRequest, GetRouteInfoRequest,
    HeartbeatRequest, LockBatchMqRequest, PullMessageRequest, QueryConsumerOffsetRequest,
    UnlockBatchMqRequest, UnregisterClientRequest, UpdateConsumerOffsetRequest,
};
use proto::{Command, MessageQueue, RequestCode};

use super::{ConnKey, SimCluster, SimConfig};

/// A cluster, a virtual clock, and what the cluster sent to each connection.
#[derive(Debug)]
pub struct Harness {
    /// The cluster under test.
    pub cluster: SimCluster,
    /// The clock's origin.
    pub epoch: Instant,
    /// The current virtual time.
    pub now: Instant,
    next_opaque: i32,
    inbox: BTreeMap<ConnKey, VecDeque<Command>>,
    closed: Vec<ConnKey>,
}

impl Harness {
    /// A harness around a cluster built from `configure(SimConfig::new(epoch))`.
    pub fn new(configure: impl FnOnce(SimConfig) -> SimConfig) -> Self {
        let epoch = Instant::now();
        let cluster = SimCluster::new(configure(SimConfig::new(epoch)));
        Self {
            cluster,
            epoch,
            now: epoch,
            next_opaque: 1,
            inbox: BTreeMap::new(),
            closed: Vec::new(),
        }
    }

    /// Time since the epoch.
    pub fn elapsed(&self) -> Duration {
        self.now - self.epoch
    }

    /// Connects `conn` to `addr`; panics when nothing listens there.
    pub fn connect(&mut self, conn: ConnKey, addr: &str) {
        assert!(
            self.cluster.connect(conn, addr),
            "nothing listens at {addr}"
        );
    }

    /// Sends `request` on `conn` with a fresh opaque (returned), then collects the outputs.
    pub fn send(&mut self, conn: ConnKey, mut request: Command) -> i32 {
        let opaque = self.next_opaque;
        self.next_opaque += 1;
        request.opaque = opaque;
        self.cluster.handle_command(self.now, conn, request);
        self.collect();
        opaque
    }

    /// Sends `request` on `conn` and returns its response, which must come at once.
    pub fn call(&mut self, conn: ConnKey, request: Command) -> Command {
        let opaque = self.send(conn, request);
        self.take_response(conn, opaque)
            .unwrap_or_else(|| panic!("no response on connection {conn} to opaque {opaque}"))
    }

    /// The response to `opaque` on `conn`, if it arrived.
    pub fn take_response(&mut self, conn: ConnKey, opaque: i32) -> Option<Command> {
        let inbox = self.inbox.get_mut(&conn)?;
        let index = inbox
            .iter()
            .position(|c| c.is_response() && c.opaque == opaque)?;
        inbox.remove(index)
    }

    /// The requests (notifications) the cluster sent to `conn` so far, taken.
    pub fn take_requests(&mut self, conn: ConnKey) -> Vec<Command> {
        let Some(inbox) = self.inbox.get_mut(&conn) else {
            return Vec::new();
        };
        let (requests, rest): (Vec<_>, Vec<_>) = inbox.drain(..).partition(|c| !c.is_response());
        inbox.extend(rest);
        requests
    }

    /// Everything the cluster sent to `conn` so far, in order, taken.
    pub fn take_all(&mut self, conn: ConnKey) -> Vec<Command> {
        self.inbox
            .get_mut(&conn)
            .map(|inbox| inbox.drain(..).collect())
            .unwrap_or_default()
    }

    /// The connections the cluster closed so far, taken.
    pub fn take_closed(&mut self) -> Vec<ConnKey> {
        std::mem::take(&mut self.closed)
    }

    /// Moves the clock forward by `duration`, firing the cluster's timers on the way.
    pub fn advance(&mut self, duration: Duration) {
        let target = self.now + duration;
        while let Some(at) = self.cluster.poll_timeout() {
            if at > target {
                break;
            }
            self.now = self.now.max(at);
            self.cluster.handle_timeout(self.now);
            self.collect();
        }
        self.now = target;
        self.cluster.handle_timeout(self.now);
        self.collect();
    }

    /// Stores a message (see [`SimCluster::produce`]) now.
    pub fn produce(
        &mut self,
        topic: &str,
        broker: &str,
        queue_id: i32,
        body: &str,
        tags: Option<&str>,
    ) -> i64 {
        let offset = self.cluster.produce(
            self.now,
            topic,
            broker,
            queue_id,
            Bytes::copy_from_slice(body.as_bytes()),
            tags,
            None,
        );
        self.collect();
        offset
    }

    /// Drains the cluster's outputs into the inboxes.
    pub fn collect(&mut self) {
        while let Some((conn, command)) = self.cluster.poll_output() {
            self.inbox.entry(conn).or_default().push_back(command);
        }
        while let Some(conn) = self.cluster.poll_closed() {
            self.closed.push(conn);
        }
    }
}

/// `GET_ROUTEINFO_BY_TOPIC` for `topic`.
pub fn route_request(topic: &str) -> Command {
    Command::request(
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        &GetRouteInfoRequest {
            topic: topic.to_owned(),
            accept_standard_json_only: None,
        },
    )
}

/// A push consumer's `HEART_BEAT`: `client_id` in `group` (clustering), subscribed to each
/// `(topic, expression)` with `sub_version`, plus the group's retry topic with `"*"`.
pub fn heartbeat_request(
    client_id: &str,
    group: &str,
    subscriptions: &[(&str, &str)],
    sub_version: i64,
) -> Command {
    let mut subscription_data_set: Vec<SubscriptionData> = subscriptions
        .iter()
        .map(|(topic, expression)| SubscriptionData::new(topic, expression, sub_version))
        .collect();
    subscription_data_set.push(SubscriptionData::new(
        &super::retry_topic(group),
        "*",
        sub_version,
    ));
    let data = HeartbeatData {
        client_id: client_id.to_owned(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.to_owned(),
            consume_type: ConsumeType::Passively,
            message_model: MessageModel::Clustering,
            subscription_data_set,
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    Command::request(RequestCode::HEART_BEAT, &HeartbeatRequest {}).with_body(data.encode())
}

/// `UNREGISTER_CLIENT` of `client_id` from `group`.
pub fn unregister_request(client_id: &str, group: &str) -> Command {
    Command::request(
        RequestCode::UNREGISTER_CLIENT,
        &UnregisterClientRequest {
            client_id: client_id.to_owned(),
            producer_group: None,
            consumer_group: Some(group.to_owned()),
        },
    )
}

/// `GET_CONSUMER_LIST_BY_GROUP` for `group`.
pub fn consumer_list_request(group: &str) -> Command {
    Command::request(
        RequestCode::GET_CONSUMER_LIST_BY_GROUP,
        &GetConsumerListByGroupRequest {
            consumer_group: group.to_owned(),
        },
    )
}

/// A push consumer's `PULL_MESSAGE` header: 32 messages, suspend bit, 15 s hold, no commit,
/// subscription version 1. Adjust fields before [`pull_request`].
pub fn pull_header(group: &str, queue: &MessageQueue, offset: i64) -> PullMessageRequest {
    PullMessageRequest {
        consumer_group: group.to_owned(),
        topic: queue.topic().to_owned(),
        queue_id: queue.queue_id(),
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: proto::headers::pull_sys_flag::SUSPEND,
        commit_offset: 0,
        suspend_timeout_millis: 15_000,
        subscription: None,
        sub_version: 1,
        expression_type: None,
        max_msg_bytes: None,
        broker_name: None,
    }
}

/// `PULL_MESSAGE` with `header`.
pub fn pull_request(header: &PullMessageRequest) -> Command {
    Command::request(RequestCode::PULL_MESSAGE, header)
}

/// `QUERY_CONSUMER_OFFSET` of `group` for `queue`.
pub fn query_offset_request(group: &str, queue: &MessageQueue) -> Command {
    Command::request(
        RequestCode::QUERY_CONSUMER_OFFSET,
        &QueryConsumerOffsetRequest {
            consumer_group: group.to_owned(),
            topic: queue.topic().to_owned(),
            queue_id: queue.queue_id(),
            set_zero_if_not_found: None,
        },
    )
}

/// `UPDATE_CONSUMER_OFFSET` of `group` for `queue` to `offset` (not oneway).
pub fn update_offset_request(group: &str, queue: &MessageQueue, offset: i64) -> Command {
    Command::request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &UpdateConsumerOffsetRequest {
            consumer_group: group.to_owned(),
            topic: queue.topic().to_owned(),
            queue_id: queue.queue_id(),
            commit_offset: offset,
        },
    )
}

/// `LOCK_BATCH_MQ` of `queues` for `client_id` in `group`.
pub fn lock_request(group: &str, client_id: &str, queues: &[MessageQueue]) -> Command {
    Command::request(RequestCode::LOCK_BATCH_MQ, &LockBatchMqRequest {})
        .with_body(LockBatchRequestBody::new(group, client_id, queues.iter().cloned()).encode())
}

/// `UNLOCK_BATCH_MQ` of `queues` for `client_id` in `group` (not oneway).
pub fn unlock_request(group: &str, client_id: &str, queues: &[MessageQueue]) -> Command {
    Command::request(RequestCode::UNLOCK_BATCH_MQ, &UnlockBatchMqRequest {})
        .with_body(LockBatchRequestBody::new(group, client_id, queues.iter().cloned()).encode())
}

/// `CONSUMER_SEND_MSG_BACK` of the message at commit-log offset `offset` for `group`, with
/// `delay_level` and `maxReconsumeTimes`.
pub fn send_back_request(
    group: &str,
    offset: i64,
    delay_level: i32,
    max_reconsume_times: i32,
) -> Command {
    Command::request(
        RequestCode::CONSUMER_SEND_MSG_BACK,
        &ConsumerSendMsgBackRequest {
            offset,
            group: group.to_owned(),
            delay_level,
            origin_msg_id: None,
            origin_topic: None,
            unit_mode: false,
            max_reconsume_times: Some(max_reconsume_times),
        },
    )
}
