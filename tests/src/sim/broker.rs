//! [`SimBroker`]: one simulated broker node, a master (id 0) or a slave (id 1), and its
//! request dispatch.
//!
//! Each handler follows the Java broker's processor for the request (named in its doc
//! comment); pulls live in [`pull`](super::pull), sends and send-backs in
//! [`retry`](super::retry). Malformed headers and bodies never panic: they are answered
//! `SYSTEM_ERROR` with a remark saying what was wrong, as the Java broker answers the
//! exception they would cause.
//!
//! A slave runs the same handlers on its own tables (4.9's processors check the role only
//! where noted): its own members, offsets, locks and parked pulls. Where it differs:
//! pulls (see [`pull`](super::pull)), and every write of a message, which its store refuses
//! (`DefaultMessageStore.checkStoreStatus`: `SERVICE_NOT_AVAILABLE` on a `SLAVE`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use proto::body::{
    CheckClientRequestBody, ConsumerListBody, ExpressionType, HeartbeatData, LockBatchRequestBody,
    LockBatchResponseBody, ResetOffsetBody,
};
use proto::headers::{
    CreateTopicRequest, GetConsumerListByGroupRequest, GetEarliestMsgStoretimeRequest,
    GetEarliestMsgStoretimeResponse, GetMaxOffsetRequest, GetMaxOffsetResponse,
    GetMinOffsetRequest, GetMinOffsetResponse, NotifyConsumerIdsChangedRequest,
    QueryConsumerOffsetRequest, QueryConsumerOffsetResponse, ResetOffsetRequest,
    SearchOffsetRequest, SearchOffsetResponse, UnregisterClientRequest,
    UpdateConsumerOffsetRequest,
};
use proto::{Command, CommandHeader, MessageQueue, RequestCode, ResponseCode};

use super::ConnKey;
use super::env::Env;
use super::fault::BrokerFaults;
use super::group::{Change, ConsumerGroups, Member};
use super::hold::{HeldPull, HoldService};
use super::lock::LockTable;
use super::message::Draft;
use super::retry::retry_topic;
use super::store::{Store, TopicConfig};

/// The default broker port (`BrokerStartup`).
pub(crate) const BROKER_PORT: u16 = 10911;

/// A broker node's role (`brokerRole`; `ASYNC_MASTER` and `SYNC_MASTER` alike are
/// [`Role::Master`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Broker id 0 (`MixAll.MASTER_ID`): takes writes, and is what routes name first.
    Master,
    /// Broker id 1 (`brokerRole=SLAVE`): a copy of its master's messages that serves reads
    /// (`slaveReadEnable=true`) and refuses writes.
    Slave,
}

impl Role {
    /// The broker id a route lists the node under.
    pub fn broker_id(self) -> i64 {
        match self {
            Self::Master => proto::body::MASTER_ID,
            Self::Slave => 1,
        }
    }
}

/// One broker node: storage, consumer offsets, membership, locks, parked pulls, pending
/// faults.
#[derive(Debug)]
pub(crate) struct SimBroker {
    pub(crate) name: String,
    pub(crate) role: Role,
    /// Whether this broker name has a slave: its nodes then run with `slaveReadEnable=true`,
    /// which decides the pull's `suggestWhichBrokerId` (see [`pull`](super::pull)).
    pub(crate) slave_read: bool,
    pub(crate) addr: String,
    pub(crate) down: bool,
    /// Hung: its connections stay open, and it neither reads nor answers anything.
    pub(crate) silent: bool,
    pub(crate) store: Store,
    pub(crate) groups: ConsumerGroups,
    /// `(group, topic, queue id)` -> committed offset (`ConsumerOffsetManager`).
    pub(crate) offsets: BTreeMap<(String, String, i32), i64>,
    /// The offsets as last written to disk, and when: what a crash leaves (see
    /// [`SimConfig::offset_flush_interval`](super::SimConfig::offset_flush_interval)).
    flushed_offsets: BTreeMap<(String, String, i32), i64>,
    flushed_at: Option<Instant>,
    pub(crate) locks: LockTable,
    pub(crate) holds: HoldService,
    pub(crate) faults: BrokerFaults,
    /// Pop consumption (5.x): modes, pop offsets, checkpoints, parked pops.
    pub(crate) pop: super::pop::PopState,
    /// The open connections to this broker.
    pub(crate) conns: BTreeSet<ConnKey>,
    /// Opaques of broker-initiated requests (its own id space).
    next_opaque: i32,
}

