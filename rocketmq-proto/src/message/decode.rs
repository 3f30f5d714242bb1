//! Decoding stored records (`MessageDecoder.decode` / `decodesBatch`, `remoting-protocol.md`
//! §5.1) and §5.8 batch bodies.
//!
//! A body is decoded in one pass, record by record. A record in the common shape (IPv4 hosts,
//! uncompressed, not an inner batch) is read by [`fast_record`]: one bounds check for the fixed
//! header, constant offsets into it, and no error values. Anything else, including every
//! malformed record, goes through [`validate_record`], which reads field by field with checked
//! reads and says exactly what is wrong and where.

use bytes::Bytes;

use super::compression::{Compression, decompress_body};
use super::error::{MessageError, MessageErrorKind};
use super::properties::Properties;
use super::{MAGIC_CODE_V1, MAGIC_CODE_V2, MagicCode, Message, RecordLayout, layout, sys_flag};

/// The smallest record: v1 magic, IPv4 hosts, empty body, topic and properties.
const MIN_RECORD_LEN: usize = 91;
/// The fixed part of a §5.8 batch entry: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, body length and
/// properties length.
const BATCH_ENTRY_OVERHEAD: usize = 4 + 4 + 4 + 4 + 4 + 2;
/// The header of a record with IPv4 hosts: everything before the body.
const HEADER_V4: usize = 88;
/// Flags that send a record down [`validate_record`]: IPv6 hosts move the fields after them,
/// and compressed bodies and inner batches need more than slicing.
const SLOW_FLAGS: i32 =
    sys_flag::COMPRESSED | sys_flag::BORN_HOST_V6 | sys_flag::STORE_HOST_V6 | sys_flag::INNER_BATCH;
/// Where the ports are in a [`HEADER_V4`] header.
const BORN_PORT_V4: usize = layout::BORN_HOST + 4;
const STORE_PORT_V4: usize = layout::BORN_HOST + 8 + 8 + 4;
/// Where the body length is in a [`HEADER_V4`] header.
const BODY_LENGTH_V4: usize = HEADER_V4 - 4;
/// Validated records held before their messages are built: a pull batch is 32 by default
/// (`DefaultMQPushConsumer.pullBatchSize`).
const CHUNK: usize = 32;

/// How to decode stored records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Check each record's `BODYCRC` against its stored body. Off by default: Java's consumer
    /// does not check (`MessageDecoder.decode` only reads the field), and TCP already
    /// checksums the bytes.
    pub verify_crc: bool,
    /// The most bytes a compressed body may decompress to. A Java producer's body is at most
    /// 4 MiB (`DefaultMQProducer.maxMessageSize`) before compression; the default allows four
    /// times that.
    pub max_body_len: usize,
    /// Split 5.x inner batches (`sysFlag` `NEED_UNWRAP | INNER_BATCH`) into their messages, as
    /// `PullAPIWrapper.processPullResult` does. On by default.
    pub unwrap_inner_batches: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            verify_crc: false,
            max_body_len: 16 * 1024 * 1024,
            unwrap_inner_batches: true,
        }
    }
}

impl DecodeOptions {
    /// Sets [`DecodeOptions::verify_crc`].
    pub fn with_verify_crc(mut self, verify: bool) -> Self {
        self.verify_crc = verify;
        self
    }

    /// Sets [`DecodeOptions::max_body_len`].
    pub fn with_max_body_len(mut self, max: usize) -> Self {
        self.max_body_len = max;
        self
    }

    /// Sets [`DecodeOptions::unwrap_inner_batches`].
    pub fn with_unwrap_inner_batches(mut self, unwrap: bool) -> Self {
        self.unwrap_inner_batches = unwrap;
        self
    }
}

/// The messages of a body, and the first malformed record if there was one.
///
/// Java's `decodesBatch` stops at the first record that fails and silently drops the rest; this
/// keeps the records before it and says where it stopped.
#[derive(Clone, Debug, Default)]
pub struct DecodedBatch {
    /// The records decoded before the first bad one, in order (inner batches unwrapped).
    pub messages: Vec<Message>,
    /// The first bad record; the bytes from it on were not decoded.
    pub error: Option<MessageError>,
}

