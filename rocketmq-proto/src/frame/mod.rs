//! Frames: the length-prefixed envelope around every command, and its two header encodings.
//!
//! ```text
//! total length: i32 BE | header word: i32 BE (type << 24 | header length) | header | body
//! ```
//!
//! `total length` counts everything after itself. The header is JSON (type 0) or the ROCKETMQ
//! binary layout (type 1); a peer may answer in either, whatever we sent (`remoting-protocol.md`
//! §1.3), so [`FrameDecoder`] accepts both on every frame.

mod binary;
mod json;

use bytes::{Buf, BufMut, BytesMut};
use thiserror::Error;

use crate::command::Command;

/// Java's default maximum of the `total length` field: Netty's `frameMaxLength` of 16 MiB
/// counts the 4-byte length field itself (`NettyDecoder.java`).
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024 - 4;

/// The largest header length the 24-bit length field can express.
const MAX_HEADER_LEN: usize = 0x00FF_FFFF;

/// How a command's header is serialized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HeaderEncoding {
    /// Serialize type 0: a JSON object (what Java sends unless configured otherwise).
    #[default]
    Json,
    /// Serialize type 1: the compact ROCKETMQ binary layout.
    Binary,
}

impl HeaderEncoding {
    /// The serialize-type byte.
    pub fn type_byte(self) -> u8 {
        match self {
            Self::Json => 0,
            Self::Binary => 1,
        }
    }
}

/// Why a frame could not be decoded.
///
/// After [`FrameError::TooLarge`] or [`FrameError::BadLength`] the stream has lost its framing
/// and the connection must be closed (Java closes it on any decode error). The other errors
/// concern one frame whose bytes have already been consumed, so decoding could continue.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The length prefix exceeds the configured maximum; nothing was allocated.
    #[error("frame length {length} exceeds the maximum of {max}")]
    TooLarge {
        /// The announced `total length`.
        length: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The length prefix is negative or too small to hold the header-length word. The prefix
    /// is Java's `int` (`NettyDecoder`), so one of 2 GiB or more reads as negative: the message
    /// says so, or a 2 GiB announcement would read as "too small".
    #[error("frame length {0} is negative (a prefix of 2 GiB or more) or below 4")]
    BadLength(i32),
    /// The header length exceeds what the frame holds.
    #[error("header length {header} exceeds the {available} bytes left in the frame")]
    HeaderTooLong {
        /// The announced header length.
        header: usize,
        /// Bytes after the header-length word.
        available: usize,
    },
    /// The serialize type is neither JSON (0) nor ROCKETMQ (1).
    #[error("unknown header serialize type {0}")]
    UnknownSerializeType(u8),
    /// The JSON header is not valid.
    #[error("bad JSON header: {0}")]
    Json(String),
    /// The binary header is not valid.
    #[error("bad binary header: {0}")]
    Binary(String),
}

/// Why a command could not be encoded.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The frame would exceed the maximum frame length.
    #[error("encoded frame length {length} exceeds the maximum of {max}")]
    TooLarge {
        /// The `total length` it would have.
        length: usize,
        /// The maximum.
        max: usize,
    },
    /// A value does not fit the binary header's field (e.g. a code above `i16::MAX`).
    #[error("{field} = {value} does not fit the binary header")]
    OutOfRange {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: i64,
    },
}

/// Incremental frame decoder over a growing buffer.
///
/// Feed it whatever the socket produced; it returns `Ok(None)` until a whole frame is buffered,
/// and yields the same commands however the byte stream was chunked. The length prefix is
/// checked against the maximum before any buffer is reserved for the frame.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    max_frame_len: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_LEN)
    }
}

impl FrameDecoder {
    /// A decoder rejecting frames whose `total length` exceeds `max_frame_len`.
    pub fn new(max_frame_len: usize) -> Self {
        Self { max_frame_len }
    }

