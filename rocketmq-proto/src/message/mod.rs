//! Stored messages: the records of a pull response body, and the encodings a producer sends.
//!
//! A pull response body (also the body of `CONSUME_MESSAGE_DIRECTLY`) is a concatenation of
//! commit-log records (`remoting-protocol.md` §5.1, `MessageDecoder.decode` in Java):
//!
//! ```text
//! TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64 |
//! PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST (4|16 + port i32) |
//! STORETIMESTAMP i64 | STOREHOST (4|16 + port i32) | RECONSUMETIMES i32 |
//! PREPAREDTRANSACTIONOFFSET i64 | body len i32 + BODY | topic len (i8|i16) + TOPIC |
//! properties len i16 + PROPERTIES
//! ```
//!
//! - [`decode_messages`] decodes a whole body into [`Message`]s, keeping the records before a
//!   malformed one; [`decode_message`] decodes exactly one record.
//! - A [`Message`] holds [`Bytes`] slices of the input: the body is never copied unless it was
//!   compressed, and properties are parsed only when asked for.
//! - [`encode_properties`], [`OutgoingMessage`] and [`encode_batch`] build what a producer sends;
//!   [`compress_body`] compresses a body the way Java's producer does.
//! - [`StoredMessage`] and [`encode_stored`] write records as a broker stores them, for a
//!   simulated broker, tests and benchmarks.
//!
//! ```
//! use bytes::{Bytes, BytesMut};
//! use rocketmq_proto::message::{self, DecodeOptions, StoredMessage};
//!
//! let stored = StoredMessage {
//!     topic: "T".into(),
//!     body: Bytes::from_static(b"hi"),
//!     properties: message::encode_properties([("TAGS", "A"), ("UNIQ_KEY", "X")]),
//!     queue_offset: 5,
//!     ..StoredMessage::default()
//! };
//! let mut body = BytesMut::new();
//! message::encode_stored(&stored, &mut body)?;
//! let batch = message::decode_messages(&body.freeze(), &DecodeOptions::default());
//! assert!(batch.error.is_none());
//! let msg = &batch.messages[0];
//! assert_eq!((msg.topic(), msg.queue_offset(), msg.tags()), ("T", 5, Some("A")));
//! assert_eq!((msg.body(), msg.msg_id().as_str()), (&b"hi"[..], "X"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod compression;
mod decode;
mod encode;
mod error;
mod properties;
pub mod property;
pub mod sys_flag;

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use bytes::Bytes;

pub use compression::{
    Compression, DEFAULT_COMPRESS_LEVEL, DEFAULT_COMPRESS_OVER, compress_body, decompress_body,
};
pub use decode::{
    BatchEntry, DecodeOptions, DecodedBatch, decode_batch, decode_message, decode_messages,
};
pub use encode::{OutgoingMessage, StoredMessage, encode_batch, encode_stored};
pub use error::{CompressError, MessageEncodeError, MessageError, MessageErrorKind};
pub use properties::{Properties, encode_properties};

/// `MAGICCODE` of a v1 record: 1-byte topic length (`MessageDecoder.MESSAGE_MAGIC_CODE`).
pub const MAGIC_CODE_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// `MAGICCODE` of a v2 record: 2-byte topic length (`MessageDecoder.MESSAGE_MAGIC_CODE_V2`).
pub const MAGIC_CODE_V2: i32 = 0xDAA3_20AB_u32 as i32;

/// The record format version, told apart by `MAGICCODE` (`MessageVersion.java`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MagicCode {
    /// [`MAGIC_CODE_V1`]: the topic length is one byte, read as signed (topics up to 127 bytes).
    #[default]
    V1,
    /// [`MAGIC_CODE_V2`]: the topic length is an `i16` (5.x brokers, topics over 127 bytes).
    V2,
}

impl MagicCode {
    /// The version a 5.x broker writes for `topic` (`autoMessageVersionOnTopicLen`, on by
    /// default in `MessageStoreConfig`): v2 only when the topic is longer than 127 bytes.
    pub fn for_topic(topic: &str) -> Self {
        if topic.len() > usize::from(i8::MAX.unsigned_abs()) {
            Self::V2
        } else {
            Self::V1
        }
    }

    /// The `MAGICCODE` value.
    pub fn value(self) -> i32 {
        match self {
            Self::V1 => MAGIC_CODE_V1,
            Self::V2 => MAGIC_CODE_V2,
        }
    }

