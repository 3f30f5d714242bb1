//! The producer's sans-IO part: which queue a message goes to, the request that carries it,
//! what the broker's answer means, and whether a failed attempt is worth another.
//!
//! Nothing here sends, waits or reads a clock: the async producer in `rocketmq-driver` owns the
//! connections and the timers, and asks this module every question of policy:
//!
//! 1. [`ProducerMessage`]s are turned into a [`Prepared`] send once ([`Prepared::single`],
//!    [`Prepared::batch`]): checked, given their `UNIQ_KEY`s, encoded. Every attempt reuses it,
//!    so a retried message keeps its id (as Java's `MessageClientIDSetter` ids do).
//! 2. [`Routes`] caches each topic's [`PublishRoute`] and picks the [`Target`] of an attempt:
//!    round robin (skipping the broker that just failed, as Java's
//!    `TopicPublishInfo.selectOneMessageQueue(lastBrokerName)`), or by sharding key (Java's
//!    `SelectMessageQueueByHash`: the key's `String.hashCode` modulo the writable queues), so the
//!    same key lands on the same queue as long as the route does not change, whichever client
//!    (Java or this one) sends it.
//! 3. [`Prepared::request`] builds the `SEND_MESSAGE_V2` / `SEND_BATCH_MESSAGE` command for a
//!    target; [`Prepared::interpret`] reads the broker's answer into a [`SendResult`] or a
//!    [`SendError`].
//! 4. [`Attempts::after`] says whether a failure is retried and whether the route is fetched
//!    again first (`DefaultMQProducerImpl.sendDefaultImpl`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proto::body::TopicRouteData;
use proto::headers::{GetRouteInfoRequest, SendMessageRequestV2, SendMessageResponse};
use proto::message::{MessageEncodeError, OutgoingMessage, encode_batch, property};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

pub use crate::config::ConfigError;

/// The property a sharding key travels in (5.x `MessageConst.PROPERTY_SHARDING_KEY`), so
/// consumers can see which key put a message on its queue.
pub const SHARDING_KEY: &str = "__SHARDINGKEY";

/// The topic whose settings an auto-created topic copies (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const DEFAULT_TOPIC: &str = "TBW102";

/// Queues of a topic the broker creates on first send (`DefaultMQProducer.defaultTopicQueueNums`).
const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;

/// A producer's configuration. Build it with [`ProducerConfig::new`] and adjust the public
/// fields; [`ProducerConfig::validate`] runs when the producer is built.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProducerConfig {
    /// The producer group (only named in requests: a plain producer needs no registration).
    pub group: String,
    /// Name server addresses (`host:port`), asked in turn for routes until one answers.
    pub name_servers: Vec<String>,
    /// How long one send may take, retries included (`sendMsgTimeout`, 3 s).
    pub send_timeout: Duration,
    /// Extra attempts after a failed one (`retryTimesWhenSendFailed`, 2).
    pub retries: u32,
    /// How long a fetched route is used before it is fetched again (Java refreshes every
    /// `pollNameServerInterval`, 30 s). A failure that suggests the route moved drops it sooner.
    pub route_ttl: Duration,
    /// The largest body (sum of bodies for a batch) sent (`maxMessageSize`, 4 MiB).
    pub max_message_size: usize,
}

impl ProducerConfig {
    /// A configuration for `group` with Java's defaults.
    pub fn new(group: impl Into<String>, name_servers: Vec<String>) -> Self {
        Self {
            group: group.into(),
            name_servers,
            send_timeout: Duration::from_secs(3),
            retries: 2,
            route_ttl: Duration::from_secs(30),
            max_message_size: 4 * 1024 * 1024,
        }
    }

    /// Checks the values Java would refuse.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fail = |what: &str| Err(ConfigError(what.to_owned()));
        if self.group.is_empty() || self.group.len() > 255 {
            return fail("the producer group name must be 1 to 255 characters");
        }
        if self.name_servers.is_empty() {
            return fail("at least one name server address is needed");
        }
        if self.send_timeout.is_zero() {
            return fail("the send timeout must be positive");
        }
        if self.max_message_size == 0 {
            return fail("the maximum message size must be positive");
        }
        Ok(())
    }
}

/// A message to send: an [`OutgoingMessage`] (body, flag, properties; its topic is replaced by
/// the topic it is sent to) and the builder methods an application needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerMessage {
    message: OutgoingMessage,
}

