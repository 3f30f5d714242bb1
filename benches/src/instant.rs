//! [`InstantBroker`]: a name server and a broker in one, on loopback, that answers a consumer at
//! once and at next to no cost, so that a benchmark against it measures the client alone.
//!
//! It answers what a consumer asks (Java `RouteInfoManager`, `ClientManageProcessor`,
//! `ConsumerManageProcessor`, `AdminBrokerProcessor`'s lock and offset requests,
//! `PullMessageProcessor`): routes, heartbeats, the group's member list, offset queries and
//! updates, queue locks (every lock asked for is granted). A pull is answered from a batch of
//! stored records encoded once per topic: the answer copies as many as asked and patches each
//! one's queue id, queue offset, commit-log offset and unique key in place. Every record has the
//! same length, so the copy is one `memcpy`, and the body, its CRC, the tags and properties stay
//! valid: the consumer's decode path is the real one. A pull at the end of its queue is never
//! answered (the consumer's long poll), nothing is on disk, and nothing is ever produced.
//!
//! One thread per connection reads what arrived, answers every frame in it, and writes all the
//! answers with one `write`: the broker's own cost is a few µs per pull of 32, far below the
//! consumer's, and it runs in the benchmark's process, not in the measured child's.

use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use rocketmq_proto::body::{
    BrokerData, ConsumerListBody, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody,
    QueueData, TopicRouteData,
};
use rocketmq_proto::headers::{
    GetConsumerListByGroupRequest, GetMaxOffsetRequest, GetMaxOffsetResponse, GetMinOffsetResponse,
    GetRouteInfoRequest, PullMessageRequest, PullMessageResponse, QueryConsumerOffsetRequest,
    QueryConsumerOffsetResponse, SearchOffsetResponse, UpdateConsumerOffsetRequest, pull_sys_flag,
};
use rocketmq_proto::message::{StoredMessage, encode_properties, encode_stored};
use rocketmq_proto::{
    Command, CommandHeader, FrameDecoder, HeaderEncoding, RequestCode, ResponseCode, frame,
};

/// The broker name in every route.
const BROKER_NAME: &str = "instant";
/// The most records one pull gets, whatever it asks for (Java's broker caps a pull by bytes
/// and count too).
pub const MAX_PULL: usize = 64;
/// The unique key's fixed part: an IPv4 address and a process id in Java's
/// `MessageClientIDSetter` layout, followed by 20 hex digits the broker patches (queue id and
/// queue offset), 32 digits in all.
const UNIQ_PREFIX: &str = "7F0000010000";
const UNIQ_PATCHED_DIGITS: usize = 20;

/// A running instant broker; it lives as long as the process.
#[derive(Debug, Clone)]
pub struct InstantBroker {
    addr: SocketAddr,
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    topics: Mutex<HashMap<String, Arc<Topic>>>,
    groups: Mutex<Groups>,
    /// Requests answered `REQUEST_CODE_NOT_SUPPORTED`, by code.
    unsupported: Mutex<HashMap<i32, u64>>,
    pulls: AtomicU64,
}

/// What the broker keeps of consumer groups: who heartbeat, and committed offsets.
#[derive(Debug, Default)]
struct Groups {
    members: HashMap<String, BTreeSet<String>>,
    offsets: HashMap<(String, String, i32), i64>,
}

/// A topic's queues, all holding `per_queue` messages, and the records pulls are cut from.
#[derive(Debug)]
struct Topic {
    queues: i32,
    per_queue: i64,
    /// [`MAX_PULL`] records of `record_len` bytes each.
    records: Bytes,
    record_len: usize,
    /// Where, in a record, the unique key's patched digits start.
    uniq_at: usize,
}

