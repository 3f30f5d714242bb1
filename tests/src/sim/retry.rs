//! Sending, and the retry / dead-letter path: `SEND_MESSAGE` (V1 and V2 headers),
//! `SEND_BATCH_MESSAGE` and `CONSUMER_SEND_MSG_BACK` on a [`SimBroker`]
//! (`remoting-protocol.md` §3.10, §3.17, §7.2, §7.3).
//!
//! A delay level parks the message until `now + delay` (levels from
//! [`SimConfig::delay_levels`](super::SimConfig::delay_levels), 1 s ... 2 h by default, higher
//! levels clamped to the last); when due it is written into its real queue with `REAL_TOPIC`
//! and `REAL_QID` and without `DELAY`, as `ScheduleMessageService` does. Transactional
//! (prepared) messages are refused: the simulator has no half-message store. A slave checks a
//! send or send-back as its master would, then refuses to store it (4.9 has no earlier role
//! check): sends get `SERVICE_NOT_AVAILABLE` (14), send-backs `SYSTEM_ERROR`
//! `"SERVICE_NOT_AVAILABLE"`.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use bytes::Bytes;
use proto::body::PERM_WRITE;
use proto::headers::{
    ConsumerSendMsgBackRequest, SendMessageRequest, SendMessageRequestV2, SendMessageResponse,
};
use proto::message::{Properties, decode_batch, property, sys_flag};
use proto::{Command, RequestCode, ResponseCode};

use super::ConnKey;
use super::broker::{
    RETRY_QUEUE_NUMS, SimBroker, decode, error, success, validate_topic, with_header,
};
use super::env::Env;
use super::message::Draft;

/// `MixAll.RETRY_GROUP_TOPIC_PREFIX`.
pub const RETRY_PREFIX: &str = "%RETRY%";
/// `MixAll.DLQ_GROUP_TOPIC_PREFIX`.
pub const DLQ_PREFIX: &str = "%DLQ%";
/// Version `V3_4_9`, from which the broker honours `maxReconsumeTimes` in the request.
const V3_4_9: i32 = 117;
/// The broker's `maxMessageSize` (4 MiB).
const MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// The retry topic of `group`.
pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_PREFIX}{group}")
}

/// The dead-letter topic of `group`.
pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_PREFIX}{group}")
}

/// The address a client connection's messages are born at: `10.1.x.y:50000`, from the
/// connection key, so ids stay deterministic.
pub(crate) fn client_host(conn: ConnKey) -> SocketAddr {
    let [.., x, y] = conn.to_be_bytes();
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 1, x, y), 50000))
}