impl ProducerMessage {
    /// A message with body `body` and no properties.
    pub fn new(body: impl Into<Vec<u8>>) -> Self {
        Self {
            message: OutgoingMessage::new(String::new(), body.into()),
        }
    }

    /// Sets the tag, the unit of broker-side filtering (`TAGS`).
    #[must_use]
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.message.set_tags(tag);
        self
    }

    /// Sets the business keys, space-separated (`KEYS`).
    #[must_use]
    pub fn with_keys(mut self, keys: impl Into<String>) -> Self {
        self.message.set_keys(keys);
        self
    }

    /// Sends the message to the queue its sharding key hashes to, instead of round robin:
    /// messages with the same key go to the same queue, in the order they are sent.
    #[must_use]
    pub fn with_sharding_key(mut self, key: impl Into<String>) -> Self {
        self.message.set_property(SHARDING_KEY, key);
        self
    }

    /// Sets any other property (see [`proto::message::encode_properties`] for the characters
    /// names and values may not contain).
    #[must_use]
    pub fn with_property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.message.set_property(name, value);
        self
    }

    /// Sets the user flag, stored as is.
    #[must_use]
    pub fn with_flag(mut self, flag: i32) -> Self {
        self.message.flag = flag;
        self
    }

    /// The sharding key, when one was set.
    pub fn sharding_key(&self) -> Option<&str> {
        self.message.property(SHARDING_KEY)
    }

    /// The message as the codec sees it.
    pub fn as_outgoing(&self) -> &OutgoingMessage {
        &self.message
    }
}

impl From<OutgoingMessage> for ProducerMessage {
    /// Keeps the body (without copying it), the flag and the properties.
    fn from(message: OutgoingMessage) -> Self {
        Self { message }
    }
}

impl From<Vec<u8>> for ProducerMessage {
    fn from(body: Vec<u8>) -> Self {
        Self::new(body)
    }
}

impl From<&[u8]> for ProducerMessage {
    fn from(body: &[u8]) -> Self {
        Self::new(body)
    }
}

impl From<String> for ProducerMessage {
    fn from(body: String) -> Self {
        Self::new(body)
    }
}

impl From<&str> for ProducerMessage {
    fn from(body: &str) -> Self {
        Self::new(body)
    }
}

/// Where one attempt goes: a queue and the address of its broker group's master.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The queue.
    pub queue: MessageQueue,
    /// The master's address (`host:port`).
    pub addr: String,
}

/// The queues of a topic a producer may write, in Java's order, each with its master.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublishRoute {
    targets: Vec<Target>,
}

impl PublishRoute {
    /// The writable queues of `topic` in `route` ([`TopicRouteData::publish_queues`]) whose
    /// broker group has a known master.
    pub fn new(topic: &str, route: &TopicRouteData) -> Self {
        let targets = route
            .publish_queues(topic)
            .into_iter()
            .filter_map(|queue| {
                let addr = route.master_addr(queue.broker_name())?.to_owned();
                Some(Target { queue, addr })
            })
            .collect();
        Self { targets }
    }

    /// The queues a producer writes to `topic` before any broker has it: those of
    /// [`DEFAULT_TOPIC`]'s route, at most 4 queues per broker (`defaultTopicQueueNums`), as Java's
    /// `MQClientInstance.updateTopicRouteInfoFromNameServer(topic, isDefault = true, ..)` builds
    /// them. A broker with `autoCreateTopicEnable` creates the topic on the first send, from the
    /// `defaultTopic` the send header names (`AbstractSendMessageProcessor.msgCheck`).
    pub fn auto_created(topic: &str, default_route: &TopicRouteData) -> Self {
        let mut route = default_route.clone();
        for queues in &mut route.queue_datas {
            let nums = DEFAULT_TOPIC_QUEUE_NUMS.min(queues.read_queue_nums);
            queues.read_queue_nums = nums;
            queues.write_queue_nums = nums;
        }
        Self::new(topic, &route)
    }

    /// The targets, in the order round robin and sharding index them.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The target of sharding key `key`: [`shard_index`] over the writable queues.
    pub fn by_key(&self, key: &str) -> Option<&Target> {
        self.targets.get(shard_index(key, self.targets.len())?)
    }

    /// The round-robin target after `*next`, advancing it: the first from there whose broker is
    /// not `avoid` (the one that just failed), else simply the next one.
    fn round_robin(&self, next: &mut usize, avoid: Option<&str>) -> Option<&Target> {
        let len = self.targets.len();
        if len == 0 {
            return None;
        }
        let start = *next;
        let pick = (0..len)
            .map(|step| (start + step) % len)
            .find(|&i| avoid.is_none_or(|broker| self.targets[i].queue.broker_name() != broker))
            .unwrap_or(start % len);
        *next = (pick + 1) % len;
        self.targets.get(pick)
    }
}

