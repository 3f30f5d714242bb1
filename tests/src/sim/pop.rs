//! Pop on the simulated broker (RocketMQ 5.x): `SET_MESSAGE_REQUEST_MODE`, `QUERY_ASSIGNMENT`,
//! `POP_MESSAGE` with invisibility and long polling, `ACK_MESSAGE`, `BATCH_ACK_MESSAGE`,
//! `CHANGE_MESSAGE_INVISIBLETIME`, and revive after expiry.
//!
//! Each follows the Java broker's processor of the same name (`PopMessageProcessor`,
//! `AckMessageProcessor`, `ChangeInvisibleTimeProcessor`, `QueryAssignmentProcessor`,
//! `PopReviveService`). Where the simulator decides:
//!
//! - A popped message is invisible until `popTime + invisibleTime`; at that instant exactly (no
//!   revive scan period) it is stored again in the V1 pop retry topic `%RETRY%<group>_<topic>`
//!   (one queue) with its reconsume count raised, and popped from there like any message.
//! - An ack or invisibility change must carry the handle of the message's live checkpoint (its
//!   offset and pop time); a spent or expired handle is answered `NO_MESSAGE` (Java appends the
//!   ack anyway and answers `SUCCESS`; refusing makes a lost or late settle visible).
//! - Queue id `-1` pops the group's pop retry queue first, then the topic's queues in turn.
//! - A redelivery from the pop retry topic is answered re-encoded under the subscribed topic
//!   with its receipt handle in `POP_CK`, and left out of the offset info, as 5.x brokers do
//!   by default (`popResponseReturnActualRetryTopic=false`, `PopMessageProcessor`).
//! - In POP mode with `popShareQueueNum` 0 the assignment is `queueId -1` of every broker of the
//!   cluster for every member (`allocate4Pop`); in PULL mode the queues are split averagely.
//! - A pop that finds nothing with `pollTime > 0` is parked until a message arrives in its
//!   topic or its poll time passes (then `POLLING_TIMEOUT`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use proto::body::{
    BatchAckMessageRequestBody, MessageQueueAssignment, MessageRequestMode,
    QueryAssignmentRequestBody, QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
    SubscriptionData,
};
use proto::headers::receipt::RetryMark;
use proto::headers::{
    AckMessageRequest, ChangeInvisibleTimeRequest, ChangeInvisibleTimeResponse, PopMessageRequest,
    PopMessageResponse, ReceiptHandle,
};
use proto::{Command, MessageQueue, ResponseCode};

use super::ConnKey;
use super::broker::{SimBroker, decode, error, success, with_header};
use super::env::Env;
use super::message::{Draft, Placement, StoredMessageInfo};
use super::pull::TagFilter;
use super::retry::RETRY_PREFIX;

