//! The ROCKETMQ binary header (serialize type 1), `RocketMQSerializable.java`.
//!
//! ```text
//! code i16 | language u8 | version i16 | opaque i32 | flag i32 |
//! remark len i32 + UTF-8 | ext len i32 + { key len i16 + key, value len i32 + value }*
//! ```
//! A zero-length string decodes as absent, as in Java.

use std::borrow::Cow;

use bytes::{BufMut, BytesMut};
use nom::IResult;
use nom::Parser;
use nom::bytes::complete::take;
use nom::number::complete::{be_i16, be_i32, be_u8};

use super::{EncodeError, FrameError};
use crate::code::LanguageCode;
use crate::command::Command;
use crate::ext::ExtFields;
use crate::ext_string::ExtString;

pub(super) fn decode(header: &[u8]) -> Result<Command, FrameError> {
    let (rest, (code, language, version, opaque, flag)) = (be_i16, be_u8, be_i16, be_i32, be_i32)
        .parse(header)
        .map_err(|_: nom::Err<nom::error::Error<&[u8]>>| {
            FrameError::Binary(format!(
                "{} bytes is shorter than the fixed 21",
                header.len()
            ))
        })?;
    let (rest, remark) = string_i32(rest, "remark")?;
    let (rest, ext_len) = be_i32::<_, nom::error::Error<&[u8]>>(rest)
        .map_err(|_| FrameError::Binary("truncated before the extFields length".into()))?;
    let ext_len = usize::try_from(ext_len)
        .ok()
        .filter(|&n| n <= rest.len())
        .ok_or_else(|| {
            FrameError::Binary(format!("extFields length {ext_len} exceeds the header"))
        })?;
    let (mut map, trailing) = rest.split_at(ext_len);
    if !trailing.is_empty() {
        return Err(FrameError::Binary(format!(
            "{} bytes after the extFields map",
            trailing.len()
        )));
    }
    // Collected, then sorted once: a peer's long map costs `n log n` in any order.
    let mut pairs = Vec::new();
    while !map.is_empty() {
        let (rest, key) = string_i16(map)?;
        let (rest, value) = string_i32(rest, "extFields value")?;
        map = rest;
        if let (Some(key), Some(value)) = (key, value) {
            pairs.push((Cow::Owned(key), ExtString::from(value)));
        }
    }
    let ext_fields = ExtFields::from_pairs(pairs);
    Ok(Command {
        code: i32::from(code),
        language: LanguageCode(language),
        version: i32::from(version),
        opaque,
        flag,
        remark,
        ext_fields,
        body: bytes::Bytes::new(),
    })
}

fn string_i32<'a>(
    input: &'a [u8],
    what: &'static str,
) -> Result<(&'a [u8], Option<String>), FrameError> {
    let parsed: IResult<&[u8], i32> = be_i32(input);
    let (rest, len) = parsed.map_err(|_| FrameError::Binary(format!("truncated {what} length")))?;
    sized_string(rest, i64::from(len), what)
}

fn string_i16(input: &[u8]) -> Result<(&[u8], Option<String>), FrameError> {
    let parsed: IResult<&[u8], i16> = be_i16(input);
    let (rest, len) =
        parsed.map_err(|_| FrameError::Binary("truncated extFields key length".into()))?;
    sized_string(rest, i64::from(len), "extFields key")
}

fn sized_string<'a>(
    input: &'a [u8],
    len: i64,
    what: &'static str,
) -> Result<(&'a [u8], Option<String>), FrameError> {
    let len = usize::try_from(len)
        .ok()
        .filter(|&n| n <= input.len())
        .ok_or_else(|| FrameError::Binary(format!("{what} length {len} exceeds the header")))?;
    let taken: IResult<&[u8], &[u8]> = take(len)(input);
    let (rest, raw) = taken.map_err(|_| FrameError::Binary(format!("truncated {what}")))?;
    if raw.is_empty() {
        return Ok((rest, None));
    }
    let text =
        std::str::from_utf8(raw).map_err(|_| FrameError::Binary(format!("{what} is not UTF-8")))?;
    Ok((rest, Some(text.to_owned())))
}

pub(super) fn encode(command: &Command, dst: &mut BytesMut) -> Result<(), EncodeError> {
    let code = i16::try_from(command.code).map_err(|_| EncodeError::OutOfRange {
        field: "code",
        value: i64::from(command.code),
    })?;
    let version = i16::try_from(command.version).map_err(|_| EncodeError::OutOfRange {
        field: "version",
        value: i64::from(command.version),
    })?;
    dst.put_i16(code);
    dst.put_u8(command.language.0);
    dst.put_i16(version);
    dst.put_i32(command.opaque);
    dst.put_i32(command.flag);
    let remark = command.remark.as_deref().unwrap_or("").as_bytes();
    dst.put_i32(len_i32(remark.len(), "remark length")?);
    dst.put_slice(remark);
    let mut map_len = 0usize;
    for (key, value) in command.ext_fields.iter() {
        map_len += 2 + key.len() + 4 + value.len();
    }
    dst.put_i32(len_i32(map_len, "extFields length")?);
    for (key, value) in command.ext_fields.iter() {
        let key_len = i16::try_from(key.len()).map_err(|_| EncodeError::OutOfRange {
            field: "extFields key length",
            value: key.len() as i64,
        })?;
        dst.put_i16(key_len);
        dst.put_slice(key.as_bytes());
        dst.put_i32(len_i32(value.len(), "extFields value length")?);
        dst.put_slice(value.as_bytes());
    }
    Ok(())
}

fn len_i32(len: usize, field: &'static str) -> Result<i32, EncodeError> {
    i32::try_from(len).map_err(|_| EncodeError::OutOfRange {
        field,
        value: len as i64,
    })
}