impl DecodedBatch {
    /// The messages, or the error when a record was bad.
    pub fn into_result(self) -> Result<Vec<Message>, MessageError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.messages),
        }
    }
}

/// Decodes a pull response body: records one after another until the body ends.
///
/// Each record's `TOTALSIZE` must equal the length of its fields, and steps to the next record.
/// Inner batches are split per [`DecodeOptions::unwrap_inner_batches`].
pub fn decode_messages(body: &Bytes, options: &DecodeOptions) -> DecodedBatch {
    let mut messages = Vec::with_capacity(estimate_records(body));
    let mut pending = Pending::new(body);
    // Cloned per record: `Hasher::new` detects the CPU's features each time.
    let crc = crc32fast::Hasher::new();
    let mut position = 0;
    let error = loop {
        if position >= body.len() {
            break None;
        }
        if let Some(span) = fast_record(body, position, options, &crc) {
            position += span.len as usize;
            pending.push(span, &mut messages);
            continue;
        }
        pending.flush(&mut messages);
        let record = match validate_record(body, position, options) {
            Ok(record) => record,
            Err(kind) => break Some(MessageError { position, kind }),
        };
        let len = record.len;
        if options.unwrap_inner_batches && sys_flag::is_inner_batch(record.sys_flag) {
            let outer = message_at(body, position, record);
            if let Err(kind) = unwrap_inner_batch(&outer, &mut messages) {
                break Some(MessageError { position, kind });
            }
        } else {
            messages.push(message_at(body, position, record));
        }
        position += len;
    };
    pending.flush(&mut messages);
    // The estimate can overshoot when the first record is much smaller than the rest.
    if messages.capacity() > 2 * messages.len() + 8 {
        messages.shrink_to_fit();
    }
    DecodedBatch { messages, error }
}

/// Decodes a buffer holding exactly one record, such as a `CONSUME_MESSAGE_DIRECTLY` body
/// (Java: `MessageDecoder.decode`). An inner batch is returned as the one outer record.
pub fn decode_message(record: &Bytes, options: &DecodeOptions) -> Result<Message, MessageError> {
    let at_start = |kind| MessageError { position: 0, kind };
    let validated = validate_record(record, 0, options).map_err(at_start)?;
    if validated.len != record.len() {
        return Err(at_start(MessageErrorKind::TrailingBytes {
            count: record.len() - validated.len,
        }));
    }
    Ok(message_at(record, 0, validated))
}

/// One message of a §5.8 batch body (`SEND_BATCH_MESSAGE`, or an inner batch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchEntry {
    /// The user flag.
    pub flag: i32,
    /// `BODYCRC` as written; producers write 0 and leave it to the broker.
    pub body_crc: i32,
    /// The body, a slice of the batch.
    pub body: Bytes,
    /// The property string, a slice of the batch.
    pub properties: Bytes,
}

impl BatchEntry {
    /// The properties, parsed as [`Message::properties`] parses them.
    pub fn property_pairs(&self) -> Properties<'_> {
        Properties::new(&self.properties)
    }
}

/// Splits a §5.8 batch body (`MessageDecoder.decodeMessages`), as a broker does with a
/// `SEND_BATCH_MESSAGE` body. The error's position is the bad entry's offset.
pub fn decode_batch(body: &Bytes) -> Result<Vec<BatchEntry>, MessageError> {
    let mut entries = Vec::new();
    let mut position = 0;
    while position < body.len() {
        let (entry, len) =
            decode_batch_entry(body, position).map_err(|kind| MessageError { position, kind })?;
        entries.push(entry);
        position += len;
    }
    Ok(entries)
}