/// Java's `String.hashCode` (over UTF-16 code units, wrapping), as tag codes use it too.
pub use proto::body::java_string_hash;

/// The queue index of sharding key `key` among `queues` queues: `|hashCode| % queues` as Java's
/// `SelectMessageQueueByHash` (where `Math.abs(Integer.MIN_VALUE)` stays negative and Java would
/// fail, this takes 2^31). `None` when there are no queues.
pub fn shard_index(key: &str, queues: usize) -> Option<usize> {
    if queues == 0 {
        return None;
    }
    let hash = java_string_hash(key).unsigned_abs() as usize;
    Some(hash % queues)
}

/// The route cache of a producer: each topic's [`PublishRoute`], when it was fetched, and where
/// its round robin stands.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    ttl: Duration,
    topics: BTreeMap<String, CachedRoute>,
}

#[derive(Clone, Debug)]
struct CachedRoute {
    route: PublishRoute,
    fetched: Instant,
    /// Dropped by [`Routes::invalidate`]: fetch before the next use.
    stale: bool,
    next: usize,
}

impl Routes {
    /// An empty cache whose routes are fetched again after `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            topics: BTreeMap::new(),
        }
    }

    /// Whether `topic` needs fetching: never fetched, dropped by [`Routes::invalidate`], or
    /// older than the time to live.
    pub fn needs_fetch(&self, topic: &str, now: Instant) -> bool {
        self.topics.get(topic).is_none_or(|cached| {
            cached.stale || now.saturating_duration_since(cached.fetched) >= self.ttl
        })
    }

    /// Stores a fetched route. The round robin keeps its position, so a refresh does not send
    /// the next message back to the first queue.
    pub fn insert(&mut self, topic: &str, route: PublishRoute, now: Instant) {
        let next = self.topics.get(topic).map_or(0, |cached| cached.next);
        self.topics.insert(
            topic.to_owned(),
            CachedRoute {
                route,
                fetched: now,
                stale: false,
                next,
            },
        );
    }

    /// Marks `topic`'s route stale: the next attempt fetches it first. The stale route is kept
    /// meanwhile, as Java keeps its publish info when a refresh fails.
    pub fn invalidate(&mut self, topic: &str) {
        if let Some(cached) = self.topics.get_mut(topic) {
            cached.stale = true;
        }
    }

    /// The cached route of `topic`, fresh or not.
    pub fn get(&self, topic: &str) -> Option<&PublishRoute> {
        self.topics.get(topic).map(|cached| &cached.route)
    }

    /// The target of the next attempt of `prepared`: by its sharding key when it has one, else
    /// round robin avoiding `avoid_broker`.
    pub fn choose(
        &mut self,
        prepared: &Prepared,
        avoid_broker: Option<&str>,
    ) -> Result<Target, SendError> {
        let topic = prepared.topic();
        let Some(cached) = self.topics.get_mut(topic) else {
            return Err(SendError::NoRoute {
                topic: topic.to_owned(),
            });
        };
        let target = match prepared.sharding_key() {
            Some(key) => cached.route.by_key(key),
            None => cached.route.round_robin(&mut cached.next, avoid_broker),
        };
        target.cloned().ok_or_else(|| SendError::NoWritableQueue {
            topic: topic.to_owned(),
        })
    }
}

/// The `GET_ROUTEINFO_BY_TOPIC` request for `topic`.
pub fn route_request(topic: &str) -> Command {
    let header = GetRouteInfoRequest {
        topic: topic.to_owned(),
        accept_standard_json_only: Some(true),
    };
    Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header)
}

/// Reads a name server's answer to [`route_request`].
pub fn route_from_response(topic: &str, response: &Command) -> Result<PublishRoute, SendError> {
    read_route(topic, topic, response, PublishRoute::new)
}

/// Reads a name server's answer to `route_request(DEFAULT_TOPIC)`, asked because `topic` has no
/// route yet: the route [`PublishRoute::auto_created`] makes of it. [`SendError::NoRoute`]
/// names `topic` when the default topic has no route either (no broker auto-creates topics).
pub fn default_route_from_response(
    topic: &str,
    response: &Command,
) -> Result<PublishRoute, SendError> {
    read_route(topic, DEFAULT_TOPIC, response, PublishRoute::auto_created)
}

