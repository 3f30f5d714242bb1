//! Body compression (`remoting-protocol.md` §5.4, Java's `common/compression/`).
//!
//! The `sysFlag` names the algorithm in bits 8-10 when bit 0 is set. What each Java compressor
//! writes, and so what is accepted here:
//! - ZLIB (`ZlibCompressor`, `Deflater`): a zlib stream (RFC 1950), not raw deflate;
//! - LZ4 (`Lz4Compressor`, lz4-java's `LZ4FrameOutputStream`): the LZ4 *frame* format;
//! - ZSTD (`ZstdCompressor`, zstd-jni's `ZstdOutputStream`): standard zstd frames.
//!
//! Decompression never passes bad input through: a stream that is corrupt, truncated or
//! larger than the caller's limit is an error.

use std::fmt;
use std::io::{self, Read, Write};

use bytes::Bytes;

use super::error::{CompressError, MessageErrorKind};
use super::sys_flag;

/// The level Java's producer compresses with (`rocketmq.message.compressLevel`, default 5).
pub const DEFAULT_COMPRESS_LEVEL: i32 = 5;
/// Java's producer compresses bodies of at least this many bytes
/// (`DefaultMQProducer.compressMsgBodyOverHowmuch`); batches never.
pub const DEFAULT_COMPRESS_OVER: usize = 4096;

/// A body compression algorithm (`CompressionType.java`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// LZ4, frame format. Type 1.
    Lz4,
    /// zlib (RFC 1950). Type 3, and type 0 from producers older than the type field; Java's
    /// producer default.
    Zlib,
    /// Zstandard. Type 2.
    Zstd,
}

impl Compression {
    /// The algorithm of compression type `value` (`CompressionType.findByValue`): 0 and 3 are
    /// ZLIB, 1 LZ4, 2 ZSTD.
    pub fn from_type(value: u8) -> Option<Self> {
        match value {
            0 | 3 => Some(Self::Zlib),
            1 => Some(Self::Lz4),
            2 => Some(Self::Zstd),
            _ => None,
        }
    }

    /// How a message with `sys_flag` was compressed: `Ok(None)` when bit 0 is clear, and
    /// `Err(type)` for a type Java does not know.
    pub fn from_sys_flag(sys_flag: i32) -> Result<Option<Self>, u8> {
        if sys_flag & sys_flag::COMPRESSED == 0 {
            return Ok(None);
        }
        let value = sys_flag::compression_type(sys_flag);
        Self::from_type(value).map(Some).ok_or(value)
    }

    /// The compression type value a producer writes (1 LZ4, 2 ZSTD, 3 ZLIB).
    pub fn type_value(self) -> u8 {
        match self {
            Self::Lz4 => 1,
            Self::Zstd => 2,
            Self::Zlib => 3,
        }
    }

    /// The `sysFlag` bits a producer sends with a body compressed this way:
    /// `COMPRESSED | type << 8` (`DefaultMQProducerImpl.sendKernelImpl`).
    pub fn sys_flag(self) -> i32 {
        sys_flag::COMPRESSED | (i32::from(self.type_value()) << sys_flag::COMPRESSION_TYPE_SHIFT)
    }

    /// Java's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lz4 => "LZ4",
            Self::Zlib => "ZLIB",
            Self::Zstd => "ZSTD",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compresses `body` as Java's compressors do, for sending with [`Compression::sys_flag`].
///
/// `level` follows Java's `compressLevel` ([`DEFAULT_COMPRESS_LEVEL`]): clamped to 0-9 for
/// zlib and to zstd's range for ZSTD; LZ4 has no levels (`Lz4Compressor` ignores it). LZ4 frames
/// are written with independent blocks, which lz4-java's `LZ4FrameInputStream` requires.
pub fn compress_body(
    body: &[u8],
    compression: Compression,
    level: i32,
) -> Result<Bytes, CompressError> {
    let fail = |e: &dyn fmt::Display| CompressError {
        algorithm: compression,
        reason: e.to_string(),
    };
    let out = Vec::with_capacity(body.len() / 2 + 64);
    let compressed = match compression {
        Compression::Zlib => {
            let level = u32::try_from(level.clamp(0, 9)).unwrap_or(6);
            let mut encoder = flate2::write::ZlibEncoder::new(out, flate2::Compression::new(level));
            encoder.write_all(body).map_err(|e| fail(&e))?;
            encoder.finish().map_err(|e| fail(&e))?
        }
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(info, out);
            encoder.write_all(body).map_err(|e| fail(&e))?;
            encoder.finish().map_err(|e| fail(&e))?
        }
        Compression::Zstd => {
            let range = zstd::compression_level_range();
            let level = level.clamp(*range.start(), *range.end());
            zstd::bulk::compress(body, level).map_err(|e| fail(&e))?
        }
    };
    Ok(Bytes::from(compressed))
}

