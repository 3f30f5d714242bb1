//! A send made ready once ([`Prepared`]): checked, given its `UNIQ_KEY`s ([`UniqueIds`]),
//! encoded; the request of each attempt, and what the broker's answer means.

use proto::headers::{SendMessageRequestV2, SendMessageResponse};
use proto::message::{OutgoingMessage, encode_batch, property};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use crate::namespace::Namespace;

use super::{
    DEFAULT_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS, ProducerConfig, ProducerMessage, SHARDING_KEY,
    SendError, SendResult, SendStatus, Target,
};

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
    /// The topic as the application named it (the header's is wrapped with the namespace).
    app_topic: String,
}

/// `topic` and the producer group as the brokers know them: wrapped with the configuration's
/// namespace (Java's producer sends `withNamespace(topic)` from `withNamespace(group)`).
fn wire_names(config: &ProducerConfig, topic: &str) -> Result<(String, String), SendError> {
    match &config.namespace {
        None => Ok((topic.to_owned(), config.group.clone())),
        Some(name) => {
            let ns = Namespace::new(name.as_str()).map_err(|e| SendError::InvalidMessage(e.0))?;
            Ok((
                ns.wrap(topic).into_owned(),
                ns.wrap(&config.group).into_owned(),
            ))
        }
    }
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
        let (wire, group) = wire_names(config, topic)?;
        let mut message = message.message;
        check_body(config, message.body.len())?;
        message.topic = wire.clone();
        let id = unique_key(&mut message, ids, unix_ms);
        let header = send_header(&group, &wire, unix_ms, message.flag, &message);
        Ok(Self {
            code: RequestCode::SEND_MESSAGE_V2,
            header,
            sharding_key: message.property(SHARDING_KEY).map(str::to_owned),
            payload: message,
            msg_ids: vec![id],
            app_topic: topic.to_owned(),
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
        let (wire, group) = wire_names(config, topic)?;
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
            message.topic = wire.clone();
            msg_ids.push(unique_key(&mut message, ids, unix_ms));
            outgoing.push(message);
        }
        let body = encode_batch(&outgoing).map_err(SendError::Encode)?;
        // `MessageBatch.generateFromList` gives the batch only the first message's `WAIT`.
        let mut batch = OutgoingMessage::new(&wire, Vec::new());
        if let Some(wait) = outgoing.first().and_then(|m| m.property(property::WAIT)) {
            batch.set_property(property::WAIT, wait);
        }
        let mut header = send_header(&group, &wire, unix_ms, 0, &batch);
        header.batch = Some(true);
        batch.body = body;
        Ok(Self {
            code: RequestCode::SEND_BATCH_MESSAGE,
            header,
            payload: batch,
            sharding_key,
            msg_ids,
            app_topic: topic.to_owned(),
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
            queue: MessageQueue::new(&self.app_topic, target.queue.broker_name(), header.queue_id),
            queue_offset: header.queue_offset,
            msg_ids: self.msg_ids.clone(),
            offset_msg_ids: header.msg_id.split(',').map(str::to_owned).collect(),
            retries: 0,
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
    group: &str,
    topic: &str,
    unix_ms: i64,
    flag: i32,
    message: &OutgoingMessage,
) -> SendMessageRequestV2 {
    SendMessageRequestV2 {
        producer_group: group.to_owned(),
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