fn read_route(
    topic: &str,
    asked: &str,
    response: &Command,
    publish: impl FnOnce(&str, &TopicRouteData) -> PublishRoute,
) -> Result<PublishRoute, SendError> {
    match response.response_code() {
        ResponseCode::SUCCESS => {
            let route =
                TopicRouteData::decode(&response.body).map_err(|e| SendError::BadResponse {
                    peer: "name server".to_owned(),
                    detail: format!("route of {asked}: {e}"),
                })?;
            Ok(publish(topic, &route))
        }
        ResponseCode::TOPIC_NOT_EXIST => Err(SendError::NoRoute {
            topic: topic.to_owned(),
        }),
        code => Err(SendError::Refused {
            peer: "name server".to_owned(),
            code,
            remark: response.remark.clone().unwrap_or_default(),
        }),
    }
}

/// Makes the `UNIQ_KEY` of each message: Java's `MessageClientIDSetter` layout, upper-case hex
/// of `ip ‖ pid (16 bits) ‖ instance (32 bits)` then `ms since start (32 bits) ‖ counter (16
/// bits)`. Only uniqueness matters to brokers and consumers; the layout keeps the ids readable
/// by Java tools.
#[derive(Clone, Debug)]
pub struct UniqueIds {
    prefix: String,
    start_unix_ms: i64,
    counter: u16,
}

impl UniqueIds {
    /// A generator for a client whose IP address has the octets `ip` (4 or 16 of them), in
    /// process `pid`, started at `start_unix_ms`; `instance` tells apart producers of one
    /// process (Java uses a class loader's hash).
    pub fn new(ip: &[u8], pid: u32, instance: u32, start_unix_ms: i64) -> Self {
        let mut prefix = String::with_capacity(44);
        for byte in ip
            .iter()
            .copied()
            .chain((pid as u16).to_be_bytes())
            .chain(instance.to_be_bytes())
        {
            prefix.push_str(&format!("{byte:02X}"));
        }
        Self {
            prefix,
            start_unix_ms,
            counter: 0,
        }
    }

    /// The next id, for a message created at `unix_ms`.
    pub fn next(&mut self, unix_ms: i64) -> String {
        // Java counts from the start of the month so the 32 bits last; from the producer's
        // start they last as long (49 days) and need no calendar.
        let elapsed = unix_ms.saturating_sub(self.start_unix_ms) as u32;
        let counter = self.counter;
        self.counter = self.counter.wrapping_add(1);
        format!("{}{elapsed:08X}{counter:04X}", self.prefix)
    }
}

/// One send (a message or a batch), checked and encoded, ready for any number of attempts.
#[derive(Clone, Debug)]
pub struct Prepared {
    code: RequestCode,
    header: SendMessageRequestV2,
    /// Carries the encoded body (a `Bytes`, shared by every attempt without copying).
    payload: OutgoingMessage,
    sharding_key: Option<String>,
    msg_ids: Vec<String>,
}

impl Prepared {
    /// One message to `topic`, born at `unix_ms`: gives it a `UNIQ_KEY` (unless it has one) and
    /// checks its body against the configuration.
    pub fn single(
        config: &ProducerConfig,
        topic: &str,
        message: ProducerMessage,
        ids: &mut UniqueIds,
        unix_ms: i64,
    ) -> Result<Self, SendError> {
        check_topic(topic)?;
        let mut message = message.message;
        check_body(config, message.body.len())?;
        message.topic = topic.to_owned();
        let id = unique_key(&mut message, ids, unix_ms);
        let header = send_header(config, topic, unix_ms, message.flag, &message);
        Ok(Self {
            code: RequestCode::SEND_MESSAGE_V2,
            header,
            sharding_key: message.property(SHARDING_KEY).map(str::to_owned),
            payload: message,
            msg_ids: vec![id],
        })
    }