impl SimBroker {
    /// A node of broker `name` in `role` at `addr`, storing with `store_host`.
    pub(crate) fn new(
        name: &str,
        role: Role,
        slave_read: bool,
        addr: String,
        store_host: SocketAddr,
    ) -> Self {
        Self {
            name: name.to_owned(),
            role,
            slave_read,
            addr,
            down: false,
            silent: false,
            store: Store::new(store_host),
            groups: ConsumerGroups::default(),
            offsets: BTreeMap::new(),
            flushed_offsets: BTreeMap::new(),
            flushed_at: None,
            locks: LockTable::default(),
            holds: HoldService::default(),
            faults: BrokerFaults::default(),
            pop: super::pop::PopState::default(),
            conns: BTreeSet::new(),
            next_opaque: 0,
        }
    }

    /// Handles one request from `conn`, answering on the outbox (or parking a pull).
    pub(crate) fn handle(&mut self, env: &mut Env<'_>, conn: ConnKey, request: Command) {
        // Flow control happens before any processing (`NettyRemotingAbstract`: a rejected
        // request is answered SYSTEM_BUSY "[REJECTREQUEST]...").
        if self.faults.busy > 0 {
            self.faults.busy -= 1;
            let busy = Command::response(ResponseCode::SYSTEM_BUSY, request.opaque)
                .with_remark("[REJECTREQUEST]system busy, start flow control for a while");
            env.out.respond(conn, &request, busy);
            return;
        }
        if let Some(code) = self.faults.take_respond_with(request.request_code()) {
            let canned = Command::response(code, request.opaque).with_remark("injected fault");
            env.out.respond(conn, &request, canned);
            return;
        }
        let response = match request.request_code() {
            RequestCode::PULL_MESSAGE | RequestCode::LITE_PULL_MESSAGE => {
                match self.pull(env, conn, &request, true) {
                    Some(response) => response,
                    None => return,
                }
            }
            RequestCode::POP_MESSAGE => match self.pop_message(env, conn, &request) {
                Some(response) => response,
                None => return,
            },
            RequestCode::ACK_MESSAGE => self.ack_message(&request),
            RequestCode::BATCH_ACK_MESSAGE => self.batch_ack_message(&request),
            RequestCode::CHANGE_MESSAGE_INVISIBLETIME => self.change_invisible_time(env, &request),
            RequestCode::SET_MESSAGE_REQUEST_MODE => self.set_request_mode(&request),
            RequestCode::QUERY_ASSIGNMENT => {
                let brokers = env.config.brokers.clone();
                self.query_assignment(&request, &brokers)
            }
            RequestCode::HEART_BEAT => self.heartbeat(env, conn, &request),
            RequestCode::UNREGISTER_CLIENT => self.unregister(env, conn, &request),
            RequestCode::GET_CONSUMER_LIST_BY_GROUP => self.consumer_list(env, &request),
            RequestCode::QUERY_CONSUMER_OFFSET => self.query_offset(env, &request),
            RequestCode::UPDATE_CONSUMER_OFFSET => self.update_offset(env, &request),
            RequestCode::GET_MAX_OFFSET => self.max_offset(&request),
            RequestCode::GET_MIN_OFFSET => self.min_offset(&request),
            RequestCode::SEARCH_OFFSET_BY_TIMESTAMP => self.search_offset(&request),
            RequestCode::GET_EARLIEST_MSG_STORETIME => self.earliest_store_time(&request),
            RequestCode::LOCK_BATCH_MQ => self.lock(env, &request),
            RequestCode::UNLOCK_BATCH_MQ => self.unlock(&request),
            RequestCode::CONSUMER_SEND_MSG_BACK => self.send_back(env, &request),
            RequestCode::SEND_MESSAGE | RequestCode::SEND_MESSAGE_V2 => {
                self.send(env, conn, &request)
            }
            RequestCode::SEND_BATCH_MESSAGE => self.send_batch(env, conn, &request),
            RequestCode::UPDATE_AND_CREATE_TOPIC => self.create_topic(&request),
            RequestCode::CHECK_CLIENT_CONFIG => check_client_config(&request),
            other => not_supported(other),
        };
        env.out.respond(conn, &request, response);
    }