    /// The configured maximum `total length`.
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// Takes one whole frame off the front of `buf` and decodes it. When the frame at the
    /// front is not whole yet, room for the rest of it is reserved in `buf`.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Command>, FrameError> {
        let command = self.decode_whole(buf)?;
        if command.is_none()
            && let Some(needed) = self.frame_len(buf)?
        {
            buf.reserve(needed.saturating_sub(buf.len()));
        }
        Ok(command)
    }

    /// The length of the frame at the front of `buf`, its 4-byte length prefix included, once
    /// the prefix is there; an error when the prefix is not a valid length or announces more
    /// than the maximum.
    pub fn frame_len(&self, buf: &[u8]) -> Result<Option<usize>, FrameError> {
        let Some(prefix) = buf.first_chunk::<4>() else {
            return Ok(None);
        };
        let announced = i32::from_be_bytes(*prefix);
        let total = usize::try_from(announced)
            .ok()
            .filter(|&n| n >= 4)
            .ok_or(FrameError::BadLength(announced))?;
        if total > self.max_frame_len {
            return Err(FrameError::TooLarge {
                length: total,
                max: self.max_frame_len,
            });
        }
        Ok(Some(4 + total))
    }

    /// As [`FrameDecoder::decode`], but `buf` is left as it is while the frame at the front is
    /// not whole: for a caller that keeps the buffer's room itself ([`FrameDecoder::frame_len`]
    /// says how much the frame needs).
    pub fn decode_whole(&mut self, buf: &mut BytesMut) -> Result<Option<Command>, FrameError> {
        let Some(needed) = self.frame_len(buf)? else {
            return Ok(None);
        };
        if buf.len() < needed {
            return Ok(None);
        }
        let mut frame = buf.split_to(needed).freeze();
        frame.advance(4);
        let word = frame.get_u32();
        let serialize_type = (word >> 24) as u8;
        let header_len = (word & 0x00FF_FFFF) as usize;
        if header_len > frame.len() {
            return Err(FrameError::HeaderTooLong {
                header: header_len,
                available: frame.len(),
            });
        }
        let header = frame.split_to(header_len);
        let body = frame;
        let mut command = match serialize_type {
            0 => json::decode(&header)?,
            1 => binary::decode(&header)?,
            other => return Err(FrameError::UnknownSerializeType(other)),
        };
        command.body = body;
        Ok(Some(command))
    }
}

/// Appends `command` as one frame to `dst`, with the default maximum frame length.
pub fn encode(
    command: &Command,
    encoding: HeaderEncoding,
    dst: &mut BytesMut,
) -> Result<(), EncodeError> {
    encode_with_limit(command, encoding, DEFAULT_MAX_FRAME_LEN, dst)
}

/// Appends `command` as one frame to `dst`; on error `dst` is left as it was.
pub fn encode_with_limit(
    command: &Command,
    encoding: HeaderEncoding,
    max_frame_len: usize,
    dst: &mut BytesMut,
) -> Result<(), EncodeError> {
    let start = dst.len();
    dst.put_u64(0); // length and header word, patched below
    let written = match encoding {
        HeaderEncoding::Json => {
            json::encode(command, dst);
            Ok(())
        }
        HeaderEncoding::Binary => binary::encode(command, dst),
    };
    if let Err(e) = written {
        dst.truncate(start);
        return Err(e);
    }
    let header_len = dst.len() - start - 8;
    let total = 4 + header_len + command.body.len();
    if header_len > MAX_HEADER_LEN || total > max_frame_len || total > i32::MAX as usize {
        dst.truncate(start);
        return Err(EncodeError::TooLarge {
            length: total,
            max: max_frame_len.min(i32::MAX as usize),
        });
    }
    dst.extend_from_slice(&command.body);
    let word = (u32::from(encoding.type_byte()) << 24) | header_len as u32;
    let prefix = ((total as u64) << 32 | u64::from(word)).to_be_bytes();
    dst.get_mut(start..start + 8)
        .expect("8 placeholder bytes were written at `start` above")
        .copy_from_slice(&prefix);
    Ok(())
}