    /// The version with `MAGICCODE` `value`, if any.
    pub fn from_value(value: i32) -> Option<Self> {
        match value {
            MAGIC_CODE_V1 => Some(Self::V1),
            MAGIC_CODE_V2 => Some(Self::V2),
            _ => None,
        }
    }

    /// The largest topic length, in bytes, the version's length field can hold.
    pub fn max_topic_len(self) -> usize {
        match self {
            Self::V1 => usize::from(i8::MAX.unsigned_abs()),
            Self::V2 => usize::from(i16::MAX.unsigned_abs()),
        }
    }
}

/// One stored message, as a consumer sees it (`MessageExt` in Java).
///
/// It keeps the record it was decoded from as one [`Bytes`] slice of the input, validated
/// whole at decode, and reads the fixed-width fields from it on demand; the body is a second
/// slice of the input (a fresh buffer, made at decode, only when it was stored compressed).
/// Properties are parsed each time they are read. So decoding a message costs no allocation
/// beyond itself and two reference-count increments.
#[derive(Clone)]
pub struct Message {
    /// From `TOTALSIZE` through the body length at the [`layout`] offsets, then the body (in
    /// decoded records), topic and property string wherever the offsets below say; the
    /// property string always ends it. Decoded messages keep the input record;
    /// [`Message::set_topic`], [`Message::set_property`] and inner batches build a new one with
    /// the same header layout and no body bytes.
    record: Bytes,
    /// The body, decompressed.
    body: Body,
    /// `u32` is enough: a record is at most `i32::MAX` bytes (`TOTALSIZE`), and a rebuilt one
    /// holds a header, a topic and a property string of at most `i16::MAX` bytes each.
    topic_start: u32,
    topic_len: u32,
    /// The property string runs from here to the end of `record`.
    properties_start: u32,
}

/// Where a message's body is. Most bodies are a range of the record they were decoded with,
/// so cloning or dropping a message touches one reference count, not two (a clone and a drop
/// of each message on the consumer's path, a tenth of its time as two counts).
#[derive(Clone)]
enum Body {
    /// `record[start..start + len]`.
    InRecord { start: u32, len: u32 },
    /// Decompressed, or kept from before a rebuild of the record.
    Own(Bytes),
}

/// Field offsets in a stored record (`remoting-protocol.md` §5.1, `MessageDecoder`'s
/// `*_POSITION` constants). Fields after the born host move by 12 bytes for each IPv6 host.
mod layout {
    pub(super) const MAGIC_CODE: usize = 4;
    pub(super) const BODY_CRC: usize = 8;
    pub(super) const QUEUE_ID: usize = 12;
    pub(super) const FLAG: usize = 16;
    pub(super) const QUEUE_OFFSET: usize = 20;
    pub(super) const PHYSICAL_OFFSET: usize = 28;
    pub(super) const SYS_FLAG: usize = 36;
    pub(super) const BORN_TIMESTAMP: usize = 40;
    pub(super) const BORN_HOST: usize = 48;
    /// From `RECONSUMETIMES` to `PREPARED_TRANSACTION_OFFSET`.
    pub(super) const PREPARED_AFTER_RECONSUME: usize = 4;
    /// From `RECONSUMETIMES` to the body length.
    pub(super) const BODY_LENGTH_AFTER_RECONSUME: usize = 12;
}

impl Message {
    /// Replaces the topic; the consumer restores the original topic of a retry delivery from
    /// [`property::RETRY_TOPIC`] (`ConsumeMessageConcurrentlyService.resetRetryAndNamespace`).
    /// Copies the record header and property string into a new buffer.
    pub fn set_topic(&mut self, topic: impl Into<String>) {
        let topic = topic.into();
        let properties = self.raw_properties().to_vec();
        self.rebuild(topic.as_bytes(), &properties);
    }

    /// Sets property `name` to `value`, dropping any earlier value. Rewrites the record header,
    /// topic and property string into a new buffer, so it is meant for the odd client-local
    /// property (Java's consumer sets `CONSUME_START_TIME` this way), not for every message.
    ///
    /// Neither may contain U+0001 or U+0002, which would split the string differently when read
    /// back (Java does not check either).
    pub fn set_property(&mut self, name: &str, value: &str) {
        let mut properties = self.properties_without(name);
        properties.extend_from_slice(name.as_bytes());
        properties.push(properties::NAME_VALUE_SEPARATOR);
        properties.extend_from_slice(value.as_bytes());
        properties.push(properties::PROPERTY_SEPARATOR);
        let topic = self.topic().as_bytes().to_vec();
        self.rebuild(&topic, &properties);
    }