/// The pop retry topic of `group` for `topic` (`KeyBuilder.buildPopRetryTopicV1`).
pub fn pop_retry_topic(group: &str, topic: &str) -> String {
    format!("{RETRY_PREFIX}{group}_{topic}")
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// `message` as a 5.x broker answers a redelivery: under `topic`, with `POP_CK` set.
fn reencode(message: &StoredMessageInfo, topic: &str, handle: &ReceiptHandle) -> Bytes {
    let mut properties = message.properties.clone();
    properties
        .entry(proto::message::property::POP_CK.to_owned())
        .or_insert_with(|| handle.to_string());
    let draft = Draft {
        topic: topic.to_owned(),
        queue_id: message.queue_id,
        body: message.body.clone(),
        flag: message.flag,
        sys_flag: message.sys_flag,
        properties,
        born_timestamp: message.born_timestamp,
        born_host: message.born_host,
        reconsume_times: message.reconsume_times,
    };
    let placement = Placement {
        queue_offset: message.queue_offset,
        commit_log_offset: message.commit_log_offset,
        store_timestamp: message.store_timestamp,
        stored_at: message.stored_at,
        store_host: message.store_host,
    };
    match draft.store(&placement) {
        Ok(stored) => stored.record().clone(),
        // The subscribed topic is shorter than the retry topic it came from, so the record
        // only shrinks; failing here would be a simulator bug.
        Err(e) => panic!("a redelivery no longer encodes: {e}"),
    }
}

/// One popped message's live checkpoint.
#[derive(Clone, Debug)]
struct Checkpoint {
    pop_time: i64,
    /// When it revives (`popTime + invisibleTime` on the virtual clock).
    visible_at: Instant,
}

/// A pop parked until something arrives or its poll time ends.
#[derive(Clone, Debug)]
struct ParkedPop {
    conn: ConnKey,
    request: Command,
    deadline: Instant,
}

/// The broker's pop state: modes, pop offsets, live checkpoints, parked pops.
#[derive(Debug, Default)]
pub(crate) struct PopState {
    /// `(topic, group)` → mode and share number.
    modes: BTreeMap<(String, String), (MessageRequestMode, i32)>,
    /// `(group, topic, queue)` → the next offset to pop.
    offsets: BTreeMap<(String, String, i32), i64>,
    /// `(group, real topic, queue, offset)` → checkpoint.
    invisible: BTreeMap<(String, String, i32, i64), Checkpoint>,
    parked: Vec<ParkedPop>,
    /// Round robin over a topic's queues for queue id -1.
    turn: usize,
    /// Messages revived so far.
    pub(crate) revived: u64,
}

impl PopState {
    /// The earliest revive or parked-pop deadline.
    fn next_due(&self) -> Option<Instant> {
        let revive = self.invisible.values().map(|c| c.visible_at).min();
        let parked = self.parked.iter().map(|p| p.deadline).min();
        [revive, parked].into_iter().flatten().min()
    }

    /// How many messages of `group` are invisible now.
    pub(crate) fn invisible_count(&self, group: &str) -> usize {
        self.invisible.keys().filter(|k| k.0 == group).count()
    }
}

impl SimBroker {
    /// The pop service's next timer, for [`SimBroker::next_timer`].
    pub(crate) fn pop_next_timer(&self) -> Option<Instant> {
        self.pop.next_due()
    }

    /// Revives expired checkpoints and answers parked pops whose time is up.
    pub(crate) fn pop_fire(&mut self, env: &mut Env<'_>) {
        let expired: Vec<(String, String, i32, i64)> = self
            .pop
            .invisible
            .iter()
            .filter(|(_, c)| c.visible_at <= env.now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            self.pop.invisible.remove(&key);
            self.revive(env, &key);
        }
        let (due, waiting): (Vec<ParkedPop>, Vec<ParkedPop>) = std::mem::take(&mut self.pop.parked)
            .into_iter()
            .partition(|p| p.deadline <= env.now);
        self.pop.parked = waiting;
        for parked in due {
            if self.conns.contains(&parked.conn) {
                let response = self
                    .pop_once(env, parked.conn, &parked.request, false)
                    .unwrap_or_else(|| error(ResponseCode::POLLING_TIMEOUT, "polling timeout"));
                env.out.respond(parked.conn, &parked.request, response);
            }
        }
    }

    /// A message arrived in `topic`: parked pops of it run again.
    pub(crate) fn pop_wake(&mut self, env: &mut Env<'_>, topic: &str) {
        let (woken, waiting): (Vec<ParkedPop>, Vec<ParkedPop>) =
            std::mem::take(&mut self.pop.parked)
                .into_iter()
                .partition(|p| {
                    p.request.header::<PopMessageRequest>().is_ok_and(|h| {
                        h.topic == topic || topic.ends_with(&format!("_{}", h.topic))
                    })
                });
        self.pop.parked = waiting;
        for parked in woken {
            if !self.conns.contains(&parked.conn) {
                continue;
            }
            match self.pop_once(env, parked.conn, &parked.request, false) {
                Some(response) => env.out.respond(parked.conn, &parked.request, response),
                None => self.pop.parked.push(parked),
            }
        }
    }

    /// `POP_MESSAGE`.
    pub(crate) fn pop_message(
        &mut self,
        env: &mut Env<'_>,
        conn: ConnKey,
        request: &Command,
    ) -> Option<Command> {
        self.pop_once(env, conn, request, true)
    }

    /// One pop attempt; `None` when it was (or stays) parked.
    fn pop_once(
        &mut self,
        env: &mut Env<'_>,
        conn: ConnKey,
        request: &Command,
        may_park: bool,
    ) -> Option<Command> {
        let header: PopMessageRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return Some(response),
        };
        if header.max_msg_nums > 32 {
            return Some(error(
                ResponseCode::INVALID_PARAMETER,
                "the broker pop message's num is greater than 32",
            ));
        }
        let Some(config) = self.store.topic(&header.topic).cloned() else {
            return Some(error(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist", header.topic),
            ));
        };
        if header.queue_id >= config.read_queue_nums {
            return Some(error(ResponseCode::INVALID_PARAMETER, "queueId is illegal"));
        }
        let group = header.consumer_group.clone();
        let retry = pop_retry_topic(&group, &header.topic);
        let filter = TagFilter::of(&SubscriptionData::new(
            &header.topic,
            header.exp.as_deref().unwrap_or("*"),
            0,
        ));
        // Where to look: the given queue, or the retry queue then every queue in turn.
        let mut sources: Vec<(String, i32)> = Vec::new();
        if header.queue_id < 0 {
            sources.push((retry.clone(), 0));
            let n = usize::try_from(config.read_queue_nums).unwrap_or(0);
            for i in 0..n {
                let q = (self.pop.turn + i) % n.max(1);
                sources.push((header.topic.clone(), i32::try_from(q).unwrap_or(0)));
            }
            self.pop.turn = self.pop.turn.wrapping_add(1);
        } else {
            sources.push((header.topic.clone(), header.queue_id));
        }
        let now_ms = env.millis();
        let invisible = header.invisible_time.max(0);
        let max = usize::try_from(header.max_msg_nums.max(1)).unwrap_or(1);
        let mut body = BytesMut::new();
        let mut taken = 0usize;
        let mut start_info: Vec<String> = Vec::new();
        let mut offset_info: Vec<String> = Vec::new();
        let mut rest = 0i64;
        for (topic, queue_id) in sources {
            let (min, end) = self.store.bounds(&topic, queue_id);
            let key = (group.clone(), topic.clone(), queue_id);
            let mut next = self.pop.offsets.get(&key).copied().unwrap_or(min).max(min);
            let mut offsets = Vec::new();
            let start = next;
            while next < end && taken < max {
                let Some(message) = self
                    .store
                    .queue(&topic, queue_id)
                    .and_then(|q| q.get(next))
                    .cloned()
                else {
                    next += 1;
                    continue;
                };
                let offset = next;
                next += 1;
                // The retry queue holds every topic's retries of the group: all match.
                if topic == header.topic && !filter.matches(message.tags_code) {
                    continue;
                }
                if topic == header.topic {
                    body.extend_from_slice(message.record());
                    offsets.push(offset);
                } else {
                    let mark = RetryMark::of_topic(&topic);
                    let handle = ReceiptHandle {
                        ck_queue_offset: offset,
                        pop_time: now_ms,
                        invisible_time: invisible,
                        revive_qid: 0,
                        retry: mark,
                        broker_name: self.name.clone(),
                        queue_id,
                        queue_offset: offset,
                    };
                    body.extend_from_slice(&reencode(&message, &header.topic, &handle));
                }
                taken += 1;
                self.pop.invisible.insert(
                    (group.clone(), topic.clone(), queue_id, offset),
                    Checkpoint {
                        pop_time: now_ms,
                        visible_at: env.now + millis(invisible),
                    },
                );
            }
            self.pop.offsets.insert(key, next);
            rest += end - next;
            if !offsets.is_empty() {
                let mark = RetryMark::of_topic(&topic).as_str();
                start_info.push(format!("{mark} {queue_id} {start}"));
                let list: Vec<String> = offsets.iter().map(ToString::to_string).collect();
                offset_info.push(format!("{mark} {queue_id} {}", list.join(",")));
            }
        }
        if taken == 0 {
            if may_park && header.poll_time > 0 {
                self.pop.parked.push(ParkedPop {
                    conn,
                    request: request.clone(),
                    deadline: env.now + millis(header.poll_time),
                });
                return None;
            }
            if !may_park && header.poll_time > 0 {
                // A woken pop that still finds nothing waits on.
                return None;
            }
            return Some(error(ResponseCode::PULL_NOT_FOUND, "no new message"));
        }
        let response_header = PopMessageResponse {
            pop_time: now_ms,
            invisible_time: invisible,
            revive_qid: 0,
            rest_num: rest,
            start_offset_info: Some(start_info.join(";")),
            msg_offset_info: Some(offset_info.join(";")),
            order_count_info: None,
        };
        Some(with_header(
            success().with_body(body.freeze()),
            &response_header,
        ))
    }

    /// `ACK_MESSAGE`.
    pub(crate) fn ack_message(&mut self, request: &Command) -> Command {
        let header: AckMessageRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let Ok(handle) = ReceiptHandle::parse(&header.extra_info) else {
            return error(ResponseCode::MESSAGE_ILLEGAL, "bad extraInfo");
        };
        let key = (
            header.consumer_group,
            header.topic,
            header.queue_id,
            header.offset,
        );
        self.settle(&key, handle.pop_time)
    }

    /// `BATCH_ACK_MESSAGE`.
    pub(crate) fn batch_ack_message(&mut self, request: &Command) -> Command {
        let Ok(body) = BatchAckMessageRequestBody::decode(&request.body) else {
            return error(ResponseCode::NO_MESSAGE, "no acks");
        };
        let mut all = true;
        for ack in &body.acks {
            let mark = match ack.retry.as_str() {
                "1" => RetryMark::RetryV1,
                "2" => RetryMark::RetryV2,
                _ => RetryMark::Normal,
            };
            let topic = mark.real_topic(&ack.topic, &ack.consumer_group);
            for offset in ack.offsets() {
                let key = (
                    ack.consumer_group.clone(),
                    topic.clone(),
                    ack.queue_id,
                    offset,
                );
                all &= self.settle(&key, ack.pop_time).code == ResponseCode::SUCCESS.0;
            }
        }
        if all {
            success()
        } else {
            error(ResponseCode::NO_MESSAGE, "some acks found no checkpoint")
        }
    }

    fn settle(&mut self, key: &(String, String, i32, i64), pop_time: i64) -> Command {
        match self.pop.invisible.get(key) {
            Some(ck) if ck.pop_time == pop_time => {
                self.pop.invisible.remove(key);
                success()
            }
            _ => error(
                ResponseCode::NO_MESSAGE,
                "no live checkpoint for this handle",
            ),
        }
    }

    /// `CHANGE_MESSAGE_INVISIBLETIME`: a new checkpoint from now, the old one spent.
    pub(crate) fn change_invisible_time(
        &mut self,
        env: &mut Env<'_>,
        request: &Command,
    ) -> Command {
        let header: ChangeInvisibleTimeRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return response,
        };
        let Ok(handle) = ReceiptHandle::parse(&header.extra_info) else {
            return error(ResponseCode::MESSAGE_ILLEGAL, "bad extraInfo");
        };
        let key = (
            header.consumer_group,
            header.topic,
            header.queue_id,
            header.offset,
        );
        let now_ms = env.millis();
        match self.pop.invisible.get_mut(&key) {
            Some(ck) if ck.pop_time == handle.pop_time => {
                ck.pop_time = now_ms;
                ck.visible_at = env.now + millis(header.invisible_time);
                let response = ChangeInvisibleTimeResponse {
                    pop_time: now_ms,
                    invisible_time: header.invisible_time.max(0),
                    revive_qid: 0,
                };
                with_header(success(), &response)
            }
            _ => error(
                ResponseCode::NO_MESSAGE,
                "no live checkpoint for this handle",
            ),
        }
    }

    /// `SET_MESSAGE_REQUEST_MODE`.
    pub(crate) fn set_request_mode(&mut self, request: &Command) -> Command {
        let Ok(body) = SetMessageRequestModeRequestBody::decode(&request.body) else {
            return error(ResponseCode::SYSTEM_ERROR, "bad body");
        };
        if body.topic.starts_with(RETRY_PREFIX) {
            return error(
                ResponseCode::NO_PERMISSION,
                "retry topic is not allowed to set mode",
            );
        }
        if self.store.topic(&body.topic).is_none() {
            return error(ResponseCode::TOPIC_NOT_EXIST, "topic not exist");
        }
        self.pop.modes.insert(
            (body.topic, body.consumer_group),
            (body.mode, body.pop_share_queue_num),
        );
        success()
    }

    /// `QUERY_ASSIGNMENT` over `brokers`, the cluster's broker names hosting the topic.
    pub(crate) fn query_assignment(&mut self, request: &Command, brokers: &[String]) -> Command {
        let Ok(body) = QueryAssignmentRequestBody::decode(&request.body) else {
            return error(ResponseCode::SYSTEM_ERROR, "bad body");
        };
        let mut members = self
            .groups
            .get(&body.consumer_group)
            .map(|g| g.client_ids())
            .unwrap_or_default();
        members.sort();
        let answer = |assignments| {
            success().with_body(
                QueryAssignmentResponseBody {
                    message_queue_assignments: assignments,
                }
                .encode(),
            )
        };
        let Some(config) = self.store.topic(&body.topic).cloned() else {
            return answer(None);
        };
        let Some(index) = members.iter().position(|m| *m == body.client_id) else {
            return answer(None);
        };
        let (mode, share) = self
            .pop
            .modes
            .get(&(body.topic.clone(), body.consumer_group.clone()))
            .copied()
            .unwrap_or((MessageRequestMode::Pull, 0));
        let assign = |mq: MessageQueue| MessageQueueAssignment {
            message_queue: Some(mq),
            mode,
            ..MessageQueueAssignment::default()
        };
        let queues: Vec<MessageQueueAssignment> = if mode == MessageRequestMode::Pop
            && (share <= 0 || share >= members.len() as i32 - 1)
        {
            brokers
                .iter()
                .map(|b| assign(MessageQueue::new(&body.topic, b, -1)))
                .collect()
        } else {
            let all: Vec<MessageQueue> = brokers
                .iter()
                .flat_map(|b| {
                    let topic = body.topic.as_str();
                    (0..config.read_queue_nums).map(move |q| MessageQueue::new(topic, b, q))
                })
                .collect();
            all.into_iter()
                .enumerate()
                .filter(|(i, _)| i % members.len() == index)
                .map(|(_, mq)| assign(mq))
                .collect()
        };
        answer(Some(queues))
    }

    /// `PopReviveService`: the message of an expired checkpoint goes to the pop retry topic with
    /// its reconsume count raised.
    fn revive(&mut self, env: &mut Env<'_>, key: &(String, String, i32, i64)) {
        let (group, topic, queue_id, offset) = key;
        let Some(original) = self
            .store
            .queue(topic, *queue_id)
            .and_then(|q| q.get(*offset))
            .cloned()
        else {
            return;
        };
        let normal = if topic.starts_with(RETRY_PREFIX) {
            topic
                .strip_prefix(&format!("{RETRY_PREFIX}{group}_"))
                .unwrap_or(topic)
                .to_owned()
        } else {
            topic.clone()
        };
        let retry = pop_retry_topic(group, &normal);
        self.store.ensure_topic(&retry, 1);
        let mut properties = original.properties.clone();
        properties
            .entry(proto::message::property::RETRY_TOPIC.to_owned())
            .or_insert_with(|| normal.clone());
        let draft = Draft {
            topic: retry,
            queue_id: 0,
            body: original.body.clone(),
            flag: original.flag,
            sys_flag: original.sys_flag,
            properties,
            born_timestamp: original.born_timestamp,
            born_host: original.born_host,
            reconsume_times: original.reconsume_times.saturating_add(1),
        };
        self.pop.revived += 1;
        if let Err(e) = self.store_message(env, draft) {
            panic!("a revived message no longer encodes: {e}");
        }
    }
}