    /// A batch to `topic`, stored as consecutive messages of one queue. Its sharding key is the
    /// messages' one; they must all have the same (or none, for round robin).
    pub fn batch(
        config: &ProducerConfig,
        topic: &str,
        messages: Vec<ProducerMessage>,
        ids: &mut UniqueIds,
        unix_ms: i64,
    ) -> Result<Self, SendError> {
        check_topic(topic)?;
        let Some(first) = messages.first() else {
            return Err(SendError::InvalidMessage(
                "a batch needs messages".to_owned(),
            ));
        };
        let sharding_key = first.sharding_key().map(str::to_owned);
        if let Some(index) = messages
            .iter()
            .position(|m| m.sharding_key() != sharding_key.as_deref())
        {
            return Err(SendError::InvalidMessage(format!(
                "message {index} of the batch has another sharding key than the first; a batch \
                 goes to one queue"
            )));
        }
        let total: usize = messages.iter().map(|m| m.message.body.len()).sum();
        check_body(config, total)?;
        let mut outgoing = Vec::with_capacity(messages.len());
        let mut msg_ids = Vec::with_capacity(messages.len());
        for message in messages {
            let mut message = message.message;
            if message.body.is_empty() {
                return Err(SendError::InvalidMessage(
                    "a message body must not be empty".to_owned(),
                ));
            }
            message.topic = topic.to_owned();
            msg_ids.push(unique_key(&mut message, ids, unix_ms));
            outgoing.push(message);
        }
        let body = encode_batch(&outgoing).map_err(SendError::Encode)?;
        // `MessageBatch.generateFromList` gives the batch only the first message's `WAIT`.
        let mut batch = OutgoingMessage::new(topic, Vec::new());
        if let Some(wait) = outgoing.first().and_then(|m| m.property(property::WAIT)) {
            batch.set_property(property::WAIT, wait);
        }
        let mut header = send_header(config, topic, unix_ms, 0, &batch);
        header.batch = Some(true);
        batch.body = body;
        Ok(Self {
            code: RequestCode::SEND_BATCH_MESSAGE,
            header,
            payload: batch,
            sharding_key,
            msg_ids,
        })
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.header.topic
    }

    /// The sharding key that picks the queue, when there is one.
    pub fn sharding_key(&self) -> Option<&str> {
        self.sharding_key.as_deref()
    }

    /// The `UNIQ_KEY`s of the messages, in order.
    pub fn msg_ids(&self) -> &[String] {
        &self.msg_ids
    }

    /// The request of one attempt to `target`.
    pub fn request(&self, target: &Target) -> Command {
        let mut header = self.header.clone();
        header.queue_id = target.queue.queue_id();
        Command::request(self.code, &header).with_body(self.payload.body.clone())
    }

    /// Reads the broker's answer to [`Prepared::request`] for `target`
    /// (`MQClientAPIImpl.processSendResponse`).
    pub fn interpret(&self, target: &Target, response: &Command) -> Result<SendResult, SendError> {
        let status = match response.response_code() {
            ResponseCode::SUCCESS => SendStatus::Ok,
            ResponseCode::FLUSH_DISK_TIMEOUT => SendStatus::FlushDiskTimeout,
            ResponseCode::FLUSH_SLAVE_TIMEOUT => SendStatus::FlushSlaveTimeout,
            ResponseCode::SLAVE_NOT_AVAILABLE => SendStatus::SlaveNotAvailable,
            code => {
                return Err(SendError::Refused {
                    peer: target.addr.clone(),
                    code,
                    remark: response.remark.clone().unwrap_or_default(),
                });
            }
        };
        let header: SendMessageResponse =
            response.header().map_err(|e| SendError::BadResponse {
                peer: target.addr.clone(),
                detail: format!("send response header: {e}"),
            })?;
        Ok(SendResult {
            status,
            queue: MessageQueue::new(
                target.queue.topic(),
                target.queue.broker_name(),
                header.queue_id,
            ),
            queue_offset: header.queue_offset,
            msg_ids: self.msg_ids.clone(),
            offset_msg_ids: header.msg_id.split(',').map(str::to_owned).collect(),
        })
    }
}

fn check_topic(topic: &str) -> Result<(), SendError> {
    // `Validators.checkTopic`: the broker refuses the rest anyway, but only after a round trip.
    let valid = !topic.is_empty()
        && topic.len() <= 127
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'-' | b'_'));
    if valid {
        Ok(())
    } else {
        Err(SendError::InvalidMessage(format!(
            "topic {topic:?}: 1 to 127 characters of [%|a-zA-Z0-9_-]"
        )))
    }
}

fn check_body(config: &ProducerConfig, len: usize) -> Result<(), SendError> {
    if len == 0 {
        return Err(SendError::InvalidMessage(
            "a message body must not be empty".to_owned(),
        ));
    }
    if len > config.max_message_size {
        return Err(SendError::InvalidMessage(format!(
            "body of {len} bytes is over the {} byte limit",
            config.max_message_size
        )));
    }
    Ok(())
}