    /// `conn` closed (either side): its members leave every group, which the remaining members
    /// hear about; its parked pulls are dropped. Locks stay until they expire.
    pub(crate) fn connection_closed(&mut self, env: &mut Env<'_>, conn: ConnKey) {
        self.conns.remove(&conn);
        self.holds.drop_conn(conn);
        for change in self.groups.close(conn) {
            if env.config.notify_departures {
                self.notify(env, &change);
            }
        }
    }

    /// Stores `group`'s committed `offset` of `topic`'s queue `queue_id`, and writes the table
    /// "to disk" when the last write is `offset_flush_interval` old (Apache's brokers write it
    /// on a timer; writing it at the first commit after the period is the same for what a
    /// crash loses: the commits since the last write).
    pub(crate) fn commit(&mut self, env: &Env<'_>, key: (String, String, i32), offset: i64) {
        self.offsets.insert(key, offset);
        let due = match (env.config.offset_flush_interval, self.flushed_at) {
            (None, _) | (Some(_), None) => true,
            (Some(every), Some(at)) => env.now >= at + every,
        };
        if due {
            self.flushed_offsets.clone_from(&self.offsets);
            self.flushed_at = Some(env.now);
        }
    }

    /// `SlaveSynchronize.syncConsumerOffset`, on a slave: the master's in-memory table replaces
    /// this slave's for every `topic@group` the master has (Java's `putAll` over the
    /// `topic@group` keys, each holding its queues' offsets: a queue committed only here goes
    /// with its key's old table), and the result is written to disk. A `topic@group` only this
    /// slave knows is kept.
    pub(crate) fn sync_offsets(&mut self, master: &BTreeMap<(String, String, i32), i64>) {
        let synced: BTreeSet<(&str, &str)> = master
            .keys()
            .map(|(group, topic, _)| (group.as_str(), topic.as_str()))
            .collect();
        self.offsets
            .retain(|(group, topic, _), _| !synced.contains(&(group.as_str(), topic.as_str())));
        self.offsets
            .extend(master.iter().map(|(key, offset)| (key.clone(), *offset)));
        self.flushed_offsets.clone_from(&self.offsets);
    }

    /// What a slave's store answers any write (`DefaultMessageStore.checkStoreStatus`:
    /// `SERVICE_NOT_AVAILABLE` on a `SLAVE`), as `SendMessageProcessor` turns it into a
    /// response: `None` on a master.
    pub(crate) fn refuse_put(&self) -> Option<Command> {
        (self.role == Role::Slave).then(|| {
            error(
                ResponseCode::SERVICE_NOT_AVAILABLE,
                "service not available now. It may be caused by one of the following reasons: \
                 the broker's disk is full, messages are put to the slave, message store has \
                 been shut down, etc.",
            )
        })
    }