    /// Replaces the reconsume count, as Java's consumer does before redelivering a message
    /// locally (`msg.setReconsumeTimes`), so the handler sees how often it was tried. Copies
    /// the record header, topic and property string into a new buffer.
    pub fn set_reconsume_times(&mut self, times: i32) {
        let at = self.reconsume_times_at();
        let topic = self.topic().as_bytes().to_vec();
        let properties = self.raw_properties().to_vec();
        let mut header = self.header().to_vec();
        if let Some(field) = header.get_mut(at..at + 4) {
            field.copy_from_slice(&times.to_be_bytes());
        }
        let mut record = Vec::with_capacity(header.len() + topic.len() + properties.len());
        record.extend_from_slice(&header);
        *self = Self::rebuilt(record, self.body_bytes(), &topic, &properties);
    }

    /// Replaces the queue offset, as Java's consumer does for a static topic's logical queue
    /// (`PullAPIWrapper.processPullResult` adds the pull response's `offsetDelta`). Copies the
    /// record header, topic and property string into a new buffer.
    pub fn set_queue_offset(&mut self, offset: i64) {
        let topic = self.topic().as_bytes().to_vec();
        let properties = self.raw_properties().to_vec();
        let mut header = self.header().to_vec();
        if let Some(field) = header.get_mut(layout::QUEUE_OFFSET..layout::QUEUE_OFFSET + 8) {
            field.copy_from_slice(&offset.to_be_bytes());
        }
        let mut record = Vec::with_capacity(header.len() + topic.len() + properties.len());
        record.extend_from_slice(&header);
        *self = Self::rebuilt(record, self.body_bytes(), &topic, &properties);
    }

    /// Removes property `name`, returning whether it was there. Rewrites the record when it
    /// was.
    pub fn remove_property(&mut self, name: &str) -> bool {
        if self.property(name).is_none() {
            return false;
        }
        let properties = self.properties_without(name);
        let topic = self.topic().as_bytes().to_vec();
        self.rebuild(&topic, &properties);
        true
    }

    /// The topic. For a retry delivery this is `%RETRY%<group>` until [`Message::set_topic`].
    pub fn topic(&self) -> &str {
        std::str::from_utf8(self.topic_bytes())
            .expect("the topic was validated as UTF-8 at decode, or came from a String")
    }

    /// Whether the topic is `topic`. A byte comparison, without [`Message::topic`]'s UTF-8
    /// check: the consumer asks it of every message it pulls (is this a retry delivery?).
    pub fn topic_is(&self, topic: &str) -> bool {
        // Most often of another length: answered without finding the bytes.
        self.topic_len as usize == topic.len() && self.topic_bytes() == topic.as_bytes()
    }

    fn topic_bytes(&self) -> &[u8] {
        let start = self.topic_start as usize;
        self.record
            .get(start..start + self.topic_len as usize)
            .expect("the topic range was checked against the record at decode or rebuild")
    }

    /// The queue id within the broker.
    pub fn queue_id(&self) -> i32 {
        i32::from_be_bytes(self.field(layout::QUEUE_ID))
    }

    /// The logical offset in the consume queue.
    pub fn queue_offset(&self) -> i64 {
        i64::from_be_bytes(self.field(layout::QUEUE_OFFSET))
    }

    /// The physical offset in the broker's commit log (`PHYSICALOFFSET`), which
    /// `CONSUMER_SEND_MSG_BACK` names the message by.
    pub fn commit_log_offset(&self) -> i64 {
        i64::from_be_bytes(self.field(layout::PHYSICAL_OFFSET))
    }

    /// The message `sysFlag` as stored (see [`sys_flag`]). Unlike Java, bit 0 stays set when
    /// the body was decompressed; [`Message::stored_compression`] reads it.
    pub fn sys_flag(&self) -> i32 {
        i32::from_be_bytes(self.field(layout::SYS_FLAG))
    }

    /// The producer's user flag.
    pub fn flag(&self) -> i32 {
        i32::from_be_bytes(self.field(layout::FLAG))
    }

    /// `BODYCRC`: CRC-32 of the body as stored, masked `& 0x7FFFFFFF`.
    pub fn body_crc(&self) -> i32 {
        i32::from_be_bytes(self.field(layout::BODY_CRC))
    }