/// Estimates the records from the first one's `TOTALSIZE`, to size the message vector: pull
/// batches are usually alike. Only a size a record could have counts, so garbage cannot
/// reserve more than the input justifies.
fn estimate_records(body: &[u8]) -> usize {
    match body
        .first_chunk::<4>()
        .map(|size| i32::from_be_bytes(*size))
    {
        Some(size) => match usize::try_from(size) {
            Ok(size) if size >= MIN_RECORD_LEN => body.len().div_ceil(size),
            _ => 0,
        },
        None => 0,
    }
}

/// A record [`fast_record`] validated, whose message is not built yet.
#[derive(Clone, Copy, Default)]
struct Span {
    start: usize,
    /// `TOTALSIZE`.
    len: u32,
    layout: RecordLayout,
}

/// Spans waiting for their messages. Building messages from a trusted-length iterator lets
/// them be written straight into the vector: built one at a time, each went through stack
/// temporaries whose copies stalled on store forwarding, most of the decoding time in profiles.
struct Pending<'a> {
    input: &'a Bytes,
    spans: [Span; CHUNK],
    len: usize,
}

impl<'a> Pending<'a> {
    fn new(input: &'a Bytes) -> Self {
        Self {
            input,
            spans: [Span::default(); CHUNK],
            len: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, span: Span, out: &mut Vec<Message>) {
        if self.len == CHUNK {
            self.flush(out);
        }
        if let Some(slot) = self.spans.get_mut(self.len) {
            *slot = span;
            self.len += 1;
        }
    }

    fn flush(&mut self, out: &mut Vec<Message>) {
        let input = self.input;
        let spans = self.spans.get(..self.len).unwrap_or_default();
        out.extend(spans.iter().map(|span| {
            let start = span.start;
            let record = input.slice(start..start + span.len as usize);
            Message::from_validated(record, None, span.layout)
        }));
        self.len = 0;
    }
}

/// The record at `start` of `input`, when it has the common shape (see [`SLOW_FLAGS`]) and is
/// well formed. `None` says only that [`validate_record`] must look at it: it accepts every
/// record this accepts, with the same result.
#[inline(always)]
fn fast_record(
    input: &Bytes,
    start: usize,
    options: &DecodeOptions,
    crc: &crc32fast::Hasher,
) -> Option<Span> {
    let rest = input.get(start..)?;
    let header: &[u8; HEADER_V4] = rest.first_chunk()?;
    let sys_flag = i32::from_be_bytes(field(header, layout::SYS_FLAG));
    let ports = i32::from_be_bytes(field(header, BORN_PORT_V4))
        | i32::from_be_bytes(field(header, STORE_PORT_V4));
    // Both ports are in 0..=65535 exactly when neither sets a bit above the 16th.
    if sys_flag & SLOW_FLAGS != 0 || ports as u32 > u32::from(u16::MAX) {
        return None;
    }
    let total = usize::try_from(i32::from_be_bytes(field(header, 0))).ok()?;
    let body_len = usize::try_from(i32::from_be_bytes(field(header, BODY_LENGTH_V4))).ok()?;
    let record = rest.get(..total)?;
    let body_end = HEADER_V4 + body_len;
    let magic = i32::from_be_bytes(field(header, layout::MAGIC_CODE));
    let (topic_start, topic_len) = if magic == MAGIC_CODE_V1 {
        // Java reads the length as a signed byte: 128..=255 are negative.
        let len = i8::from_be_bytes([*record.get(body_end)?]);
        (body_end + 1, usize::try_from(len).ok()?)
    } else if magic == MAGIC_CODE_V2 {
        let len = record.get(body_end..).and_then(<[u8]>::first_chunk::<2>)?;
        (
            body_end + 2,
            usize::try_from(i16::from_be_bytes(*len)).ok()?,
        )
    } else {
        return None;
    };
    let topic_end = topic_start + topic_len;
    let properties_len = record.get(topic_end..).and_then(<[u8]>::first_chunk::<2>)?;
    let properties_len = usize::try_from(i16::from_be_bytes(*properties_len)).ok()?;
    let properties_start = topic_end + 2;
    if properties_start + properties_len != total {
        return None;
    }
    let topic = record.get(topic_start..topic_end)?;
    if !topic.is_ascii() && std::str::from_utf8(topic).is_err() {
        return None;
    }
    if options.verify_crc {
        let stored_body = record.get(HEADER_V4..body_end)?;
        let body_crc = i32::from_be_bytes(field(header, layout::BODY_CRC));
        let mut hasher = crc.clone();
        hasher.update(stored_body);
        if (hasher.finalize() & 0x7FFF_FFFF) as i32 != body_crc {
            return None;
        }
    }
    // Every offset is at most `total`, a non-negative `i32`, so none truncates.
    let layout = RecordLayout {
        body_start: HEADER_V4 as u32,
        body_len: body_len as u32,
        topic_start: topic_start as u32,
        topic_len: topic_len as u32,
        properties_start: properties_start as u32,
    };
    Some(Span {
        start,
        len: total as u32,
        layout,
    })
}

/// The `N` bytes at constant offset `at` of a fixed-size header.
#[inline(always)]
fn field<const N: usize, const M: usize>(header: &[u8; M], at: usize) -> [u8; N] {
    *header
        .get(at..)
        .and_then(<[u8]>::first_chunk::<N>)
        .expect("field offsets are constants inside the fixed header")
}

/// A record that passed [`validate_record`].
struct Validated {
    /// `TOTALSIZE`, which equals the bytes the fields take.
    len: usize,
    layout: RecordLayout,
    sys_flag: i32,
    /// The body, when it was stored compressed.
    decompressed: Option<Bytes>,
}

fn message_at(input: &Bytes, start: usize, record: Validated) -> Message {
    let record_bytes = input.slice(start..start + record.len);
    Message::from_validated(record_bytes, record.decompressed, record.layout)
}

/// Checks the record starting at `start` of `input` field by field, as Java's
/// `MessageDecoder.decode` reads it, and decompresses its body if it was compressed.
#[inline(always)]
fn validate_record(
    input: &Bytes,
    start: usize,
    options: &DecodeOptions,
) -> Result<Validated, MessageErrorKind> {
    let mut cur = Cursor::new(input.get(start..).unwrap_or_default());
    let total_size = cur.i32("TOTALSIZE")?;
    if total_size < 0 {
        return Err(MessageErrorKind::NegativeLength {
            field: "TOTALSIZE",
            length: total_size,
        });
    }
    let magic_value = cur.i32("MAGICCODE")?;
    let Some(magic) = MagicCode::from_value(magic_value) else {
        return Err(MessageErrorKind::BadMagic(magic_value));
    };
    let body_crc = cur.i32("BODYCRC")?;
    // QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET: any value is valid; the accessors read them.
    cur.skip::<{ 4 + 4 + 8 + 8 }>("QUEUEID")?;
    let sys_flag = cur.i32("SYSFLAG")?;
    cur.skip::<8>("BORNTIMESTAMP")?;
    cur.host(sys_flag & sys_flag::BORN_HOST_V6 != 0, "BORNHOST")?;
    cur.skip::<8>("STORETIMESTAMP")?;
    cur.host(sys_flag & sys_flag::STORE_HOST_V6 != 0, "STOREHOST")?;
    cur.skip::<{ 4 + 8 }>("RECONSUMETIMES")?;
    let body_len = cur.len_i32("BODYLENGTH")?;
    let body_start = cur.offset();
    let stored_body = cur.take(body_len, "BODY")?;
    let topic_len = match magic {
        // Java reads the v1 length with `ByteBuffer.get()`: a signed byte, so 128..=255 fail.
        MagicCode::V1 => cur.len_i8("TOPICLENGTH")?,
        MagicCode::V2 => cur.len_i16("TOPICLENGTH")?,
    };
    let topic_start = cur.offset();
    let topic = cur.take(topic_len, "TOPIC")?;
    // `is_ascii` first: topics are ASCII in practice, and it inlines where `from_utf8` does not.
    if !topic.is_ascii() && std::str::from_utf8(topic).is_err() {
        return Err(MessageErrorKind::BadUtf8 { field: "TOPIC" });
    }
    let properties_len = cur.len_i16("PROPERTIESLENGTH")?;
    let properties_start = cur.offset();
    cur.take(properties_len, "PROPERTIES")?;
    let len = cur.offset();
    // Java never reads TOTALSIZE while decoding; checking it catches a record whose fields
    // disagree with its framing instead of misreading everything after it.
    if usize::try_from(total_size) != Ok(len) {
        return Err(MessageErrorKind::TotalSizeMismatch {
            total_size,
            parsed: len,
        });
    }
    if options.verify_crc {
        // `UtilAll.crc32` masks the sign bit so the value fits a positive int.
        let actual = (crc32fast::hash(stored_body) & 0x7FFF_FFFF) as i32;
        if actual != body_crc {
            return Err(MessageErrorKind::CrcMismatch {
                expected: body_crc,
                actual,
            });
        }
    }
    let decompressed = match Compression::from_sys_flag(sys_flag) {
        Ok(None) => None,
        Ok(Some(compression)) => Some(decompress_body(
            stored_body,
            compression,
            options.max_body_len,
        )?),
        Err(value) => return Err(MessageErrorKind::UnknownCompression(value)),
    };
    // Every offset is at most `len`, which equals a non-negative `i32`, so none truncates.
    let layout = RecordLayout {
        body_start: body_start as u32,
        body_len: body_len as u32,
        topic_start: topic_start as u32,
        topic_len: topic_len as u32,
        properties_start: properties_start as u32,
    };
    Ok(Validated {
        len,
        layout,
        sys_flag,
        decompressed,
    })
}

/// Splits an inner batch into `out` (`MessageDecoder.decodeMessage(MessageExt, List)`): each
/// inner message keeps its own body, flag, properties and `BODYCRC`, takes the outer record's
/// topic, queue, hosts, timestamps, `sysFlag`, reconsume times and commit-log offset, and gets
/// queue offset `outer + i`. Java leaves the prepared-transaction offset 0.
///
/// Nothing is added when an inner message is malformed: the outer record is reported whole.
fn unwrap_inner_batch(outer: &Message, out: &mut Vec<Message>) -> Result<(), MessageErrorKind> {
    let first = out.len();
    let mut position = 0;
    let mut index = 0_i64;
    let body = outer.body_bytes();
    while position < body.len() {
        let (entry, len) = match decode_batch_entry(&body, position) {
            Ok(decoded) => decoded,
            Err(kind) => {
                out.truncate(first);
                return Err(MessageErrorKind::InnerBatch {
                    offset: position,
                    kind: Box::new(kind),
                });
            }
        };
        out.push(outer.inner_batch_message(index, entry));
        position += len;
        index += 1;
    }
    Ok(())
}

/// Decodes the §5.8 entry at `start`. `MAGICCODE` is not checked: producers write 0 and Java's
/// `decodeMessage(ByteBuffer)` skips it.
fn decode_batch_entry(
    input: &Bytes,
    start: usize,
) -> Result<(BatchEntry, usize), MessageErrorKind> {
    let mut cur = Cursor::new(input.get(start..).unwrap_or_default());
    let total_size = cur.i32("TOTALSIZE")?;
    if total_size < 0 {
        return Err(MessageErrorKind::NegativeLength {
            field: "TOTALSIZE",
            length: total_size,
        });
    }
    cur.i32("MAGICCODE")?;
    let body_crc = cur.i32("BODYCRC")?;
    let flag = cur.i32("FLAG")?;
    let body_len = cur.len_i32("BODYLENGTH")?;
    let body_start = cur.offset();
    cur.take(body_len, "BODY")?;
    let properties_len = cur.len_i16("PROPERTIESLENGTH")?;
    let properties_start = cur.offset();
    cur.take(properties_len, "PROPERTIES")?;
    let len = cur.offset();
    debug_assert_eq!(len, BATCH_ENTRY_OVERHEAD + body_len + properties_len);
    if usize::try_from(total_size) != Ok(len) {
        return Err(MessageErrorKind::TotalSizeMismatch {
            total_size,
            parsed: len,
        });
    }
    let entry = BatchEntry {
        flag,
        body_crc,
        body: input.slice(start + body_start..start + body_start + body_len),
        properties: input.slice(start + properties_start..start + len),
    };
    Ok((entry, len))
}

/// Checked big-endian reads over one record.
struct Cursor<'a> {
    rest: &'a [u8],
    len: usize,
}

