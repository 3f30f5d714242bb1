//! Encodings: the §5.8 batch body a producer sends, and the stored record a broker writes.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use bytes::{BufMut, Bytes, BytesMut};

use super::error::MessageEncodeError;
use super::properties::encode_properties;
use super::{MagicCode, property, sys_flag};

/// The largest property string a record can carry: its length is an `i16`, and the broker
/// rejects longer ones (`MessageExtEncoder`).
const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;
/// The largest `TOTALSIZE`.
const MAX_RECORD_LEN: usize = i32::MAX as usize;
/// `MixAll.RETRY_GROUP_TOPIC_PREFIX`.
const RETRY_TOPIC_PREFIX: &str = "%RETRY%";

/// A message a producer sends (Java's `Message`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutgoingMessage {
    /// The topic.
    pub topic: String,
    /// The body, uncompressed (compress with [`compress_body`](super::compress_body) and send
    /// the [`Compression::sys_flag`](super::Compression::sys_flag) for single sends; batches are
    /// never compressed).
    pub body: Bytes,
    /// The user flag, stored as is.
    pub flag: i32,
    /// The properties, including `TAGS`, `KEYS`, `UNIQ_KEY` and `WAIT` as they apply. Ordered so
    /// encoding is deterministic.
    pub properties: BTreeMap<String, String>,
}

impl OutgoingMessage {
    /// A message with no properties.
    pub fn new(topic: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Self {
            topic: topic.into(),
            body: body.into(),
            flag: 0,
            properties: BTreeMap::new(),
        }
    }

    /// Sets property `name`. See [`encode_properties`] for the characters it may not contain.
    pub fn set_property(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.properties.insert(name.into(), value.into());
    }

    /// Sets the tag (`TAGS`).
    pub fn set_tags(&mut self, tags: impl Into<String>) {
        self.set_property(property::TAGS, tags);
    }

    /// Sets the business keys (`KEYS`) from one space-separated string, like Java's
    /// `setKeys(String)`.
    pub fn set_keys(&mut self, keys: impl Into<String>) {
        self.set_property(property::KEYS, keys);
    }

    /// Sets the business keys (`KEYS`) from a list, joined with spaces like Java's
    /// `setKeys(Collection<String>)`.
    pub fn set_key_list<I>(&mut self, keys: I)
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut joined = String::new();
        for key in keys {
            if !joined.is_empty() {
                joined.push(property::KEY_SEPARATOR);
            }
            joined.push_str(key.as_ref());
        }
        self.set_keys(joined);
    }

    /// The value of property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
    }

    /// The properties encoded for the wire (the send header's `properties`).
    pub fn encoded_properties(&self) -> String {
        encode_properties(&self.properties)
    }
}

/// Encodes a `SEND_BATCH_MESSAGE` body (`MessageBatch.encode`, `MessageDecoder.encodeMessages`):
/// per message `TOTALSIZE | MAGICCODE 0 | BODYCRC 0 | FLAG | body len + body | properties
/// len + properties`, each message with its own properties.
///
/// Checks the rules Java's `MessageBatch.generateFromList` enforces: at least one message, one
/// topic that is not a retry topic, no `DELAY`, and the same `WAIT`. Each message should carry
/// its own `UNIQ_KEY`; the request header carries the batch's topic and a batch-level one.
pub fn encode_batch(messages: &[OutgoingMessage]) -> Result<Bytes, MessageEncodeError> {
    let first = messages.first().ok_or(MessageEncodeError::EmptyBatch)?;
    if first.topic.starts_with(RETRY_TOPIC_PREFIX) {
        return Err(MessageEncodeError::RetryTopicInBatch {
            topic: first.topic.clone(),
        });
    }
    let wait = |m: &OutgoingMessage| m.property(property::WAIT) != Some("false");
    let mut out = BytesMut::new();
    for (index, message) in messages.iter().enumerate() {
        if message.topic != first.topic {
            return Err(MessageEncodeError::MixedTopics {
                index,
                topic: message.topic.clone(),
                expected: first.topic.clone(),
            });
        }
        if message.properties.contains_key(property::DELAY) {
            return Err(MessageEncodeError::DelayInBatch { index });
        }
        if wait(message) != wait(first) {
            return Err(MessageEncodeError::MixedWaitStoreMsgOk { index });
        }
        let properties = message.encoded_properties();
        let properties_len = length_within(properties.len(), MAX_PROPERTIES_LEN, "properties")?;
        let total = 4 + 4 + 4 + 4 + 4 + message.body.len() + 2 + properties.len();
        let total = length_within(total, MAX_RECORD_LEN, "batch message")?;
        out.reserve(total);
        out.put_u32(total as u32);
        out.put_i32(0);
        out.put_i32(0);
        out.put_i32(message.flag);
        out.put_u32(message.body.len() as u32);
        out.put_slice(&message.body);
        out.put_u16(properties_len as u16);
        out.put_slice(properties.as_bytes());
    }
    Ok(out.freeze())
}