    /// The producer's clock when the message was created, in ms since the epoch.
    pub fn born_timestamp(&self) -> i64 {
        i64::from_be_bytes(self.field(layout::BORN_TIMESTAMP))
    }

    /// The producer's address as the broker saw it.
    pub fn born_host(&self) -> SocketAddr {
        self.host(layout::BORN_HOST, sys_flag::BORN_HOST_V6)
    }

    /// The broker's clock when the message was stored, in ms since the epoch.
    pub fn store_timestamp(&self) -> i64 {
        i64::from_be_bytes(self.field(self.store_timestamp_at()))
    }

    /// The storing broker's address.
    pub fn store_host(&self) -> SocketAddr {
        self.host(self.store_host_at(), sys_flag::STORE_HOST_V6)
    }

    /// How many times the message was sent back for redelivery.
    pub fn reconsume_times(&self) -> i32 {
        i32::from_be_bytes(self.field(self.reconsume_times_at()))
    }

    /// `PREPARED_TRANSACTION_OFFSET` (transactional messages).
    pub fn prepared_transaction_offset(&self) -> i64 {
        let at = self.reconsume_times_at() + layout::PREPARED_AFTER_RECONSUME;
        i64::from_be_bytes(self.field(at))
    }

    /// The body, decompressed.
    pub fn body(&self) -> &[u8] {
        match &self.body {
            Body::InRecord { start, len } => {
                let start = *start as usize;
                self.record
                    .get(start..start + *len as usize)
                    .expect("the body range was checked against the record at decode")
            }
            Body::Own(body) => body,
        }
    }

    /// The body as [`Bytes`] sharing the message's buffer (no copy), to keep beyond the
    /// message.
    pub fn body_bytes(&self) -> Bytes {
        match &self.body {
            Body::InRecord { start, len } => {
                let start = *start as usize;
                self.record.slice(start..start + *len as usize)
            }
            Body::Own(body) => body.clone(),
        }
    }

    /// The length of the body as stored, before decompression.
    pub fn stored_body_len(&self) -> usize {
        let at = self.reconsume_times_at() + layout::BODY_LENGTH_AFTER_RECONSUME;
        let len = i32::from_be_bytes(self.field(at));
        usize::try_from(len).expect("the body length was checked non-negative at decode")
    }

    /// How the body was stored, when it was compressed (`sysFlag` bit 0 and bits 8-10).
    pub fn stored_compression(&self) -> Option<Compression> {
        Compression::from_sys_flag(self.sys_flag()).ok().flatten()
    }

    /// The record format the message was stored in.
    pub fn magic_code(&self) -> MagicCode {
        MagicCode::from_value(i32::from_be_bytes(self.field(layout::MAGIC_CODE)))
            .expect("the magic code was checked at decode")
    }