/// Parses a property string as Java does (last duplicate wins).
fn parse_properties(raw: Option<&str>) -> BTreeMap<String, String> {
    Properties::new(raw.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

impl SimBroker {
    /// `SEND_MESSAGE` / `SEND_MESSAGE_V2` (`SendMessageProcessor.sendMessage`).
    pub(crate) fn send(&mut self, env: &mut Env<'_>, conn: ConnKey, request: &Command) -> Command {
        let header = match self.send_header(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        if sys_flag::transaction_type(header.sys_flag) == sys_flag::TRANSACTION_PREPARED {
            return error(
                ResponseCode::NO_PERMISSION,
                "the simulated broker does not store transactional messages",
            );
        }
        let queue_id = match self.check_send(env, &header) {
            Ok(queue_id) => queue_id,
            Err(response) => return response,
        };
        if let Some(refused) = self.refuse_put() {
            return refused;
        }
        if request.body.len() > MAX_MESSAGE_SIZE {
            return error(
                ResponseCode::MESSAGE_ILLEGAL,
                format!("the message body size over max value, MAX: {MAX_MESSAGE_SIZE}"),
            );
        }
        let mut properties = parse_properties(header.properties.as_deref());
        properties.insert(
            property::CLUSTER.to_owned(),
            env.config.cluster_name.clone(),
        );
        let mut draft = Draft {
            topic: header.topic.clone(),
            queue_id,
            body: request.body.clone(),
            flag: header.flag,
            sys_flag: header.sys_flag,
            properties,
            born_timestamp: header.born_timestamp,
            born_host: client_host(conn),
            reconsume_times: header.reconsume_times.unwrap_or(0),
        };
        // `handleRetryAndDLQ`: a retry-topic send past its reconsume budget, or by a group
        // still holding queue locks (an orderly consumer), goes to the dead-letter queue.
        if let Some(group) = header.topic.strip_prefix(RETRY_PREFIX) {
            let max = match header.max_reconsume_times {
                Some(max) if request.version >= V3_4_9 => max,
                _ => env.config.retry_max_times,
            };
            let locked = !self
                .locks
                .all_expired(group, env.now, env.config.lock_lifetime);
            if draft.reconsume_times > max || locked {
                draft.topic = dlq_topic(group);
                draft.queue_id = 0;
                draft.properties.remove(property::DELAY);
                self.store.ensure_topic(&draft.topic, 1);
            }
        }
        let queue_id = draft.queue_id;
        let delay_level = draft
            .properties
            .get(property::DELAY)
            .and_then(|level| level.trim().parse::<i32>().ok())
            .filter(|level| *level > 0);
        let result = match delay_level {
            Some(level) => self.park(env, draft, level),
            None => self.store_message(env, draft),
        };
        match result {
            Ok((queue_offset, msg_id)) => {
                let mut response = with_header(
                    success(),
                    &SendMessageResponse {
                        msg_id,
                        queue_id,
                        queue_offset,
                        transaction_id: None,
                        batch_uniq_id: None,
                    },
                );
                response.ext_fields.insert("MSG_REGION", "DefaultRegion");
                response.ext_fields.insert("TRACE_ON", "true");
                response
            }
            Err(e) => error(ResponseCode::MESSAGE_ILLEGAL, e.to_string()),
        }
    }

    /// `SEND_BATCH_MESSAGE` (`SendMessageProcessor.sendBatchMessage`): every entry with its own
    /// properties, one after another in the queue; the answer carries the first offset and
    /// the comma-joined ids.
    pub(crate) fn send_batch(
        &mut self,
        env: &mut Env<'_>,
        conn: ConnKey,
        request: &Command,
    ) -> Command {
        let header = match self.send_header(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        if header.topic.starts_with(RETRY_PREFIX) {
            return error(
                ResponseCode::MESSAGE_ILLEGAL,
                "batch request does not support retry group",
            );
        }
        let queue_id = match self.check_send(env, &header) {
            Ok(queue_id) => queue_id,
            Err(response) => return response,
        };
        let entries = match decode_batch(&request.body) {
            Ok(entries) if !entries.is_empty() => entries,
            Ok(_) => return error(ResponseCode::MESSAGE_ILLEGAL, "empty batch"),
            Err(e) => return error(ResponseCode::MESSAGE_ILLEGAL, format!("bad batch: {e}")),
        };
        let mut drafts = Vec::with_capacity(entries.len());
        for entry in entries {
            let mut properties: BTreeMap<String, String> = entry
                .property_pairs()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            properties.insert(
                property::CLUSTER.to_owned(),
                env.config.cluster_name.clone(),
            );
            if entry.body.len() > MAX_MESSAGE_SIZE {
                return error(
                    ResponseCode::MESSAGE_ILLEGAL,
                    "the message body size over max value",
                );
            }
            let draft = Draft {
                topic: header.topic.clone(),
                queue_id,
                body: entry.body,
                flag: entry.flag,
                sys_flag: header.sys_flag,
                properties,
                born_timestamp: header.born_timestamp,
                born_host: client_host(conn),
                reconsume_times: 0,
            };
            // All or nothing: check every entry before storing any.
            if let Err(e) = draft.check_encodable() {
                return error(ResponseCode::MESSAGE_ILLEGAL, e.to_string());
            }
            drafts.push(draft);
        }
        if let Some(refused) = self.refuse_put() {
            return refused;
        }
        let mut first_offset = None;
        let mut ids = Vec::with_capacity(drafts.len());
        for draft in drafts {
            match self.store_message(env, draft) {
                Ok((offset, id)) => {
                    first_offset.get_or_insert(offset);
                    ids.push(id);
                }
                Err(e) => return error(ResponseCode::MESSAGE_ILLEGAL, e.to_string()),
            }
        }
        with_header(
            success(),
            &SendMessageResponse {
                msg_id: ids.join(","),
                queue_id,
                queue_offset: first_offset.unwrap_or_default(),
                transaction_id: None,
                batch_uniq_id: None,
            },
        )
    }

    /// `CONSUMER_SEND_MSG_BACK` (`AbstractSendMessageProcessor.consumerSendMsgBack`, §7.2).
    pub(crate) fn send_back(&mut self, env: &mut Env<'_>, request: &Command) -> Command {
        let header: ConsumerSendMsgBackRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        if header.group.is_empty() {
            return error(
                ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
                "subscription group not exist",
            );
        }
        let Some(original) = self.store.lookup(header.offset).cloned() else {
            return error(
                ResponseCode::SYSTEM_ERROR,
                format!("look message by offset failed, {}", header.offset),
            );
        };
        let retry = retry_topic(&header.group);
        self.store.ensure_topic(&retry, RETRY_QUEUE_NUMS);

        let mut properties = original.properties.clone();
        properties
            .entry(property::RETRY_TOPIC.to_owned())
            .or_insert_with(|| original.topic.clone());
        properties
            .entry(property::ORIGIN_MESSAGE_ID.to_owned())
            .or_insert_with(|| original.offset_msg_id.clone());
        let max = match header.max_reconsume_times {
            Some(max) if request.version >= V3_4_9 => max,
            _ => env.config.retry_max_times,
        };
        let to_dlq = original.reconsume_times >= max || header.delay_level < 0;
        let (topic, queue_id) = if to_dlq {
            let dlq = dlq_topic(&header.group);
            self.store.ensure_topic(&dlq, 1);
            (dlq, 0)
        } else {
            let queues = u64::try_from(RETRY_QUEUE_NUMS).unwrap_or(1);
            (retry, i32::try_from(env.rng.below(queues)).unwrap_or(0))
        };
        if self.refuse_put().is_some() {
            // The put's status, as `asyncConsumerSendMsgBack` answers any failed put.
            return error(ResponseCode::SYSTEM_ERROR, "SERVICE_NOT_AVAILABLE");
        }
        let draft = Draft {
            topic,
            queue_id,
            body: original.body.clone(),
            flag: original.flag,
            sys_flag: original.sys_flag,
            properties,
            born_timestamp: original.born_timestamp,
            born_host: original.born_host,
            reconsume_times: original.reconsume_times.saturating_add(1),
        };
        let result = if to_dlq {
            self.store_message(env, draft)
        } else {
            let level = if header.delay_level == 0 {
                original.reconsume_times.saturating_add(3)
            } else {
                header.delay_level
            };
            self.park(env, draft, level)
        };
        match result {
            Ok(_) => success(),
            Err(e) => error(ResponseCode::SYSTEM_ERROR, e.to_string()),
        }
    }

    /// Parks `draft` at delay `level` (clamped to the table) in `SCHEDULE_TOPIC_XXXX`.
    fn park(
        &mut self,
        env: &mut Env<'_>,
        mut draft: Draft,
        level: i32,
    ) -> Result<(i64, String), proto::message::MessageEncodeError> {
        let levels = &env.config.delay_levels;
        let Some(max_level) = i32::try_from(levels.len()).ok().filter(|n| *n > 0) else {
            // No delay table: deliver at once.
            return self.store_message(env, draft);
        };
        let level = level.clamp(1, max_level);
        let delay = usize::try_from(level - 1)
            .ok()
            .and_then(|i| levels.get(i))
            .copied()
            .unwrap_or_default();
        draft
            .properties
            .insert(property::REAL_TOPIC.to_owned(), draft.topic.clone());
        draft
            .properties
            .insert(property::REAL_QID.to_owned(), draft.queue_id.to_string());
        draft
            .properties
            .insert(property::DELAY.to_owned(), level.to_string());
        draft.check_encodable()?;
        let due = env.now.checked_add(delay).unwrap_or(env.now);
        let store_host = self.store.store_host();
        let (offset, commit_log_offset) = self.store.schedule(draft, level, due);
        Ok((
            offset,
            super::message::offset_msg_id(store_host, commit_log_offset),
        ))
    }

    /// The send header of a V1 or V2 request, as V2.
    fn send_header(&self, request: &Command) -> Result<SendMessageRequestV2, Command> {
        if request.request_code() == RequestCode::SEND_MESSAGE {
            decode::<SendMessageRequest>(request).map(Into::into)
        } else {
            decode::<SendMessageRequestV2>(request)
        }
    }

    /// `AbstractSendMessageProcessor.msgCheck`: topic name, existence (a retry topic is
    /// created on the fly), write permission and queue id. Returns the queue to write.
    fn check_send(
        &mut self,
        env: &mut Env<'_>,
        header: &SendMessageRequestV2,
    ) -> Result<i32, Command> {
        validate_topic(&header.topic)
            .map_err(|remark| error(ResponseCode::SYSTEM_ERROR, remark))?;
        if self.store.topic(&header.topic).is_none() && header.topic.starts_with(RETRY_PREFIX) {
            self.store.ensure_topic(&header.topic, RETRY_QUEUE_NUMS);
        }
        let Some(topic) = self.store.topic(&header.topic).copied() else {
            return Err(error(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist, apply first please!", header.topic),
            ));
        };
        if topic.perm & PERM_WRITE == 0 {
            return Err(error(
                ResponseCode::NO_PERMISSION,
                format!("the topic[{}] sending message is forbidden", header.topic),
            ));
        }
        let valid = topic.read_queue_nums.max(topic.write_queue_nums);
        if header.queue_id >= valid {
            return Err(error(
                ResponseCode::SYSTEM_ERROR,
                format!("request queueId[{}] is illegal", header.queue_id),
            ));
        }
        if header.queue_id < 0 {
            let n = u64::try_from(topic.write_queue_nums.max(1)).unwrap_or(1);
            return Ok(i32::try_from(env.rng.below(n)).unwrap_or(0));
        }
        Ok(header.queue_id)
    }
}

/// A message body for [`SimCluster::produce`](super::SimCluster::produce).
pub(crate) fn produced_draft(
    topic: &str,
    queue_id: i32,
    body: Bytes,
    properties: BTreeMap<String, String>,
    born_timestamp: i64,
) -> Draft {
    Draft {
        topic: topic.to_owned(),
        queue_id,
        body,
        flag: 0,
        sys_flag: 0,
        properties,
        born_timestamp,
        born_host: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 2, 0, 1), 50000)),
        reconsume_times: 0,
    }
}
