//! Why a stored record could not be decoded, or a message could not be encoded.

use thiserror::Error;

use super::Compression;

/// A malformed record in a message body: where it starts and what is wrong with it.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("bad stored message at byte {position} of the body: {kind}")]
pub struct MessageError {
    /// Byte offset of the bad record from the start of the decoded body.
    pub position: usize,
    /// What is wrong with it.
    pub kind: MessageErrorKind,
}

/// What is wrong with a record.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageErrorKind {
    /// `MAGICCODE` is neither v1 (`0xDAA320A7`) nor v2 (`0xDAA320AB`).
    #[error("bad magic code {0:#010x}")]
    BadMagic(i32),
    /// A host's port is outside `0..=65535`; Java's `InetSocketAddress` rejects it too.
    #[error("{field} port {port} is outside 0..=65535")]
    BadPort {
        /// `BORNHOST` or `STOREHOST`.
        field: &'static str,
        /// The stored port.
        port: i32,
    },
    /// A text field is not valid UTF-8.
    #[error("{field} is not valid UTF-8")]
    BadUtf8 {
        /// Which field.
        field: &'static str,
    },
    /// `BODYCRC` does not match the stored body (checked only with
    /// [`DecodeOptions::verify_crc`](super::DecodeOptions::verify_crc)).
    #[error("body CRC is {actual} but the record says {expected}")]
    CrcMismatch {
        /// `BODYCRC` as stored.
        expected: i32,
        /// CRC-32 of the stored body, masked `& 0x7FFFFFFF`.
        actual: i32,
    },
    /// The body is flagged compressed but does not decompress.
    #[error("{algorithm} body does not decompress: {reason}")]
    Decompress {
        /// The algorithm named by the `sysFlag`.
        algorithm: Compression,
        /// The decompressor's complaint.
        reason: String,
    },
    /// The body decompresses to more than the configured maximum (a decompression bomb, or a
    /// limit set too low).
    #[error("{algorithm} body decompresses to more than the limit of {limit} bytes")]
    DecompressedTooLarge {
        /// The algorithm named by the `sysFlag`.
        algorithm: Compression,
        /// [`DecodeOptions::max_body_len`](super::DecodeOptions::max_body_len).
        limit: usize,
    },
    /// A message inside an inner batch (`remoting-protocol.md` §5.9) is malformed.
    #[error("inner batch message at byte {offset} of the outer body: {kind}")]
    InnerBatch {
        /// Byte offset of the inner message in the outer record's (decompressed) body.
        offset: usize,
        /// What is wrong with it.
        kind: Box<Self>,
    },
    /// A length field is negative.
    #[error("{field} is negative ({length})")]
    NegativeLength {
        /// Which length.
        field: &'static str,
        /// Its value.
        length: i32,
    },
    /// `TOTALSIZE` disagrees with the fields it should count.
    #[error("TOTALSIZE is {total_size} but the fields span {parsed} bytes")]
    TotalSizeMismatch {
        /// `TOTALSIZE` as stored.
        total_size: i32,
        /// The bytes the fields actually take.
        parsed: usize,
    },
    /// Bytes follow the one record that should be the whole buffer ([`decode_message`](super::decode_message)).
    #[error("{count} bytes follow the record")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// The buffer ends inside a field.
    #[error("truncated in {field}: needs {needed} bytes, {available} left")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the buffer.
        available: usize,
    },
    /// The body is flagged compressed with a type Java does not know
    /// (`CompressionType.findByValue` throws).
    #[error("unknown compression type {0}")]
    UnknownCompression(u8),
}

/// A message that cannot be encoded.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageEncodeError {
    /// A batch message has a `DELAY` property, which Java's `MessageBatch.generateFromList`
    /// rejects.
    #[error("batch message {index} has a DELAY property; delayed messages cannot be batched")]
    DelayInBatch {
        /// Its position in the batch.
        index: usize,
    },
    /// A batch has no messages (`DefaultMQProducer.batch` rejects an empty one).
    #[error("a batch needs at least one message")]
    EmptyBatch,
    /// Batch messages do not all have the same topic.
    #[error("batch message {index} has topic {topic:?}, not the batch's {expected:?}")]
    MixedTopics {
        /// Its position in the batch.
        index: usize,
        /// Its topic.
        topic: String,
        /// The first message's topic.
        expected: String,
    },
    /// Batch messages disagree on `WAIT` (wait for the store), which Java requires to agree.
    #[error("batch message {index} disagrees with the first on the WAIT property")]
    MixedWaitStoreMsgOk {
        /// Its position in the batch.
        index: usize,
    },
    /// A batch goes to a retry topic, which the broker answers with `MESSAGE_ILLEGAL`.
    #[error("retry topic {topic:?} cannot receive a batch")]
    RetryTopicInBatch {
        /// The topic.
        topic: String,
    },
    /// A field is longer than its length field can express.
    #[error("{field} is {length} bytes, more than the {max} its length field allows")]
    TooLong {
        /// Which field.
        field: &'static str,
        /// Its length.
        length: usize,
        /// The most the length field holds.
        max: usize,
    },
}

/// A body that could not be compressed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{algorithm} compression failed: {reason}")]
pub struct CompressError {
    /// The algorithm.
    pub algorithm: Compression,
    /// The compressor's complaint.
    pub reason: String,
}
