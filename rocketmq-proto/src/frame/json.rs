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
    language: Option<IncomingLanguage>,
    #[serde(default)]
    version: Option<i32>,
    #[serde(default)]
    opaque: Option<i32>,
    #[serde(default)]
    flag: Option<i32>,
    #[serde(default)]
    remark: Option<String>,
    #[serde(default, rename = "extFields")]
    ext_fields: Option<IncomingExt>,
}

/// The `language` member, read without copying its name: a known name, or a code.
struct IncomingLanguage(LanguageCode);

impl<'de> Deserialize<'de> for IncomingLanguage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = IncomingLanguage;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a language name or code")
            }
            // An unknown name is what a newer peer sends; fastjson reads it as null, we as
            // OTHER.
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Self::Value, E> {
                Ok(IncomingLanguage(
                    LanguageCode::from_name(name).unwrap_or(LanguageCode::OTHER),
                ))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
                u8::try_from(n)
                    .map(|n| IncomingLanguage(LanguageCode(n)))
                    .map_err(|_| E::custom(format!("language {n} is not a language code")))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Err(E::custom(format!("language {n} is not a language code")))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Self::Value, E> {
                Err(E::custom(format!("language {n} is not a language code")))
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Err(E::custom(format!("language {b} is not a string")))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(IncomingLanguage(LanguageCode::OTHER))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// The `extFields` member, read straight into [`ExtFields`] (keys the client reads often
/// are not copied: `ExtFields::insert_read`).
struct IncomingExt(ExtFields);

impl<'de> Deserialize<'de> for IncomingExt {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = IncomingExt;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of scalars")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                use serde::de::Error;
                let mut ext = ExtFields::new();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match map.next_value::<Value>()? {
                        Value::Null => {}
                        Value::String(s) => ext.insert_read(&key, s),
                        // Java always sends strings; other writers send bare numbers and
                        // booleans.
                        value @ (Value::Number(_) | Value::Bool(_)) => {
                            ext.insert_read(&key, value.to_string())
                        }
                        Value::Array(_) | Value::Object(_) => {
                            return Err(A::Error::custom(format!(
                                "extFields.{key} is not a scalar"
                            )));
                        }
                    }
                }
                Ok(IncomingExt(ext))
            }
        }
        deserializer.deserialize_map(Visit)
    }
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
    let language = raw.language.map_or(LanguageCode::OTHER, |l| l.0);
    let ext_fields = raw.ext_fields.map(|e| e.0).unwrap_or_default();
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