impl<'a> Cursor<'a> {
    fn new(input: &'a [u8]) -> Self {
        Self {
            rest: input,
            len: input.len(),
        }
    }

    /// Bytes read so far.
    #[inline]
    fn offset(&self) -> usize {
        self.len - self.rest.len()
    }

    #[inline]
    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], MessageErrorKind> {
        let Some((head, rest)) = self.rest.split_first_chunk::<N>() else {
            return Err(truncated(field, N, self.rest.len()));
        };
        self.rest = rest;
        Ok(*head)
    }

    #[inline]
    fn i32(&mut self, field: &'static str) -> Result<i32, MessageErrorKind> {
        self.array(field).map(i32::from_be_bytes)
    }

    #[inline]
    fn len_i32(&mut self, field: &'static str) -> Result<usize, MessageErrorKind> {
        let length = self.i32(field)?;
        non_negative(length, field)
    }

    #[inline]
    fn len_i16(&mut self, field: &'static str) -> Result<usize, MessageErrorKind> {
        let length = i16::from_be_bytes(self.array(field)?);
        non_negative(i32::from(length), field)
    }

    #[inline]
    fn len_i8(&mut self, field: &'static str) -> Result<usize, MessageErrorKind> {
        let length = i8::from_be_bytes(self.array(field)?);
        non_negative(i32::from(length), field)
    }

    /// An address of 4 or 16 bytes, then the port as an `i32`
    /// (`MessageExt.socketAddress2ByteBuffer`); Java's `InetSocketAddress` rejects ports
    /// outside `0..=65535`.
    #[inline]
    fn host(&mut self, v6: bool, field: &'static str) -> Result<(), MessageErrorKind> {
        if v6 {
            self.skip::<16>(field)?;
        } else {
            self.skip::<4>(field)?;
        }
        let port = self.i32(field)?;
        if u16::try_from(port).is_err() {
            return Err(bad_port(field, port));
        }
        Ok(())
    }

    #[inline]
    fn skip<const N: usize>(&mut self, field: &'static str) -> Result<(), MessageErrorKind> {
        self.array::<N>(field).map(drop)
    }

    #[inline]
    fn take(&mut self, len: usize, field: &'static str) -> Result<&'a [u8], MessageErrorKind> {
        let Some((head, rest)) = self.rest.split_at_checked(len) else {
            return Err(truncated(field, len, self.rest.len()));
        };
        self.rest = rest;
        Ok(head)
    }
}