impl InstantBroker {
    /// Listens on an ephemeral loopback port and serves every connection on a thread of its own.
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        let serving = Arc::clone(&state);
        std::thread::Builder::new()
            .name("instant-accept".to_owned())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let state = Arc::clone(&serving);
                    let spawned = std::thread::Builder::new()
                        .name("instant-conn".to_owned())
                        .spawn(move || serve(stream, addr, &state));
                    if let Err(e) = spawned {
                        eprintln!("instant broker: no thread for a connection: {e}");
                    }
                }
            })?;
        Ok(Self { addr, state })
    }

    /// The address to use as both name server and broker (`127.0.0.1:port`).
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// Adds `topic` with `queues` queues of `per_queue` messages each, of `body_len`-byte
    /// bodies.
    pub fn add_topic(&self, topic: &str, queues: i32, per_queue: i64, body_len: usize) {
        let topic_state = Topic::new(topic, queues, per_queue, body_len, self.addr);
        lock(&self.state.topics).insert(topic.to_owned(), Arc::new(topic_state));
    }

    /// Pulls answered so far.
    pub fn pulls(&self) -> u64 {
        self.state.pulls.load(Ordering::Relaxed)
    }

    /// Requests the broker did not know, by request code: an empty map when the consumer only
    /// asked what a benchmark expects.
    pub fn unsupported(&self) -> HashMap<i32, u64> {
        lock(&self.state.unsupported).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Topic {
    fn new(topic: &str, queues: i32, per_queue: i64, body_len: usize, addr: SocketAddr) -> Self {
        let marker = format!("{UNIQ_PREFIX}{}", "F".repeat(UNIQ_PATCHED_DIGITS));
        let record = StoredMessage {
            queue_id: 0,
            queue_offset: 0,
            commit_log_offset: 0,
            born_timestamp: 1_795_900_000_000,
            born_host: "127.0.0.1:49536".parse().expect("literal address"),
            store_timestamp: 1_795_900_000_010,
            store_host: addr,
            body: vec![b'x'; body_len].into(),
            topic: topic.to_owned(),
            properties: encode_properties([
                ("TAGS", "TagA".to_owned()),
                ("KEYS", "instant".to_owned()),
                ("UNIQ_KEY", marker.clone()),
                ("WAIT", "true".to_owned()),
            ]),
            ..StoredMessage::default()
        };
        let mut one = BytesMut::new();
        encode_stored(&record, &mut one).expect("benchmark records fit the format");
        let uniq_at = one
            .windows(marker.len())
            .position(|w| w == marker.as_bytes())
            .expect("the record holds its unique key")
            + UNIQ_PREFIX.len();
        let mut records = BytesMut::with_capacity(one.len() * MAX_PULL);
        for _ in 0..MAX_PULL {
            records.extend_from_slice(&one);
        }
        Self {
            queues,
            per_queue,
            records: records.freeze(),
            record_len: one.len(),
            uniq_at,
        }
    }

    /// Appends `count` records of `queue_id` from `offset` on to `out`.
    fn append_records(&self, queue_id: i32, offset: i64, count: usize, out: &mut BytesMut) {
        let start = out.len();
        out.extend_from_slice(&self.records[..count * self.record_len]);
        for (i, record) in out[start..].chunks_exact_mut(self.record_len).enumerate() {
            let queue_offset = offset + i as i64;
            record[12..16].copy_from_slice(&queue_id.to_be_bytes());
            record[20..28].copy_from_slice(&queue_offset.to_be_bytes());
            let physical = queue_offset * i64::from(self.queues) + i64::from(queue_id);
            record[28..36].copy_from_slice(&(physical * self.record_len as i64).to_be_bytes());
            let digits = &mut record[self.uniq_at..self.uniq_at + UNIQ_PATCHED_DIGITS];
            write_hex(&mut digits[..8], queue_id as u64);
            write_hex(&mut digits[8..], queue_offset as u64);
        }
    }
}

/// Writes `value`'s low hex digits, upper case, into all of `out`.
fn write_hex(out: &mut [u8], mut value: u64) {
    for digit in out.iter_mut().rev() {
        *digit = b"0123456789ABCDEF"[(value & 0xF) as usize];
        value >>= 4;
    }
}

/// Serves one connection until the peer closes it or sends something that is not a frame.
fn serve(mut stream: TcpStream, addr: SocketAddr, state: &State) {
    let _ = stream.set_nodelay(true);
    let mut decoder = FrameDecoder::default();
    let mut input = BytesMut::with_capacity(64 * 1024);
    let mut output = BytesMut::with_capacity(256 * 1024);
    let mut chunk = vec![0_u8; 64 * 1024];
    let mut connection = Connection {
        addr,
        state,
        topics: HashMap::new(),
    };
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        input.extend_from_slice(&chunk[..n]);
        loop {
            let request = match decoder.decode(&mut input) {
                Ok(Some(request)) => request,
                Ok(None) => break,
                Err(e) => {
                    eprintln!("instant broker: a client sent a bad frame ({e}); closing");
                    return;
                }
            };
            if request.is_response() {
                continue;
            }
            if let Some(answer) = connection.answer(&request, &mut output)
                && frame::encode(&answer, HeaderEncoding::Json, &mut output).is_err()
            {
                eprintln!("instant broker: an answer did not fit a frame; closing");
                return;
            }
        }
        if !output.is_empty() {
            if stream.write_all(&output).is_err() {
                return;
            }
            output.clear();
        }
    }
}

/// What one connection's thread answers with.
struct Connection<'a> {
    addr: SocketAddr,
    state: &'a State,
    /// The topics this connection pulled, so a pull takes no lock to find its topic.
    topics: HashMap<String, Arc<Topic>>,
}

