//! The JSON header (serialize type 0), as fastjson writes it from `RemotingCommand`.

use bytes::{BufMut, BytesMut};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::FrameError;
use crate::code::LanguageCode;
use crate::command::Command;
use crate::ext::ExtFields;

#[derive(Deserialize)]
struct Incoming {
    code: i32,
    // Every optional member may be absent or an explicit `null` (the Rust broker writes nulls).
    #[serde(default)]
    language: Option<Value>,
    #[serde(default)]
    version: Option<i32>,
    #[serde(default)]
    opaque: Option<i32>,
    #[serde(default)]
    flag: Option<i32>,
    #[serde(default)]
    remark: Option<String>,
    #[serde(default, rename = "extFields")]
    ext_fields: Option<serde_json::Map<String, Value>>,
}

/// A language travels by name; a code with no known name travels as its number, which
/// fastjson also reads (as the enum's ordinal), so it survives a round trip.
#[derive(Serialize)]
#[serde(untagged)]
enum Language {
    Name(&'static str),
    Code(u8),
}

#[derive(Serialize)]
struct Outgoing<'a> {
    code: i32,
    #[serde(rename = "extFields")]
    ext_fields: &'a ExtFields,
    flag: i32,
    language: Language,
    opaque: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    remark: Option<&'a str>,
    // The Rust broker closes the connection without a word when this member is missing.
    #[serde(rename = "serializeTypeCurrentRPC")]
    serialize_type: &'static str,
    version: i32,
}

impl Serialize for ExtFields {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

pub(super) fn decode(header: &[u8]) -> Result<Command, FrameError> {
    let raw: Incoming =
        serde_json::from_slice(header).map_err(|e| FrameError::Json(e.to_string()))?;
    let language = match raw.language {
        None | Some(Value::Null) => LanguageCode::OTHER,
        // An unknown name is what a newer peer sends; fastjson reads it as null, we as OTHER.
        Some(Value::String(name)) => LanguageCode::from_name(&name).unwrap_or(LanguageCode::OTHER),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .map(LanguageCode)
            .ok_or_else(|| FrameError::Json(format!("language {n} is not a language code")))?,
        Some(other) => {
            return Err(FrameError::Json(format!(
                "language {other} is not a string"
            )));
        }
    };
    let mut ext_fields = ExtFields::new();
    for (key, value) in raw.ext_fields.unwrap_or_default() {
        match value {
            Value::Null => {}
            Value::String(s) => ext_fields.insert(key, s),
            // Java always sends strings; other writers send bare numbers and booleans.
            Value::Number(_) | Value::Bool(_) => ext_fields.insert(key, value.to_string()),
            Value::Array(_) | Value::Object(_) => {
                return Err(FrameError::Json(format!("extFields.{key} is not a scalar")));
            }
        }
    }
    Ok(Command {
        code: raw.code,
        language,
        version: raw.version.unwrap_or(0),
        opaque: raw.opaque.unwrap_or(0),
        flag: raw.flag.unwrap_or(0),
        remark: raw.remark,
        ext_fields,
        body: bytes::Bytes::new(),
    })
}

pub(super) fn encode(command: &Command, dst: &mut BytesMut) {
    let language = match command.language.name() {
        Some(name) => Language::Name(name),
        None => Language::Code(command.language.0),
    };
    let header = Outgoing {
        code: command.code,
        ext_fields: &command.ext_fields,
        flag: command.flag,
        language,
        opaque: command.opaque,
        remark: command.remark.as_deref(),
        serialize_type: "JSON",
        version: command.version,
    };
    serde_json::to_writer(dst.writer(), &header)
        .expect("serializing strings and integers into memory cannot fail");
}