/// Decompresses a stored body, refusing to produce more than `max_len` bytes.
///
/// A corrupt or truncated stream is an error, never a pass-through of the stored bytes. Output
/// grows as it is produced, so a small bomb costs at most `max_len` bytes of memory before it
/// is refused.
pub fn decompress_body(
    stored: &[u8],
    compression: Compression,
    max_len: usize,
) -> Result<Bytes, MessageErrorKind> {
    let fail = |reason: String| MessageErrorKind::Decompress {
        algorithm: compression,
        reason,
    };
    let result = match compression {
        Compression::Zlib => {
            // `bufread` reads the slice in place; `read::ZlibDecoder` would add a 32 KiB buffer.
            read_capped(
                flate2::bufread::ZlibDecoder::new(stored),
                stored.len(),
                max_len,
            )
        }
        Compression::Lz4 => {
            // lz4_flex reports a frame cut at a block boundary as a clean end of stream, so the
            // frame structure is walked first.
            check_lz4_frames(stored).map_err(|reason| fail(reason.to_owned()))?;
            read_capped(
                lz4_flex::frame::FrameDecoder::new(stored),
                stored.len(),
                max_len,
            )
        }
        Compression::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::with_buffer(stored)
                .map_err(|e| fail(e.to_string()))?;
            // The window is the decoder's memory, so it is capped too. Streaming compressors
            // (zstd-jni's `ZstdOutputStream` does not know the size up front) declare windows
            // larger than the content, so the cap never goes below 16 MiB.
            decoder
                .window_log_max(window_log_for(max_len))
                .map_err(|e| fail(e.to_string()))?;
            read_capped(decoder, stored.len(), max_len)
        }
    };
    match result {
        Ok(body) => Ok(Bytes::from(body)),
        Err(Capped::TooLarge) => Err(MessageErrorKind::DecompressedTooLarge {
            algorithm: compression,
            limit: max_len,
        }),
        Err(Capped::Io(e)) => Err(fail(e.to_string())),
    }
}

enum Capped {
    Io(io::Error),
    TooLarge,
}

/// Reads `reader` to its end, failing once it yields more than `max_len` bytes.
fn read_capped(reader: impl Read, stored_len: usize, max_len: usize) -> Result<Vec<u8>, Capped> {
    let limit = u64::try_from(max_len).unwrap_or(u64::MAX).saturating_add(1);
    let mut out = Vec::with_capacity(stored_len.saturating_mul(4).min(max_len));
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(Capped::Io)?;
    if out.len() > max_len {
        return Err(Capped::TooLarge);
    }
    Ok(out)
}

/// The zstd window log allowed when decompressing at most `max_len` bytes: the smallest
/// covering `max_len`, but at least 24 (16 MiB) and at most zstd's 31.
fn window_log_for(max_len: usize) -> u32 {
    let bits = usize::BITS - max_len.saturating_sub(1).leading_zeros();
    bits.clamp(24, 31)
}

const LZ4_FRAME_MAGIC: u32 = 0x184D_2204;
const LZ4_FLG_DICT_ID: u8 = 0x01;
const LZ4_FLG_CONTENT_CHECKSUM: u8 = 0x04;
const LZ4_FLG_CONTENT_SIZE: u8 = 0x08;
const LZ4_FLG_BLOCK_CHECKSUM: u8 = 0x10;