fn success(request: &Command) -> Command {
    Command::response(ResponseCode::SUCCESS, request.opaque)
}

fn refuse(request: &Command, code: ResponseCode, remark: &str) -> Command {
    Command::response(code, request.opaque).with_remark(remark)
}

fn with_header(mut command: Command, header: &impl CommandHeader) -> Command {
    header.encode_into(&mut command.ext_fields);
    command
}

impl Connection<'_> {
    /// The answer to `request`, `None` for one-way requests and parked pulls. A pull's records
    /// go straight into `output`: its answer is encoded by hand.
    fn answer(&mut self, request: &Command, output: &mut BytesMut) -> Option<Command> {
        let code = request.request_code();
        let answer = match code {
            RequestCode::PULL_MESSAGE => return self.pull(request, output),
            RequestCode::GET_ROUTEINFO_BY_TOPIC => self.route(request),
            RequestCode::HEART_BEAT => self.heartbeat(request),
            RequestCode::GET_CONSUMER_LIST_BY_GROUP => self.consumer_list(request),
            RequestCode::QUERY_CONSUMER_OFFSET => self.query_offset(request),
            RequestCode::UPDATE_CONSUMER_OFFSET => self.update_offset(request),
            RequestCode::GET_MIN_OFFSET => {
                with_header(success(request), &GetMinOffsetResponse { offset: 0 })
            }
            RequestCode::SEARCH_OFFSET_BY_TIMESTAMP => {
                with_header(success(request), &SearchOffsetResponse { offset: 0 })
            }
            RequestCode::GET_MAX_OFFSET => self.max_offset(request),
            RequestCode::LOCK_BATCH_MQ => Self::lock_queues(request),
            RequestCode::UNLOCK_BATCH_MQ | RequestCode::UNREGISTER_CLIENT => success(request),
            _ => {
                *lock(&self.state.unsupported).entry(code.0).or_default() += 1;
                refuse(
                    request,
                    ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
                    "not supported by the instant broker",
                )
            }
        };
        (!request.is_oneway()).then_some(answer)
    }

    fn route(&self, request: &Command) -> Command {
        let topic = match request.header::<GetRouteInfoRequest>() {
            Ok(header) => header.topic,
            Err(e) => return refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        };
        let Some(queues) = lock(&self.state.topics).get(&topic).map(|t| t.queues) else {
            // RouteInfoManager.pickupTopicRouteData found nothing: the retry topic, for one.
            return refuse(
                request,
                ResponseCode::TOPIC_NOT_EXIST,
                &format!("No topic route info in name server for the topic: {topic}"),
            );
        };
        let route = TopicRouteData {
            queue_datas: vec![QueueData {
                broker_name: BROKER_NAME.to_owned(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "instant-cluster".to_owned(),
                broker_name: BROKER_NAME.to_owned(),
                broker_addrs: [(0, self.addr.to_string())].into_iter().collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        success(request).with_body(route.encode())
    }

    fn heartbeat(&self, request: &Command) -> Command {
        match HeartbeatData::decode(&request.body) {
            Ok(data) => {
                let mut groups = lock(&self.state.groups);
                for consumer in &data.consumer_data_set {
                    groups
                        .members
                        .entry(consumer.group_name.clone())
                        .or_default()
                        .insert(data.client_id.clone());
                }
                success(request)
            }
            Err(e) => refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        }
    }

    fn consumer_list(&self, request: &Command) -> Command {
        let group = match request.header::<GetConsumerListByGroupRequest>() {
            Ok(header) => header.consumer_group,
            Err(e) => return refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        };
        let members = lock(&self.state.groups)
            .members
            .get(&group)
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default();
        let list = ConsumerListBody {
            consumer_id_list: members,
        };
        success(request).with_body(list.encode())
    }

    fn query_offset(&self, request: &Command) -> Command {
        let header = match request.header::<QueryConsumerOffsetRequest>() {
            Ok(header) => header,
            Err(e) => return refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        };
        let key = (header.consumer_group, header.topic, header.queue_id);
        match lock(&self.state.groups).offsets.get(&key) {
            Some(&offset) => with_header(success(request), &QueryConsumerOffsetResponse { offset }),
            // ConsumerManageProcessor: a group that never committed, on a queue whose first
            // message is still there, is told "not found" and starts where it is configured to.
            None => refuse(request, ResponseCode::QUERY_NOT_FOUND, "Not found"),
        }
    }

    fn update_offset(&self, request: &Command) -> Command {
        match request.header::<UpdateConsumerOffsetRequest>() {
            Ok(header) => {
                let key = (header.consumer_group, header.topic, header.queue_id);
                lock(&self.state.groups)
                    .offsets
                    .insert(key, header.commit_offset);
                success(request)
            }
            Err(e) => refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        }
    }

    fn max_offset(&mut self, request: &Command) -> Command {
        match request.header::<GetMaxOffsetRequest>() {
            Ok(header) => {
                let offset = self.topic(&header.topic).map_or(0, |t| t.per_queue);
                with_header(success(request), &GetMaxOffsetResponse { offset })
            }
            Err(e) => refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        }
    }

    /// Grants every lock asked for: the benchmark's group has one member.
    fn lock_queues(request: &Command) -> Command {
        match LockBatchRequestBody::decode(&request.body) {
            Ok(body) => success(request).with_body(
                LockBatchResponseBody {
                    lock_ok_mq_set: body.mq_set,
                }
                .encode(),
            ),
            Err(e) => refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        }
    }

    fn topic(&mut self, name: &str) -> Option<Arc<Topic>> {
        if let Some(topic) = self.topics.get(name) {
            return Some(Arc::clone(topic));
        }
        let topic = Arc::clone(lock(&self.state.topics).get(name)?);
        self.topics.insert(name.to_owned(), Arc::clone(&topic));
        Some(topic)
    }

    /// Answers a pull into `output` with up to [`MAX_PULL`] records, or parks it (no answer) at
    /// the end of its queue. Stores the offset a pull carries, as `PullMessageProcessor` does.
    fn pull(&mut self, request: &Command, output: &mut BytesMut) -> Option<Command> {
        let header = match request.header::<PullMessageRequest>() {
            Ok(header) => header,
            Err(e) => return Some(refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string())),
        };
        let Some(topic) = self.topic(&header.topic) else {
            return Some(refuse(
                request,
                ResponseCode::TOPIC_NOT_EXIST,
                &format!("topic[{}] not exist", header.topic),
            ));
        };
        if header.sys_flag & pull_sys_flag::COMMIT_OFFSET != 0 && header.commit_offset > 0 {
            let key = (header.consumer_group, header.topic, header.queue_id);
            lock(&self.state.groups)
                .offsets
                .insert(key, header.commit_offset);
        }
        self.state.pulls.fetch_add(1, Ordering::Relaxed);
        let offset = header.queue_offset.max(0);
        let left = (topic.per_queue - offset).max(0);
        let count = usize::try_from(header.max_msg_nums.max(0))
            .unwrap_or(0)
            .min(MAX_PULL)
            .min(usize::try_from(left).unwrap_or(0));
        if !(0..topic.queues).contains(&header.queue_id) {
            // PullMessageProcessor's answer to a queue the topic does not have.
            return Some(refuse(
                request,
                ResponseCode::SYSTEM_ERROR,
                &format!("queueId[{}] is illegal", header.queue_id),
            ));
        }
        if count == 0 {
            // The long poll of a drained queue: held until the consumer goes away.
            return None;
        }
        let mut answer = with_header(
            success(request).with_remark("FOUND"),
            &PullMessageResponse {
                suggest_which_broker_id: 0,
                next_begin_offset: offset + count as i64,
                min_offset: 0,
                max_offset: topic.per_queue,
                offset_delta: None,
                topic_sys_flag: None,
                group_sys_flag: None,
                forbidden_type: None,
            },
        );
        let mut body = BytesMut::with_capacity(count * topic.record_len);
        topic.append_records(header.queue_id, offset, count, &mut body);
        answer.body = body.freeze();
        if frame::encode(&answer, HeaderEncoding::Json, output).is_err() {
            eprintln!("instant broker: a pull answer did not fit a frame");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocketmq_proto::message::{DecodeOptions, decode_messages};

    /// The patched records decode as the broker's would: right queue, offsets, unique keys,
    /// bodies whose CRC checks.
    #[test]
    fn pulled_records_decode_with_their_queue_and_offsets() {
        let addr: SocketAddr = "127.0.0.1:10911".parse().expect("literal address");
        let topic = Topic::new("T", 4, 1000, 100, addr);
        let mut body = BytesMut::new();
        topic.append_records(3, 40, 5, &mut body);
        let batch = decode_messages(&body.freeze(), &DecodeOptions::default());
        assert!(batch.error.is_none(), "{:?}", batch.error);
        assert_eq!(batch.messages.len(), 5);
        for (i, message) in batch.messages.iter().enumerate() {
            assert_eq!(message.queue_id(), 3);
            assert_eq!(message.queue_offset(), 40 + i as i64);
            assert_eq!(message.body().len(), 100);
            assert_eq!(message.tags(), Some("TagA"));
            assert_eq!(
                message.property("UNIQ_KEY"),
                Some(format!("7F000001000000000003{:012X}", 40 + i).as_str())
            );
        }
    }
}