/// A record as a broker stores it (`MessageExtEncoder`), for [`encode_stored`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMessage {
    /// Which record format to write; [`MagicCode::for_topic`] gives what a 5.x broker picks.
    pub magic: MagicCode,
    /// `QUEUEID`.
    pub queue_id: i32,
    /// `FLAG`, the producer's user flag.
    pub flag: i32,
    /// `QUEUEOFFSET`.
    pub queue_offset: i64,
    /// `PHYSICALOFFSET`.
    pub commit_log_offset: i64,
    /// `SYSFLAG`. Bits 4 and 5 are written from the address families of the hosts, whatever
    /// they say here; the compression bits must describe [`StoredMessage::body`].
    pub sys_flag: i32,
    /// `BORNTIMESTAMP`, ms.
    pub born_timestamp: i64,
    /// `BORNHOST`.
    pub born_host: SocketAddr,
    /// `STORETIMESTAMP`, ms.
    pub store_timestamp: i64,
    /// `STOREHOST`.
    pub store_host: SocketAddr,
    /// `RECONSUMETIMES`.
    pub reconsume_times: i32,
    /// `PREPARED_TRANSACTION_OFFSET`.
    pub prepared_transaction_offset: i64,
    /// The body as stored: compressed when the `sysFlag` says so.
    pub body: Bytes,
    /// The topic.
    pub topic: String,
    /// The property string, as [`encode_properties`] writes it.
    pub properties: String,
}

impl Default for StoredMessage {
    /// Everything zero or empty, v1 magic, both hosts `0.0.0.0:0`.
    fn default() -> Self {
        let nowhere = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        Self {
            magic: MagicCode::V1,
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            commit_log_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: nowhere,
            store_timestamp: 0,
            store_host: nowhere,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: Bytes::new(),
            topic: String::new(),
            properties: String::new(),
        }
    }
}

impl StoredMessage {
    /// The `TOTALSIZE` the record will have.
    pub fn encoded_len(&self) -> usize {
        let host = |addr: &SocketAddr| if addr.is_ipv6() { 16 + 4 } else { 4 + 4 };
        let topic_len_field = match self.magic {
            MagicCode::V1 => 1,
            MagicCode::V2 => 2,
        };
        4 + 4
            + 4
            + 4
            + 4
            + 8
            + 8
            + 4
            + 8
            + host(&self.born_host)
            + 8
            + host(&self.store_host)
            + 4
            + 8
            + 4
            + self.body.len()
            + topic_len_field
            + self.topic.len()
            + 2
            + self.properties.len()
    }
}

/// Appends `message` to `dst` as a stored record, computing `TOTALSIZE` and `BODYCRC`
/// (`UtilAll.crc32`: CRC-32 of the body as stored, `& 0x7FFFFFFF`). On error `dst` is
/// unchanged.
pub fn encode_stored(
    message: &StoredMessage,
    dst: &mut BytesMut,
) -> Result<(), MessageEncodeError> {
    let topic_len = length_within(message.topic.len(), message.magic.max_topic_len(), "topic")?;
    let properties_len = length_within(message.properties.len(), MAX_PROPERTIES_LEN, "properties")?;
    let total = length_within(message.encoded_len(), MAX_RECORD_LEN, "record")?;
    let mut flags = message.sys_flag & !(sys_flag::BORN_HOST_V6 | sys_flag::STORE_HOST_V6);
    if message.born_host.is_ipv6() {
        flags |= sys_flag::BORN_HOST_V6;
    }
    if message.store_host.is_ipv6() {
        flags |= sys_flag::STORE_HOST_V6;
    }
    let crc = crc32fast::hash(&message.body) & 0x7FFF_FFFF;

    dst.reserve(total);
    dst.put_u32(total as u32);
    dst.put_i32(message.magic.value());
    dst.put_u32(crc);
    dst.put_i32(message.queue_id);
    dst.put_i32(message.flag);
    dst.put_i64(message.queue_offset);
    dst.put_i64(message.commit_log_offset);
    dst.put_i32(flags);
    dst.put_i64(message.born_timestamp);
    put_host(dst, &message.born_host);
    dst.put_i64(message.store_timestamp);
    put_host(dst, &message.store_host);
    dst.put_i32(message.reconsume_times);
    dst.put_i64(message.prepared_transaction_offset);
    // The record length check above bounds the body length too.
    dst.put_u32(message.body.len() as u32);
    dst.put_slice(&message.body);
    match message.magic {
        MagicCode::V1 => dst.put_u8(topic_len as u8),
        MagicCode::V2 => dst.put_u16(topic_len as u16),
    }
    dst.put_slice(message.topic.as_bytes());
    dst.put_u16(properties_len as u16);
    dst.put_slice(message.properties.as_bytes());
    Ok(())
}