/// Checks that `data` is a sequence of complete LZ4 frames: every block present and each frame
/// closed by its end mark (and content checksum, when flagged). Contents are left to the
/// decoder; this only makes truncation detectable.
fn check_lz4_frames(mut data: &[u8]) -> Result<(), &'static str> {
    if data.is_empty() {
        return Err("empty input is not an LZ4 frame");
    }
    while !data.is_empty() {
        let (magic, rest) = data
            .split_first_chunk::<4>()
            .ok_or("truncated frame magic")?;
        if u32::from_le_bytes(*magic) != LZ4_FRAME_MAGIC {
            return Err("not an LZ4 frame (bad magic number)");
        }
        let (&[flg, _bd], rest) = rest
            .split_first_chunk::<2>()
            .ok_or("truncated frame header")?;
        let mut optional = 1; // header checksum
        if flg & LZ4_FLG_CONTENT_SIZE != 0 {
            optional += 8;
        }
        if flg & LZ4_FLG_DICT_ID != 0 {
            optional += 4;
        }
        let mut rest = rest.get(optional..).ok_or("truncated frame header")?;
        let block_checksum = if flg & LZ4_FLG_BLOCK_CHECKSUM != 0 {
            4
        } else {
            0
        };
        loop {
            let (size, after) = rest
                .split_first_chunk::<4>()
                .ok_or("frame ends without an end mark")?;
            let size = u32::from_le_bytes(*size);
            if size == 0 {
                rest = after;
                break;
            }
            // The top bit flags an uncompressed block; the rest is the stored size.
            let len = usize::try_from(size & 0x7FFF_FFFF).map_err(|_| "block too large")?;
            rest = after.get(len + block_checksum..).ok_or("truncated block")?;
        }
        if flg & LZ4_FLG_CONTENT_CHECKSUM != 0 {
            rest = rest.get(4..).ok_or("truncated content checksum")?;
        }
        data = rest;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1 << 20;

    #[test]
    fn type_values_and_flags_match_java() {
        assert_eq!(Compression::Zlib.sys_flag(), 0x301);
        assert_eq!(Compression::Lz4.sys_flag(), 0x101);
        assert_eq!(Compression::Zstd.sys_flag(), 0x201);
        assert_eq!(
            Compression::from_sys_flag(0x301),
            Ok(Some(Compression::Zlib))
        );
        assert_eq!(Compression::from_sys_flag(0x1), Ok(Some(Compression::Zlib)));
        assert_eq!(Compression::from_sys_flag(0x300), Ok(None));
        assert_eq!(Compression::from_sys_flag(0x401), Err(4));
        for c in [Compression::Lz4, Compression::Zlib, Compression::Zstd] {
            assert_eq!(Compression::from_type(c.type_value()), Some(c));
        }
    }

    #[test]
    fn each_algorithm_round_trips() {
        let body = b"compressed ".repeat(500);
        for c in [Compression::Lz4, Compression::Zlib, Compression::Zstd] {
            let packed = compress_body(&body, c, DEFAULT_COMPRESS_LEVEL).unwrap();
            assert!(packed.len() < body.len(), "{c}");
            assert_eq!(decompress_body(&packed, c, MAX).unwrap(), body, "{c}");
            assert_eq!(
                decompress_body(&compress_body(b"", c, 5).unwrap(), c, MAX).unwrap(),
                ""
            );
        }
    }

    #[test]
    fn zlib_is_rfc1950_with_header() {
        let packed = compress_body(b"x", Compression::Zlib, 5).unwrap();
        // CMF 0x78 (deflate, 32 KiB window), then FLG making the pair a multiple of 31.
        assert_eq!(packed[0], 0x78);
        assert_eq!(u16::from_be_bytes([packed[0], packed[1]]) % 31, 0);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let body = b"0123456789abcdef".repeat(64);
        for c in [Compression::Lz4, Compression::Zlib, Compression::Zstd] {
            let packed = compress_body(&body, c, 5).unwrap();
            for cut in 0..packed.len() {
                assert!(
                    decompress_body(&packed[..cut], c, MAX).is_err(),
                    "{c} cut at {cut} of {} decoded",
                    packed.len()
                );
            }
        }
    }

    #[test]
    fn bombs_are_refused() {
        let body = vec![0_u8; 100_000];
        for c in [Compression::Lz4, Compression::Zlib, Compression::Zstd] {
            let packed = compress_body(&body, c, 5).unwrap();
            assert_eq!(
                decompress_body(&packed, c, 99_999),
                Err(MessageErrorKind::DecompressedTooLarge {
                    algorithm: c,
                    limit: 99_999
                })
            );
            assert_eq!(decompress_body(&packed, c, 100_000).unwrap().len(), 100_000);
        }
    }

    #[test]
    fn garbage_is_an_error_for_each_algorithm() {
        for c in [Compression::Lz4, Compression::Zlib, Compression::Zstd] {
            for garbage in [&b"hello world, not compressed"[..], b"", b"\x00"] {
                assert!(
                    matches!(
                        decompress_body(garbage, c, MAX),
                        Err(MessageErrorKind::Decompress { algorithm, .. }) if algorithm == c
                    ),
                    "{c} accepted {garbage:?}"
                );
            }
        }
    }

    #[test]
    fn window_log_covers_the_limit() {
        assert_eq!(window_log_for(16 << 20), 24);
        assert_eq!(window_log_for((16 << 20) + 1), 25);
        assert_eq!(window_log_for(64 << 10), 24);
        assert_eq!(window_log_for(0), 24);
        assert_eq!(window_log_for(usize::MAX), 31);
    }
}