/// Gives `message` a `UNIQ_KEY` unless it carries one, and returns it.
fn unique_key(message: &mut OutgoingMessage, ids: &mut UniqueIds, unix_ms: i64) -> String {
    if let Some(id) = message.property(property::UNIQ_KEY) {
        return id.to_owned();
    }
    let id = ids.next(unix_ms);
    message.set_property(property::UNIQ_KEY, id.clone());
    id
}

fn send_header(
    config: &ProducerConfig,
    topic: &str,
    unix_ms: i64,
    flag: i32,
    message: &OutgoingMessage,
) -> SendMessageRequestV2 {
    SendMessageRequestV2 {
        producer_group: config.group.clone(),
        topic: topic.to_owned(),
        default_topic: DEFAULT_TOPIC.to_owned(),
        default_topic_queue_nums: DEFAULT_TOPIC_QUEUE_NUMS,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: unix_ms,
        flag,
        properties: Some(message.encoded_properties()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        ..SendMessageRequestV2::default()
    }
}

/// How the broker stored a message (`SendStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendStatus {
    /// Stored.
    Ok,
    /// Stored, but the synchronous flush to disk timed out.
    FlushDiskTimeout,
    /// Stored, but the synchronous replication to the slave timed out.
    FlushSlaveTimeout,
    /// Stored, but no slave is there to replicate to.
    SlaveNotAvailable,
}

/// What a successful send reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendResult {
    /// How it was stored.
    pub status: SendStatus,
    /// The queue it went to.
    pub queue: MessageQueue,
    /// The queue offset of the (first) message.
    pub queue_offset: i64,
    /// The `UNIQ_KEY` of each message, the id consumers see as `msg_id`.
    pub msg_ids: Vec<String>,
    /// The broker's offset message id of each message (store host and commit-log offset).
    pub offset_msg_ids: Vec<String>,
}

/// Why a send failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The message (or batch) breaks a rule; nothing was sent.
    #[error("invalid message: {0}")]
    InvalidMessage(String),
    /// A batch that does not encode.
    #[error("batch does not encode: {0}")]
    Encode(MessageEncodeError),
    /// The name servers do not know the topic (create it first, or enable auto-creation).
    #[error("no route for topic {topic}")]
    NoRoute {
        /// The topic.
        topic: String,
    },
    /// The topic has no queue a producer may write.
    #[error("topic {topic} has no writable queue")]
    NoWritableQueue {
        /// The topic.
        topic: String,
    },
    /// A peer answered with an error code.
    #[error("{peer} refused: {code}: {remark}")]
    Refused {
        /// The broker's address, or "name server".
        peer: String,
        /// The response code.
        code: ResponseCode,
        /// The peer's reason.
        remark: String,
    },
    /// A peer's answer did not decode.
    #[error("bad response from {peer}: {detail}")]
    BadResponse {
        /// The broker's address, or "name server".
        peer: String,
        /// What was wrong.
        detail: String,
    },
    /// No answer within the send timeout; the message may or may not have been stored.
    #[error("no answer from {peer} within the send timeout")]
    Timeout {
        /// The peer's address.
        peer: String,
    },
    /// The connection could not be opened or broke before the answer; the message may or may
    /// not have been stored.
    #[error("connection to {peer} failed: {reason}")]
    Disconnected {
        /// The peer's address.
        peer: String,
        /// What the system said.
        reason: String,
    },
    /// The producer was closed.
    #[error("the producer is closed")]
    Closed,
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Give up: report the failure.
    No,
    /// Try again on the next target (round robin skips the failed broker; a sharded send keeps
    /// its queue), fetching the route first when `refresh_route`.
    Yes {
        /// The failure suggests the route changed (the broker is gone, lost the topic or its
        /// write permission).
        refresh_route: bool,
    },
}

/// The attempts left to one send.
#[derive(Clone, Debug)]
pub struct Attempts {
    left: u32,
}

impl Attempts {
    /// The first attempt and `config.retries` more.
    pub fn new(config: &ProducerConfig) -> Self {
        Self {
            left: config.retries,
        }
    }

    /// Whether `error` is retried (`DefaultMQProducerImpl.sendDefaultImpl` and the 5.x
    /// `retryResponseCodes`). A timeout is not: the send timeout covers every attempt, so none
    /// is left.
    pub fn after(&mut self, error: &SendError) -> Retry {
        let retry = match error {
            SendError::Disconnected { .. } => Retry::Yes {
                refresh_route: true,
            },
            SendError::Refused { code, .. } => match *code {
                ResponseCode::TOPIC_NOT_EXIST
                | ResponseCode::SERVICE_NOT_AVAILABLE
                | ResponseCode::NO_PERMISSION => Retry::Yes {
                    refresh_route: true,
                },
                ResponseCode::SYSTEM_ERROR | ResponseCode::SYSTEM_BUSY => Retry::Yes {
                    refresh_route: false,
                },
                _ => Retry::No,
            },
            _ => Retry::No,
        };
        if retry == Retry::No || self.left == 0 {
            return Retry::No;
        }
        self.left -= 1;
        retry
    }
}