    /// The properties, parsed as Java's `MessageDecoder.string2messageProperties` does.
    pub fn properties(&self) -> Properties<'_> {
        Properties::new(self.raw_properties())
    }

    /// The property string as stored (§5.5 of `remoting-protocol.md`).
    pub fn raw_properties(&self) -> &[u8] {
        self.record
            .get(self.properties_start as usize..)
            .expect("the properties range was checked against the record at decode or rebuild")
    }

    /// The value of property `name`; when it occurs more than once the last wins, as Java's
    /// `HashMap.put` makes it.
    pub fn property(&self, name: &str) -> Option<&str> {
        properties::find(self.raw_properties(), name)
    }

    /// The tag (`TAGS`), the unit of broker-side tag filtering.
    pub fn tags(&self) -> Option<&str> {
        self.property(property::TAGS)
    }

    /// The business keys as sent (`KEYS`): space separated, like Java's `getKeys()`.
    pub fn keys(&self) -> Option<&str> {
        self.property(property::KEYS)
    }

    /// The business keys one by one: [`Message::keys`] split on spaces
    /// (`MessageConst.KEY_SEPARATOR`), empty pieces skipped.
    pub fn key_list(&self) -> impl Iterator<Item = &str> + '_ {
        self.keys()
            .unwrap_or_default()
            .split(property::KEY_SEPARATOR)
            .filter(|key| !key.is_empty())
    }

    /// The producer-assigned id (`UNIQ_KEY`), kept across retries.
    pub fn unique_key(&self) -> Option<&str> {
        self.property(property::UNIQ_KEY)
    }

    /// The id a Java consumer shows as `msgId`: [`Message::unique_key`] when present, else
    /// [`Message::offset_msg_id`] (`MessageClientExt.getMsgId`).
    pub fn msg_id(&self) -> String {
        match self.unique_key() {
            Some(key) => key.to_owned(),
            None => self.offset_msg_id(),
        }
    }

    /// The broker-assigned id: upper-case hex of the store host's address bytes, its port as an
    /// `i32` and the commit-log offset as an `i64`, big-endian (`MessageDecoder.createMessageId`).
    /// 32 characters for an IPv4 store host, 56 for IPv6.
    pub fn offset_msg_id(&self) -> String {
        let at = self.store_host_at();
        let host = self
            .record
            .get(at..at + self.host_len(sys_flag::STORE_HOST_V6))
            .expect("the store host was read at decode, so the record holds it");
        let mut id = String::with_capacity(2 * (16 + 4 + 8));
        push_hex(&mut id, host);
        push_hex(&mut id, &self.field::<8>(layout::PHYSICAL_OFFSET));
        id
    }

    /// The `N` bytes at `at` of the header.
    fn field<const N: usize>(&self, at: usize) -> [u8; N] {
        self.record
            .get(at..)
            .and_then(<[u8]>::first_chunk::<N>)
            .copied()
            .expect("the whole header was read at decode, and rebuilds copy it whole")
    }

    fn host_len(&self, v6_bit: i32) -> usize {
        if self.sys_flag() & v6_bit != 0 {
            16 + 4
        } else {
            4 + 4
        }
    }

    fn store_timestamp_at(&self) -> usize {
        layout::BORN_HOST + self.host_len(sys_flag::BORN_HOST_V6)
    }

    fn store_host_at(&self) -> usize {
        self.store_timestamp_at() + 8
    }

    fn reconsume_times_at(&self) -> usize {
        self.store_host_at() + self.host_len(sys_flag::STORE_HOST_V6)
    }

    /// The header: everything before the body.
    fn header(&self) -> &[u8] {
        let end = self.reconsume_times_at() + layout::BODY_LENGTH_AFTER_RECONSUME + 4;
        self.record
            .get(..end)
            .expect("the whole header was read at decode")
    }

    fn host(&self, at: usize, v6_bit: i32) -> SocketAddr {
        let port = |port: [u8; 4]| {
            u16::try_from(i32::from_be_bytes(port)).expect("ports were range-checked at decode")
        };
        if self.sys_flag() & v6_bit != 0 {
            let ip = self.field::<16>(at);
            let port = port(self.field(at + 16));
            SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(ip), port, 0, 0))
        } else {
            let ip = self.field::<4>(at);
            let port = port(self.field(at + 4));
            SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(ip), port))
        }
    }

    fn properties_without(&self, name: &str) -> Vec<u8> {
        let raw = self.raw_properties();
        let mut kept = Vec::with_capacity(raw.len() + 32);
        for segment in raw.split(|&b| b == properties::PROPERTY_SEPARATOR) {
            let named = properties::pair(segment).is_some_and(|(key, _)| key == name.as_bytes());
            if !named && !segment.is_empty() {
                kept.extend_from_slice(segment);
                kept.push(properties::PROPERTY_SEPARATOR);
            }
        }
        kept
    }

    /// Replaces the record with this one's header followed by `topic` and `properties`.
    fn rebuild(&mut self, topic: &[u8], properties: &[u8]) {
        let header = self.header();
        let mut record = Vec::with_capacity(header.len() + topic.len() + properties.len());
        record.extend_from_slice(header);
        *self = Self::rebuilt(record, self.body_bytes(), topic, properties);
    }

    /// The message of a record [`decode`] validated, `record` holding exactly its bytes, with
    /// its body (decompressed when it was stored compressed).
    #[inline(always)]
    fn from_validated(record: Bytes, body: Option<Bytes>, layout: RecordLayout) -> Self {
        let body = match body {
            Some(decompressed) => Body::Own(decompressed),
            None => Body::InRecord {
                start: layout.body_start,
                len: layout.body_len,
            },
        };
        Self {
            record,
            body,
            topic_start: layout.topic_start,
            topic_len: layout.topic_len,
            properties_start: layout.properties_start,
        }
    }

    /// Inner message `index` of this inner batch record (`MessageDecoder.decodeMessage(MessageExt,
    /// List)`): its own body, flag, properties and `BODYCRC`; the outer topic, queue, hosts,
    /// timestamps, `sysFlag`, reconsume times and commit-log offset; queue offset
    /// `outer + index`; and prepared transaction offset 0, which Java never copies.
    fn inner_batch_message(&self, index: i64, entry: BatchEntry) -> Self {
        let mut header = self.header().to_vec();
        let reconsume_at = self.reconsume_times_at();
        let body_len = i32::try_from(entry.body.len())
            .expect("an entry's body length was read from an i32 field");
        let patches: [(usize, &[u8]); 5] = [
            (
                layout::QUEUE_OFFSET,
                &self.queue_offset().wrapping_add(index).to_be_bytes(),
            ),
            (layout::FLAG, &entry.flag.to_be_bytes()),
            (layout::BODY_CRC, &entry.body_crc.to_be_bytes()),
            (
                reconsume_at + layout::PREPARED_AFTER_RECONSUME,
                &0_i64.to_be_bytes(),
            ),
            (
                reconsume_at + layout::BODY_LENGTH_AFTER_RECONSUME,
                &body_len.to_be_bytes(),
            ),
        ];
        for (at, value) in patches {
            header
                .get_mut(at..at + value.len())
                .expect("every patched field lies inside the header")
                .copy_from_slice(value);
        }
        let topic = self.topic().as_bytes();
        Self::rebuilt(header, entry.body, topic, &entry.properties)
    }

    /// A message from a header buffer (whose fields the caller may have patched), a body, and
    /// the topic and properties to append.
    fn rebuilt(mut record: Vec<u8>, body: Bytes, topic: &[u8], properties: &[u8]) -> Self {
        let offset = |at: usize| u32::try_from(at).expect("a rebuilt record is far below 4 GiB");
        let topic_start = offset(record.len());
        record.extend_from_slice(topic);
        let properties_start = offset(record.len());
        record.extend_from_slice(properties);
        Self {
            record: Bytes::from(record),
            body: Body::Own(body),
            topic_start,
            topic_len: offset(topic.len()),
            properties_start,
        }
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("topic", &self.topic())
            .field("queue_id", &self.queue_id())
            .field("queue_offset", &self.queue_offset())
            .field("commit_log_offset", &self.commit_log_offset())
            .field("sys_flag", &format_args!("{:#x}", self.sys_flag()))
            .field("flag", &self.flag())
            .field("body_crc", &self.body_crc())
            .field("born_timestamp", &self.born_timestamp())
            .field("born_host", &self.born_host())
            .field("store_timestamp", &self.store_timestamp())
            .field("store_host", &self.store_host())
            .field("reconsume_times", &self.reconsume_times())
            .field(
                "prepared_transaction_offset",
                &self.prepared_transaction_offset(),
            )
            .field("magic", &self.magic_code())
            .field(
                "properties",
                &fmt::from_fn(|f| f.debug_map().entries(self.properties()).finish()),
            )
            .field("body_len", &self.body().len())
            .field("stored_body_len", &self.stored_body_len())
            .finish()
    }
}