fn put_host(dst: &mut BytesMut, addr: &SocketAddr) {
    match addr {
        SocketAddr::V4(v4) => dst.put_slice(&v4.ip().octets()),
        SocketAddr::V6(v6) => dst.put_slice(&v6.ip().octets()),
    }
    dst.put_i32(i32::from(addr.port()));
}

fn length_within(
    length: usize,
    max: usize,
    field: &'static str,
) -> Result<usize, MessageEncodeError> {
    if length > max {
        return Err(MessageEncodeError::TooLong { field, length, max });
    }
    Ok(length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_entry_layout_matches_java_encode_message() {
        let mut m = OutgoingMessage::new("T", Bytes::from_static(b"ab"));
        m.flag = 7;
        m.set_tags("A");
        let body = encode_batch(&[m]).unwrap();
        let props = b"TAGS\x01A\x02";
        let mut expected = Vec::new();
        expected.extend_from_slice(&(22 + 2 + props.len() as u32).to_be_bytes());
        expected.extend_from_slice(&[0; 8]);
        expected.extend_from_slice(&7_i32.to_be_bytes());
        expected.extend_from_slice(&2_i32.to_be_bytes());
        expected.extend_from_slice(b"ab");
        expected.extend_from_slice(&(props.len() as u16).to_be_bytes());
        expected.extend_from_slice(props);
        assert_eq!(body, expected);
    }

    #[test]
    fn batch_rules() {
        let m = OutgoingMessage::new("T", "x");
        assert_eq!(encode_batch(&[]), Err(MessageEncodeError::EmptyBatch));
        let other = OutgoingMessage::new("U", "x");
        assert!(matches!(
            encode_batch(&[m.clone(), other]),
            Err(MessageEncodeError::MixedTopics { index: 1, .. })
        ));
        let mut delayed = m.clone();
        delayed.set_property(property::DELAY, "1");
        assert_eq!(
            encode_batch(&[m.clone(), delayed]),
            Err(MessageEncodeError::DelayInBatch { index: 1 })
        );
        let mut no_wait = m.clone();
        no_wait.set_property(property::WAIT, "false");
        assert_eq!(
            encode_batch(&[m.clone(), no_wait]),
            Err(MessageEncodeError::MixedWaitStoreMsgOk { index: 1 })
        );
        let retry = OutgoingMessage::new("%RETRY%g", "x");
        assert!(matches!(
            encode_batch(&[retry]),
            Err(MessageEncodeError::RetryTopicInBatch { .. })
        ));
    }

    #[test]
    fn keys_join_with_spaces() {
        let mut m = OutgoingMessage::new("T", "x");
        m.set_key_list(["k1", "k2"]);
        assert_eq!(m.property(property::KEYS), Some("k1 k2"));
        m.set_keys("solo");
        assert_eq!(m.property(property::KEYS), Some("solo"));
    }

    #[test]
    fn stored_lengths_are_checked() {
        let mut dst = BytesMut::from(&b"keep"[..]);
        let long_topic = StoredMessage {
            topic: "t".repeat(128),
            ..StoredMessage::default()
        };
        assert!(matches!(
            encode_stored(&long_topic, &mut dst),
            Err(MessageEncodeError::TooLong {
                field: "topic",
                length: 128,
                max: 127
            })
        ));
        let v2 = StoredMessage {
            magic: MagicCode::V2,
            ..long_topic
        };
        encode_stored(&v2, &mut BytesMut::new()).unwrap();
        let long_props = StoredMessage {
            properties: "p".repeat(32768),
            ..StoredMessage::default()
        };
        assert!(encode_stored(&long_props, &mut dst).is_err());
        assert_eq!(dst, &b"keep"[..]);
    }

    #[test]
    fn minimal_record_is_91_bytes() {
        let mut dst = BytesMut::new();
        encode_stored(&StoredMessage::default(), &mut dst).unwrap();
        assert_eq!(dst.len(), 91);
        assert_eq!(StoredMessage::default().encoded_len(), 91);
    }
}