#[cfg(test)]
mod tests {
    // Tests of `PublishRoute`, route requests and the route cache, which need a route to
    // build, are in `rocketmq-driver/tests/producer_routes.rs`, beside its route fixture.

    use super::*;

    fn config() -> ProducerConfig {
        ProducerConfig::new("g", vec!["ns:9876".to_owned()])
    }

    fn ids() -> UniqueIds {
        UniqueIds::new(&[10, 0, 0, 1], 0x1234, 7, 1_000)
    }

    #[test]
    fn java_string_hash_matches_java() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("abc"), 96_354);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        // "polygenelubricants".hashCode() is Integer.MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // Outside the BMP Java hashes the surrogate pair: "😀" is \uD83D\uDE00.
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
        assert_eq!(shard_index("polygenelubricants", 8), Some(0));
        assert_eq!(shard_index("abc", 8), Some(96_354 % 8));
        assert_eq!(shard_index("abc", 0), None);
    }

    fn prepared(key: Option<&str>) -> Prepared {
        let mut message = ProducerMessage::new("body");
        if let Some(key) = key {
            message = message.with_sharding_key(key);
        }
        Prepared::single(&config(), "T", message, &mut ids(), 2_000).expect("valid message")
    }

    #[test]
    fn single_request_carries_the_message_and_its_id() {
        let message = ProducerMessage::new("hello")
            .with_tag("TagA")
            .with_keys("k1 k2")
            .with_flag(3);
        let prepared =
            Prepared::single(&config(), "T", message, &mut ids(), 2_000).expect("valid message");
        let target = Target {
            queue: MessageQueue::new("T", "a", 5),
            addr: "10.0.0.1:10911".to_owned(),
        };
        let request = prepared.request(&target);
        assert_eq!(request.request_code(), RequestCode::SEND_MESSAGE_V2);
        assert_eq!(&request.body[..], b"hello");
        let header: SendMessageRequestV2 = request.header().expect("own header decodes");
        assert_eq!(
            (header.queue_id, header.flag, header.born_timestamp),
            (5, 3, 2_000)
        );
        assert_eq!(header.producer_group, "g");
        assert_eq!(header.default_topic, DEFAULT_TOPIC);
        let id = &prepared.msg_ids()[0];
        // 10.0.0.1, pid 0x1234, instance 7; 1000 ms after start; counter 0.
        assert_eq!(id, "0A000001123400000007000003E80000");
        let properties = header.properties.expect("properties are sent");
        assert!(properties.contains("TAGS\u{1}TagA\u{2}"), "{properties}");
        assert!(properties.contains("KEYS\u{1}k1 k2\u{2}"), "{properties}");
        assert!(properties.contains(&format!("UNIQ_KEY\u{1}{id}\u{2}")));
    }

    #[test]
    fn unique_ids_differ_and_keep_a_given_one() {
        let mut ids = ids();
        let a = ids.next(5_000);
        let b = ids.next(5_000);
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        let mut given = OutgoingMessage::new("T", "x");
        given.set_property(property::UNIQ_KEY, "MINE");
        let prepared =
            Prepared::single(&config(), "T", given.into(), &mut ids, 5_000).expect("valid");
        assert_eq!(prepared.msg_ids(), ["MINE"]);
    }

    #[test]
    fn bad_messages_are_refused_before_sending() {
        let cfg = ProducerConfig {
            max_message_size: 4,
            ..config()
        };
        let mut ids = ids();
        for (topic, body) in [("T", ""), ("T", "12345"), ("", "x"), ("a b", "x")] {
            assert!(matches!(
                Prepared::single(&cfg, topic, body.into(), &mut ids, 0),
                Err(SendError::InvalidMessage(_))
            ));
        }
        let mixed = vec![
            ProducerMessage::new("a").with_sharding_key("k"),
            ProducerMessage::new("b"),
        ];
        assert!(matches!(
            Prepared::batch(&config(), "T", mixed, &mut ids, 0),
            Err(SendError::InvalidMessage(_))
        ));
        assert!(matches!(
            Prepared::batch(&config(), "T", Vec::new(), &mut ids, 0),
            Err(SendError::InvalidMessage(_))
        ));
    }

    #[test]
    fn batch_request_encodes_each_message() {
        let messages = vec![
            ProducerMessage::new("one").with_sharding_key("k"),
            ProducerMessage::new("two").with_sharding_key("k"),
        ];
        let prepared =
            Prepared::batch(&config(), "T", messages, &mut ids(), 0).expect("valid batch");
        assert_eq!(prepared.sharding_key(), Some("k"));
        assert_eq!(prepared.msg_ids().len(), 2);
        let target = Target {
            queue: MessageQueue::new("T", "a", 1),
            addr: "x:1".to_owned(),
        };
        let request = prepared.request(&target);
        assert_eq!(request.request_code(), RequestCode::SEND_BATCH_MESSAGE);
        let header: SendMessageRequestV2 = request.header().expect("own header decodes");
        assert_eq!(header.batch, Some(true));
        let body = &request.body[..];
        let first_len = u32::from_be_bytes(body[..4].try_into().expect("4 bytes")) as usize;
        assert!(body[..first_len].windows(3).any(|w| w == b"one"));
        assert!(body[first_len..].windows(3).any(|w| w == b"two"));
    }

    #[test]
    fn responses_become_results_or_errors() {
        let prepared = prepared(None);
        let target = Target {
            queue: MessageQueue::new("T", "a", 1),
            addr: "10.0.0.1:10911".to_owned(),
        };
        let header = SendMessageResponse {
            msg_id: "ABC".to_owned(),
            queue_id: 1,
            queue_offset: 42,
            ..SendMessageResponse::default()
        };
        let mut ok = Command::response(ResponseCode::SUCCESS, 1);
        ok.ext_fields = proto::CommandHeader::to_ext_fields(&header);
        let result = prepared.interpret(&target, &ok).expect("stored");
        assert_eq!(result.status, SendStatus::Ok);
        assert_eq!((result.queue.queue_id(), result.queue_offset), (1, 42));
        assert_eq!(result.offset_msg_ids, ["ABC"]);
        assert_eq!(result.msg_ids, prepared.msg_ids());

        let mut flush = ok.clone();
        flush.code = ResponseCode::FLUSH_DISK_TIMEOUT.0;
        assert_eq!(
            prepared.interpret(&target, &flush).map(|r| r.status),
            Ok(SendStatus::FlushDiskTimeout)
        );
        let busy = Command::response(ResponseCode::SYSTEM_BUSY, 1).with_remark("busy");
        assert!(matches!(
            prepared.interpret(&target, &busy),
            Err(SendError::Refused {
                code: ResponseCode::SYSTEM_BUSY,
                ..
            })
        ));
        let headerless = Command::response(ResponseCode::SUCCESS, 1);
        assert!(matches!(
            prepared.interpret(&target, &headerless),
            Err(SendError::BadResponse { .. })
        ));
    }

    #[test]
    fn retries_follow_java_and_are_bounded() {
        let mut attempts = Attempts::new(&config());
        let gone = SendError::Disconnected {
            peer: "b".to_owned(),
            reason: "reset".to_owned(),
        };
        let busy = SendError::Refused {
            peer: "b".to_owned(),
            code: ResponseCode::SYSTEM_BUSY,
            remark: String::new(),
        };
        let refused = |code| SendError::Refused {
            peer: "b".to_owned(),
            code,
            remark: String::new(),
        };
        let lost_topic = refused(ResponseCode::TOPIC_NOT_EXIST);
        let bad_request = refused(ResponseCode(13));
        assert_eq!(attempts.after(&bad_request), Retry::No);
        assert_eq!(
            attempts.after(&SendError::Timeout {
                peer: "b".to_owned()
            }),
            Retry::No
        );
        assert_eq!(
            attempts.after(&gone),
            Retry::Yes {
                refresh_route: true
            }
        );
        assert_eq!(
            attempts.after(&busy),
            Retry::Yes {
                refresh_route: false
            }
        );
        assert_eq!(attempts.after(&lost_topic), Retry::No, "two retries used");
    }

    #[test]
    fn config_is_validated() {
        assert!(config().validate().is_ok());
        assert!(
            ProducerConfig::new("", vec!["x".to_owned()])
                .validate()
                .is_err()
        );
        assert!(ProducerConfig::new("g", Vec::new()).validate().is_err());
    }
}