/// Where the topic and property string of a validated record are, in bytes from its start.
/// `u32` is enough: a record is at most `i32::MAX` bytes (`TOTALSIZE`). The property string
/// ends the record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RecordLayout {
    /// The stored body (used when it was not compressed).
    body_start: u32,
    body_len: u32,
    topic_start: u32,
    topic_len: u32,
    properties_start: u32,
}

/// Upper-case hex, as `UtilAll.bytes2string` writes it.
fn push_hex(out: &mut String, bytes: &[u8]) {
    fn digit(nibble: u8) -> char {
        char::from(if nibble < 10 {
            b'0' + nibble
        } else {
            b'A' + nibble - 10
        })
    }
    for &b in bytes {
        out.push(digit(b >> 4));
        out.push(digit(b & 0xF));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_codes_match_java_constants() {
        assert_eq!(MAGIC_CODE_V1, -626_843_481);
        assert_eq!(MAGIC_CODE_V2, -626_843_477);
        assert_eq!(MagicCode::for_topic(&"t".repeat(127)), MagicCode::V1);
        assert_eq!(MagicCode::for_topic(&"t".repeat(128)), MagicCode::V2);
    }

    #[test]
    fn hex_is_upper_case() {
        let mut s = String::new();
        push_hex(&mut s, &[0x00, 0xAB, 0x7f]);
        assert_eq!(s, "00AB7F");
    }
}