// Errors are built out of line so the read path stays small enough to inline.
#[cold]
fn truncated(field: &'static str, needed: usize, available: usize) -> MessageErrorKind {
    MessageErrorKind::Truncated {
        field,
        needed,
        available,
    }
}

#[inline]
fn non_negative(length: i32, field: &'static str) -> Result<usize, MessageErrorKind> {
    match usize::try_from(length) {
        Ok(length) => Ok(length),
        Err(_) => Err(negative(field, length)),
    }
}

#[cold]
fn bad_port(field: &'static str, port: i32) -> MessageErrorKind {
    MessageErrorKind::BadPort { field, port }
}

#[cold]
fn negative(field: &'static str, length: i32) -> MessageErrorKind {
    MessageErrorKind::NegativeLength { field, length }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::message::{StoredMessage, encode_stored};

    fn records(count: usize) -> Bytes {
        let mut out = BytesMut::new();
        for i in 0..count {
            let stored = StoredMessage {
                queue_offset: i as i64,
                topic: "t".into(),
                body: Bytes::from(vec![b'b'; i]),
                ..StoredMessage::default()
            };
            encode_stored(&stored, &mut out).unwrap();
        }
        out.freeze()
    }

    #[test]
    fn defaults_match_java() {
        let options = DecodeOptions::default();
        assert!(!options.verify_crc);
        assert!(options.unwrap_inner_batches);
        assert_eq!(options.max_body_len, 16 << 20);
    }

    #[test]
    fn estimate_divides_by_the_first_record_and_ignores_garbage() {
        let one = records(1).len();
        assert_eq!(estimate_records(&records(1)), 1);
        assert_eq!(estimate_records(&vec![0; 5 * one]), 0);
        let mut five = records(1).to_vec();
        five.extend_from_slice(&vec![0; 4 * one]);
        assert_eq!(estimate_records(&five), 5);
        assert_eq!(estimate_records(&[]), 0);
        assert_eq!(estimate_records(&[0, 0, 0, 90]), 0);
        assert_eq!(estimate_records(&(-5_i32).to_be_bytes()), 0);
    }

    #[test]
    fn an_overshot_estimate_is_given_back() {
        // A tiny record first, then a big one: the estimate says many, two are decoded.
        let mut body = records(1).to_vec();
        let big = StoredMessage {
            topic: "t".into(),
            body: Bytes::from(vec![b'b'; 10_000]),
            ..StoredMessage::default()
        };
        let mut out = BytesMut::new();
        encode_stored(&big, &mut out).unwrap();
        body.extend_from_slice(&out);
        let batch = decode_messages(&Bytes::from(body), &DecodeOptions::default());
        assert_eq!(batch.messages.len(), 2);
        assert!(batch.messages.capacity() <= 2 * 2 + 8);
    }

    /// Every record the fast path accepts, the checked path accepts with the same message.
    #[test]
    fn fast_and_checked_paths_agree() {
        let body = records(40);
        let crc = crc32fast::Hasher::new();
        for verify_crc in [false, true] {
            let options = DecodeOptions::default().with_verify_crc(verify_crc);
            let mut position = 0;
            while position < body.len() {
                let span = fast_record(&body, position, &options, &crc).unwrap();
                let checked = validate_record(&body, position, &options).unwrap();
                assert_eq!(span.len as usize, checked.len);
                // The layout places the body too.
                assert_eq!(span.layout, checked.layout);
                position += checked.len;
            }
        }
    }

    #[test]
    fn many_records_decode_in_order() {
        for count in [0, 1, 31, 32, 33, 101] {
            let messages = decode_messages(&records(count), &DecodeOptions::default())
                .into_result()
                .unwrap();
            let offsets: Vec<i64> = messages.iter().map(Message::queue_offset).collect();
            assert_eq!(offsets, (0..count as i64).collect::<Vec<_>>());
            assert!(
                messages
                    .iter()
                    .enumerate()
                    .all(|(i, m)| m.body().len() == i)
            );
        }
    }

    #[test]
    fn into_result_reports_the_error() {
        let mut body = records(2).to_vec();
        body.push(0);
        let error = decode_messages(&Bytes::from(body), &DecodeOptions::default())
            .into_result()
            .unwrap_err();
        assert_eq!(error.position, records(2).len());
        assert!(matches!(
            error.kind,
            MessageErrorKind::Truncated {
                field: "TOTALSIZE",
                ..
            }
        ));
    }

    #[test]
    fn cursor_reports_the_field_and_what_was_left() {
        let mut cur = Cursor::new(&[1, 2, 3]);
        assert_eq!(cur.take(1, "A").unwrap(), &[1]);
        assert_eq!(
            cur.i32("B"),
            Err(MessageErrorKind::Truncated {
                field: "B",
                needed: 4,
                available: 2
            })
        );
        assert_eq!(cur.offset(), 1);
        assert_eq!(
            cur.len_i8("C"),
            Ok(2),
            "lengths read as signed bytes keep 0..=127"
        );
        let mut negative = Cursor::new(&[0xFF, 0xFE]);
        assert_eq!(
            negative.len_i16("D"),
            Err(MessageErrorKind::NegativeLength {
                field: "D",
                length: -2
            })
        );
    }
}
