//! The JSON header (serialize type 0), as fastjson writes it from `RemotingCommand`.

use std::borrow::Cow;

use bytes::{BufMut, BytesMut};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::FrameError;
use crate::code::LanguageCode;
use crate::command::Command;
use crate::ext::ExtFields;
use crate::ext_string::ExtString;

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
/// are not copied: `ExtFields::read`).
struct IncomingExt(ExtFields);

/// An `extFields` key, borrowed from the frame unless it has escapes.
struct IncomingKey<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for IncomingKey<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = IncomingKey<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                key: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(IncomingKey(Cow::Borrowed(key)))
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
                Ok(IncomingKey(Cow::Owned(key.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Self::Value, E> {
                Ok(IncomingKey(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(Visit)
    }
}

/// An `extFields` value: Java always sends strings; other writers send bare numbers and
/// booleans, read as their JSON text. Short ones are held inline ([`ExtString`]).
enum IncomingValue {
    Null,
    Scalar(ExtString),
    /// An array or object, which no header field is.
    Nested,
}

impl<'de> Deserialize<'de> for IncomingValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = IncomingValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a scalar")
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
                Ok(IncomingValue::Scalar(ExtString::new(value)))
            }
            fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Self::Value, E> {
                Ok(IncomingValue::Scalar(ExtString::from(value)))
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
                Ok(IncomingValue::Scalar(ExtString::display(value)))
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
                Ok(IncomingValue::Scalar(ExtString::display(value)))
            }
            fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Self::Value, E> {
                // JSON's text for it, as `serde_json` writes a number (`1.0`, not `1`).
                let text = Value::from(value).to_string();
                Ok(IncomingValue::Scalar(ExtString::from(text)))
            }
            fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Self::Value, E> {
                Ok(IncomingValue::Scalar(ExtString::new(if value {
                    "true"
                } else {
                    "false"
                })))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(IncomingValue::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(IncomingValue::Nested)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(IncomingValue::Nested)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

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
                let mut ext = ExtFields::read();
                while let Some(IncomingKey(key)) = map.next_key()? {
                    match map.next_value::<IncomingValue>()? {
                        IncomingValue::Null => {}
                        IncomingValue::Scalar(value) => ext.push(&key, value),
                        IncomingValue::Nested => {
                            return Err(A::Error::custom(format!(
                                "extFields.{key} is not a scalar"
                            )));
                        }
                    }
                }
                Ok(IncomingExt(ext.finish()))
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
