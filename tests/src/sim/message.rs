//! [`StoredMessageInfo`]: one message as a simulated broker stored it, and [`Draft`], a message
//! on its way into the store.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use proto::body::java_string_hash;
use proto::message::{
    self, MagicCode, MessageEncodeError, StoredMessage, encode_properties, property,
};

/// One stored message: what was produced (or sent, or re-sent for a retry), where it landed,
/// and the record a pull returns for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMessageInfo {
    /// The topic it is stored under (`%RETRY%<group>` / `%DLQ%<group>` for re-sent ones).
    pub topic: String,
    /// The queue id.
    pub queue_id: i32,
    /// The logical offset in the queue.
    pub queue_offset: i64,
    /// The physical offset in the broker's commit log, which `CONSUMER_SEND_MSG_BACK` names.
    pub commit_log_offset: i64,
    /// The broker-assigned id (`offsetMsgId`): store host and commit-log offset in hex.
    pub offset_msg_id: String,
    /// The body as stored (compressed when `sys_flag` says so).
    pub body: Bytes,
    /// The producer's user flag.
    pub flag: i32,
    /// The message sysFlag as stored.
    pub sys_flag: i32,
    /// The properties (`TAGS`, `KEYS`, `UNIQ_KEY`, `RETRY_TOPIC`, ...).
    pub properties: BTreeMap<String, String>,
    /// When the producer made it, ms since the Unix epoch.
    pub born_timestamp: i64,
    /// The producer's address.
    pub born_host: SocketAddr,
    /// When the broker stored it, ms since the Unix epoch.
    pub store_timestamp: i64,
    /// When the broker stored it, on the virtual clock.
    pub stored_at: Instant,
    /// The storing broker's address.
    pub store_host: SocketAddr,
    /// Deliveries before this one (0 for a fresh message, n for the n-th retry).
    pub reconsume_times: i32,
    /// The consume-queue tags code: Java `String.hashCode` of `TAGS`, 0 without a tag.
    pub tags_code: i32,
    /// The encoded record a pull returns.
    record: Bytes,
}

impl StoredMessageInfo {
    /// The value of property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
    }

    /// The tag.
    pub fn tags(&self) -> Option<&str> {
        self.property(property::TAGS)
    }

    /// The business keys.
    pub fn keys(&self) -> Option<&str> {
        self.property(property::KEYS)
    }

    /// The producer-assigned id, kept across retries.
    pub fn unique_key(&self) -> Option<&str> {
        self.property(property::UNIQ_KEY)
    }

    /// The id a Java consumer shows: the unique key, else the offset message id.
    pub fn msg_id(&self) -> &str {
        self.unique_key().unwrap_or(&self.offset_msg_id)
    }

    /// The stored record, exactly as a pull response carries it.
    pub fn record(&self) -> &Bytes {
        &self.record
    }
}

/// A message before the store gives it a place: everything but offsets and store time.
#[derive(Clone, Debug)]
pub(crate) struct Draft {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) body: Bytes,
    pub(crate) flag: i32,
    pub(crate) sys_flag: i32,
    pub(crate) properties: BTreeMap<String, String>,
    pub(crate) born_timestamp: i64,
    pub(crate) born_host: SocketAddr,
    pub(crate) reconsume_times: i32,
}

/// Where and when the store puts a draft.
pub(crate) struct Placement {
    pub(crate) queue_offset: i64,
    pub(crate) commit_log_offset: i64,
    pub(crate) store_timestamp: i64,
    pub(crate) stored_at: Instant,
    pub(crate) store_host: SocketAddr,
}

impl Draft {
    /// The tags code the consume queue keeps for the draft.
    pub(crate) fn tags_code(&self) -> i32 {
        self.properties
            .get(property::TAGS)
            .map_or(0, |tags| java_string_hash(tags))
    }

    /// The record the draft becomes at `placement`, as a broker writes it
    /// (`MessageExtEncoder`); fails when the topic or properties are too long for a record.
    pub(crate) fn store(
        self,
        placement: &Placement,
    ) -> Result<StoredMessageInfo, MessageEncodeError> {
        let stored = StoredMessage {
            magic: MagicCode::for_topic(&self.topic),
            queue_id: self.queue_id,
            flag: self.flag,
            queue_offset: placement.queue_offset,
            commit_log_offset: placement.commit_log_offset,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_timestamp: placement.store_timestamp,
            store_host: placement.store_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: 0,
            body: self.body.clone(),
            topic: self.topic.clone(),
            properties: encode_properties(&self.properties),
        };
        let mut record = BytesMut::with_capacity(stored.encoded_len());
        message::encode_stored(&stored, &mut record)?;
        let tags_code = self.tags_code();
        Ok(StoredMessageInfo {
            offset_msg_id: offset_msg_id(placement.store_host, placement.commit_log_offset),
            topic: self.topic,
            queue_id: self.queue_id,
            queue_offset: placement.queue_offset,
            commit_log_offset: placement.commit_log_offset,
            body: self.body,
            flag: self.flag,
            sys_flag: self.sys_flag,
            properties: self.properties,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_timestamp: placement.store_timestamp,
            stored_at: placement.stored_at,
            store_host: placement.store_host,
            reconsume_times: self.reconsume_times,
            tags_code,
            record: record.freeze(),
        })
    }

    /// Whether the draft can become a record (topic and property string within the record
    /// format's limits).
    pub(crate) fn check_encodable(&self) -> Result<(), MessageEncodeError> {
        let stored = StoredMessage {
            magic: MagicCode::for_topic(&self.topic),
            topic: self.topic.clone(),
            properties: encode_properties(&self.properties),
            ..StoredMessage::default()
        };
        message::encode_stored(&stored, &mut BytesMut::new())
    }

    /// The record length the draft will have (for commit-log offsets of records the
    /// simulator does not keep, such as the `SCHEDULE_TOPIC_XXXX` copy of a delayed message).
    pub(crate) fn encoded_len(&self) -> usize {
        StoredMessage {
            magic: MagicCode::for_topic(&self.topic),
            born_host: self.born_host,
            body: self.body.clone(),
            topic: self.topic.clone(),
            properties: encode_properties(&self.properties),
            ..StoredMessage::default()
        }
        .encoded_len()
    }
}

/// `MessageDecoder.createMessageId`: upper-case hex of the store host's address bytes, its
/// port as an `i32` and the commit-log offset as an `i64`, big-endian.
pub(crate) fn offset_msg_id(store_host: SocketAddr, commit_log_offset: i64) -> String {
    let mut bytes = match store_host {
        SocketAddr::V4(v4) => v4.ip().octets().to_vec(),
        SocketAddr::V6(v6) => v6.ip().octets().to_vec(),
    };
    bytes.extend_from_slice(&i32::from(store_host.port()).to_be_bytes());
    bytes.extend_from_slice(&commit_log_offset.to_be_bytes());
    let mut id = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(id, "{byte:02X}");
    }
    id
}