    /// The broker process dies: every connection is gone (returned, for the cluster to close)
    /// and everything kept in memory only is lost: members, parked pulls, locks, and the
    /// committed offsets not yet written to disk. Messages, topics, the offsets written and
    /// delayed messages are persisted and stay.
    pub(crate) fn crash(&mut self) -> BTreeSet<ConnKey> {
        self.offsets.clone_from(&self.flushed_offsets);
        self.groups.clear();
        self.holds.clear();
        self.locks.clear();
        std::mem::take(&mut self.conns)
    }

    /// The broker's next timer: a delayed message due, the long-poll check, a member's
    /// registration expiring.
    pub(crate) fn next_timer(&self, channel_expired_timeout: Option<Duration>) -> Option<Instant> {
        if self.down {
            return None;
        }
        [
            self.store.next_due(),
            self.holds.next_check(),
            channel_expired_timeout.and_then(|t| self.groups.next_expiry(t)),
            self.pop_next_timer(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Fires every timer due at `env.now`; returns the connections to close because their
    /// members stopped heartbeating.
    pub(crate) fn fire(&mut self, env: &mut Env<'_>) -> BTreeSet<ConnKey> {
        while let Some(mut draft) = self.store.pop_due(env.now) {
            // `ScheduleMessageService.messageTimeup`: back to the real topic, without DELAY.
            draft.properties.remove(proto::message::property::DELAY);
            if let Err(e) = self.store_message(env, draft) {
                // Drafts were encodable when parked (same topic and properties but DELAY),
                // so this cannot happen; losing the message would hide a simulator bug.
                panic!("delayed message no longer encodes: {e}");
            }
        }
        let period = env.config.long_poll_check.max(Duration::from_millis(1));
        let store = &self.store;
        let woken = self.holds.take_checked(env.now, period, |topic, queue_id| {
            store.bounds(topic, queue_id).1
        });
        self.wake(env, woken);
        self.pop_fire(env);
        match env.config.channel_expired_timeout {
            Some(timeout) => self.groups.expired(env.now, timeout),
            None => BTreeSet::new(),
        }
    }

    /// Stores `draft` now and wakes the parked pulls it satisfies. Returns the stored
    /// message's queue offset and offset message id.
    pub(crate) fn store_message(
        &mut self,
        env: &mut Env<'_>,
        draft: Draft,
    ) -> Result<(i64, String), proto::message::MessageEncodeError> {
        let now_millis = env.millis();
        let stored = self.store.append(draft, env.now, now_millis)?;
        let (topic, queue_id, offset, tags_code) = (
            stored.topic.clone(),
            stored.queue_id,
            stored.queue_offset,
            stored.tags_code,
        );
        let msg_id = stored.offset_msg_id.clone();
        let woken = self
            .holds
            .take_arrived(&topic, queue_id, offset + 1, tags_code);
        self.wake(env, woken);
        self.pop_wake(env, &topic);
        Ok((offset, msg_id))
    }

    /// Re-runs woken pulls once, suspension no longer allowed
    /// (`PullMessageProcessor.executeRequestWhenWakeup`), answering with the original opaque.
    fn wake(&mut self, env: &mut Env<'_>, woken: Vec<HeldPull>) {
        for pull in woken {
            if !self.conns.contains(&pull.conn) {
                continue;
            }
            if let Some(response) = self.pull(env, pull.conn, &pull.request, false) {
                env.out.respond(pull.conn, &pull.request, response);
            }
        }
    }

    /// Client-side offset reset (`Broker2Client.resetOffset`): stores the offsets, then tells
    /// each member of `group` on this broker with a oneway `RESET_CONSUMER_CLIENT_OFFSET`.
    pub(crate) fn reset_offsets(
        &mut self,
        env: &mut Env<'_>,
        group: &str,
        topic: &str,
        table: BTreeMap<MessageQueue, i64>,
    ) {
        for (mq, offset) in &table {
            let key = (group.to_owned(), topic.to_owned(), mq.queue_id());
            self.commit(env, key, *offset);
        }
        let header = ResetOffsetRequest {
            topic: topic.to_owned(),
            group: group.to_owned(),
            timestamp: env.millis(),
            is_force: true,
            queue_id: None,
            offset: None,
        };
        let body = ResetOffsetBody {
            offset_table: table,
        }
        .encode();
        let conns = self
            .groups
            .get(group)
            .map(|g| g.conns())
            .unwrap_or_default();
        for conn in conns {
            let mut request = Command::request(RequestCode::RESET_CONSUMER_CLIENT_OFFSET, &header)
                .with_body(body.clone())
                .oneway();
            request.opaque = self.next_opaque;
            self.next_opaque = self.next_opaque.wrapping_add(1);
            env.out.send(conn, request);
        }
    }

    /// Sends `NOTIFY_CONSUMER_IDS_CHANGED` (oneway) to each connection of `change`
    /// (`Broker2Client.notifyConsumerIdsChanged`).
    pub(crate) fn notify(&mut self, env: &mut Env<'_>, change: &Change) {
        for &conn in &change.notify {
            let header = NotifyConsumerIdsChangedRequest {
                consumer_group: change.group.clone(),
            };
            let mut request =
                Command::request(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED, &header).oneway();
            request.opaque = self.next_opaque;
            self.next_opaque = self.next_opaque.wrapping_add(1);
            env.out.send(conn, request);
        }
    }

    /// `HEART_BEAT` (`ClientManageProcessor.heartBeat`): for each consumer group, create the
    /// retry topic (1 queue), register the member on this connection, and announce a new
    /// member or changed topics to the group (before the heartbeat's own response, as Java
    /// notifies synchronously while registering). Producer groups are accepted and ignored.
    fn heartbeat(&mut self, env: &mut Env<'_>, conn: ConnKey, request: &Command) -> Command {
        let data = match HeartbeatData::decode(&request.body) {
            Ok(data) => data,
            Err(e) => return error(ResponseCode::SYSTEM_ERROR, format!("bad heartbeat: {e}")),
        };
        for consumer in &data.consumer_data_set {
            if consumer.group_name.is_empty() {
                continue;
            }
            self.store
                .ensure_topic(&retry_topic(&consumer.group_name), RETRY_QUEUE_NUMS);
            let member = Member {
                client_id: data.client_id.clone(),
                language: request.language,
                version: request.version,
                last_update: env.now,
            };
            if let Some(change) = self.groups.register(conn, member, consumer) {
                self.notify(env, &change);
            }
        }
        success()
    }

    /// `UNREGISTER_CLIENT` (`ClientManageProcessor.unregisterClient`): the member on this
    /// connection leaves the consumer group, if one is named.
    fn unregister(&mut self, env: &mut Env<'_>, conn: ConnKey, request: &Command) -> Command {
        let header: UnregisterClientRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        if let Some(change) = header
            .consumer_group
            .as_deref()
            .and_then(|group| self.groups.unregister(group, conn))
            && env.config.notify_departures
        {
            self.notify(env, &change);
        }
        success()
    }

    /// `GET_CONSUMER_LIST_BY_GROUP` (`ConsumerManageProcessor.getConsumerListByGroup`). The ids
    /// come in a seeded random order, as Java's hash map order is arbitrary: clients must sort.
    fn consumer_list(&mut self, env: &mut Env<'_>, request: &Command) -> Command {
        let header: GetConsumerListByGroupRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let mut ids = self.groups.client_ids(&header.consumer_group);
        if ids.is_empty() {
            return error(
                ResponseCode::SYSTEM_ERROR,
                format!("no consumer for this group, {}", header.consumer_group),
            );
        }
        env.rng.shuffle(&mut ids);
        success().with_body(
            ConsumerListBody {
                consumer_id_list: ids,
            }
            .encode(),
        )
    }

    /// `QUERY_CONSUMER_OFFSET` (`ConsumerManageProcessor.queryConsumerOffset`). Without a
    /// committed offset: `QUERY_NOT_FOUND`, unless `young_queue_offset_zero` mimics the
    /// broker's "queue still starts at 0 in memory => offset 0" (and the request does not say
    /// `setZeroIfNotFound=false`).
    fn query_offset(&self, env: &Env<'_>, request: &Command) -> Command {
        let header: QueryConsumerOffsetRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let key = (
            header.consumer_group.clone(),
            header.topic.clone(),
            header.queue_id,
        );
        let offset = match self.offsets.get(&key) {
            Some(&offset) if offset >= 0 => Some(offset),
            _ if env.config.young_queue_offset_zero
                && header.set_zero_if_not_found != Some(false)
                && self.store.bounds(&header.topic, header.queue_id).0 <= 0 =>
            {
                Some(0)
            }
            _ => None,
        };
        match offset {
            Some(offset) => with_header(success(), &QueryConsumerOffsetResponse { offset }),
            None => error(
                ResponseCode::QUERY_NOT_FOUND,
                "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
            ),
        }
    }

    /// `UPDATE_CONSUMER_OFFSET` (`ConsumerManageProcessor.updateConsumerOffset`): stores the
    /// offset as given (4.9 checks nothing).
    fn update_offset(&mut self, env: &Env<'_>, request: &Command) -> Command {
        let header: UpdateConsumerOffsetRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        self.commit(
            env,
            (header.consumer_group, header.topic, header.queue_id),
            header.commit_offset,
        );
        success()
    }

    /// `GET_MAX_OFFSET`: the next offset to be written (0 for an unknown queue).
    fn max_offset(&self, request: &Command) -> Command {
        let header: GetMaxOffsetRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let offset = self.store.bounds(&header.topic, header.queue_id).1;
        with_header(success(), &GetMaxOffsetResponse { offset })
    }

    /// `GET_MIN_OFFSET`: the smallest live offset (0 for an unknown queue).
    fn min_offset(&self, request: &Command) -> Command {
        let header: GetMinOffsetRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let offset = self.store.bounds(&header.topic, header.queue_id).0;
        with_header(success(), &GetMinOffsetResponse { offset })
    }

    /// `SEARCH_OFFSET_BY_TIMESTAMP`: see [`Store::search`].
    fn search_offset(&self, request: &Command) -> Command {
        let header: SearchOffsetRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let upper = header.boundary_type == Some(proto::headers::BoundaryType::Upper);
        let offset = self
            .store
            .search(&header.topic, header.queue_id, header.timestamp, upper);
        with_header(success(), &SearchOffsetResponse { offset })
    }

    /// `GET_EARLIEST_MSG_STORETIME`: the store time of the oldest live message, -1 if none.
    fn earliest_store_time(&self, request: &Command) -> Command {
        let header: GetEarliestMsgStoretimeRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let timestamp = self
            .store
            .queue(&header.topic, header.queue_id)
            .and_then(|q| q.get(q.min_offset()))
            .map_or(-1, |m| m.store_timestamp);
        with_header(success(), &GetEarliestMsgStoretimeResponse { timestamp })
    }

    /// `LOCK_BATCH_MQ` (`AdminBrokerProcessor.lockBatchMQ`): answers the queues now held.
    fn lock(&mut self, env: &Env<'_>, request: &Command) -> Command {
        let body = match LockBatchRequestBody::decode(&request.body) {
            Ok(body) => body,
            Err(e) => return error(ResponseCode::SYSTEM_ERROR, format!("bad lock body: {e}")),
        };
        let granted = self.locks.try_lock_batch(
            &body.consumer_group,
            &body.client_id,
            &body.mq_set,
            env.now,
            env.config.lock_lifetime,
        );
        success().with_body(
            LockBatchResponseBody {
                lock_ok_mq_set: granted,
            }
            .encode(),
        )
    }

    /// `UNLOCK_BATCH_MQ` (`AdminBrokerProcessor.unlockBatchMQ`).
    fn unlock(&mut self, request: &Command) -> Command {
        let body = match LockBatchRequestBody::decode(&request.body) {
            Ok(body) => body,
            Err(e) => return error(ResponseCode::SYSTEM_ERROR, format!("bad unlock body: {e}")),
        };
        self.locks
            .unlock_batch(&body.consumer_group, &body.client_id, &body.mq_set);
        success()
    }

    /// `UPDATE_AND_CREATE_TOPIC` (`AdminBrokerProcessor.updateAndCreateTopic`).
    fn create_topic(&mut self, request: &Command) -> Command {
        let header: CreateTopicRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        if let Err(remark) = validate_topic(&header.topic) {
            return error(ResponseCode::SYSTEM_ERROR, remark);
        }
        if header.read_queue_nums < 0 || header.write_queue_nums < 0 {
            return error(
                ResponseCode::INVALID_PARAMETER,
                "queue numbers must not be negative",
            );
        }
        self.store.put_topic(
            &header.topic,
            TopicConfig {
                read_queue_nums: header.read_queue_nums,
                write_queue_nums: header.write_queue_nums,
                perm: header.perm,
            },
        );
        success()
    }
}

/// `retryQueueNums` of an auto-created subscription group.
pub(crate) const RETRY_QUEUE_NUMS: i32 = 1;

/// `CHECK_CLIENT_CONFIG` (`ClientManageProcessor.checkClientConfig`): TAG subscriptions pass;
/// anything else needs `enablePropertyFilter`, which the simulated brokers do not have.
fn check_client_config(request: &Command) -> Command {
    let body = match CheckClientRequestBody::decode(&request.body) {
        Ok(body) => body,
        Err(e) => return error(ResponseCode::SYSTEM_ERROR, format!("bad check body: {e}")),
    };
    match body.subscription_data.expression_type {
        ExpressionType::Tag => success(),
        other => error(
            ResponseCode::SYSTEM_ERROR,
            format!(
                "The broker does not support consumer to filter message by {}",
                other.name()
            ),
        ),
    }
}

/// `TopicValidator.validateTopic` (4.9): not blank, only `%|a-zA-Z0-9_-`, at most 127 chars.
pub(crate) fn validate_topic(topic: &str) -> Result<(), String> {
    if topic.trim().is_empty() {
        return Err("The specified topic is blank.".to_owned());
    }
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-');
    if !topic.chars().all(legal) {
        return Err(format!(
            "The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if topic.len() > 127 {
        return Err("The specified topic is longer than topic max length.".to_owned());
    }
    Ok(())
}

/// The answer to a request code the broker does not serve (`NettyRemotingAbstract`).
pub(crate) fn not_supported(code: RequestCode) -> Command {
    error(
        ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
        format!(" request type {} not supported", code.0),
    )
}

/// An empty `SUCCESS` (the opaque is filled in when it is sent).
pub(crate) fn success() -> Command {
    Command::response(ResponseCode::SUCCESS, 0)
}

/// An error response with a remark.
pub(crate) fn error(code: ResponseCode, remark: impl Into<String>) -> Command {
    Command::response(code, 0).with_remark(remark)
}

/// `response` with `header` in its extFields.
pub(crate) fn with_header(mut response: Command, header: &impl CommandHeader) -> Command {
    header.encode_into(&mut response.ext_fields);
    response
}

/// The request's typed header, or the `SYSTEM_ERROR` a Java broker would answer (its
/// decoder leaves the field null, and the handler then fails on it).
pub(crate) fn decode<H: CommandHeader>(request: &Command) -> Result<H, Command> {
    request.header::<H>().map_err(|e| {
        error(
            ResponseCode::SYSTEM_ERROR,
            format!("bad {} header: {e}", request.request_code()),
        )
    })
}
