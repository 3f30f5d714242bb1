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

/// Writes `command`'s header as fastjson reads it, members in the order serde_json wrote them
/// when it wrote this header (`serialize_type` is the Rust broker's must: it closes the
/// connection without a word when `serializeTypeCurrentRPC` is missing). Written by hand: a
/// pull request's frame through serde_json was 5,716 instructions, by hand 3,543 (callgrind
/// over the `header` bench's `encode_pull_request/json`), at every pull of a consumer and every
/// send of a producer. Strings are escaped as serde_json escapes them, so the bytes are the
/// same.
pub(super) fn encode(command: &Command, dst: &mut BytesMut) {
    let fields = &command.ext_fields;
    dst.extend_from_slice(b"{\"code\":");
    put_integer(dst, command.code);
    dst.extend_from_slice(b",\"extFields\":{");
    for (at, (key, value)) in fields.iter_bytes().enumerate() {
        if at > 0 {
            dst.put_u8(b',');
        }
        put_string(dst, key.as_bytes());
        dst.put_u8(b':');
        put_string(dst, value);
    }
    dst.extend_from_slice(b"},\"flag\":");
    put_integer(dst, command.flag);
    // A language travels by name; a code with no known name travels as its number, which
    // fastjson also reads (as the enum's ordinal), so it survives a round trip.
    dst.extend_from_slice(b",\"language\":");
    match command.language.name() {
        Some(name) => put_string(dst, name.as_bytes()),
        None => put_integer(dst, i32::from(command.language.0)),
    }
    dst.extend_from_slice(b",\"opaque\":");
    put_integer(dst, command.opaque);
    if let Some(remark) = &command.remark {
        dst.extend_from_slice(b",\"remark\":");
        put_string(dst, remark.as_bytes());
    }
    dst.extend_from_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_integer(dst, command.version);
    dst.put_u8(b'}');
}

fn put_integer(dst: &mut BytesMut, value: i32) {
    dst.extend_from_slice(ExtString::integer(i64::from(value)).as_bytes());
}

/// `bytes` (UTF-8) as a JSON string, escaped as serde_json escapes: `"` and `\\`, the control
/// characters (the short forms where JSON has them, `\\u00xx` for the rest), nothing else.
fn put_string(dst: &mut BytesMut, bytes: &[u8]) {
    dst.put_u8(b'"');
    // Checked without stopping early, so that the check runs over whole vectors: header
    // strings almost never need escapes.
    if !bytes.iter().fold(false, |any, &b| any | escaped(b)) {
        dst.extend_from_slice(bytes);
    } else {
        let mut plain = 0;
        for (at, &b) in bytes.iter().enumerate() {
            if !escaped(b) {
                continue;
            }
            dst.extend_from_slice(bytes.get(plain..at).unwrap_or_default());
            plain = at + 1;
            match b {
                b'"' => dst.extend_from_slice(b"\\\""),
                b'\\' => dst.extend_from_slice(b"\\\\"),
                b'\x08' => dst.extend_from_slice(b"\\b"),
                b'\x0c' => dst.extend_from_slice(b"\\f"),
                b'\n' => dst.extend_from_slice(b"\\n"),
                b'\r' => dst.extend_from_slice(b"\\r"),
                b'\t' => dst.extend_from_slice(b"\\t"),
                _ => {
                    // Below 0x20: the high digit is 0 or 1; lower-case, as serde_json.
                    let hex = |n: u8| if n < 10 { b'0' + n } else { b'a' + n - 10 };
                    dst.extend_from_slice(b"\\u00");
                    dst.put_u8(hex(b >> 4));
                    dst.put_u8(hex(b & 0xf));
                }
            }
        }
        dst.extend_from_slice(bytes.get(plain..).unwrap_or_default());
    }
    dst.put_u8(b'"');
}

/// Whether JSON needs `b` escaped (within UTF-8, every byte of a multi-byte character is
/// 0x80 or above, so this never splits one).
fn escaped(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::RequestCode;

    /// The header as serde_json wrote it before the hand-written encoder: the bytes must not
    /// change, as peers and captures compare them.
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

    fn with_serde(command: &Command) -> Vec<u8> {
        let language = match command.language.name() {
            Some(name) => Language::Name(name),
            None => Language::Code(command.language.0),
        };
        serde_json::to_vec(&Outgoing {
            code: command.code,
            ext_fields: &command.ext_fields,
            flag: command.flag,
            language,
            opaque: command.opaque,
            remark: command.remark.as_deref(),
            serialize_type: "JSON",
            version: command.version,
        })
        .expect("serializing strings and integers into memory cannot fail")
    }

    fn by_hand(command: &Command) -> Vec<u8> {
        let mut dst = BytesMut::new();
        encode(command, &mut dst);
        dst.to_vec()
    }

    /// Every byte that JSON escapes, the short forms and `\\u00xx`, multi-byte characters,
    /// an empty map, a remark, negative numbers and a language without a name are written as
    /// serde_json writes them, and read back as they were.
    #[test]
    fn hand_written_header_is_serde_jsons() {
        let awkward: String = (0u8..0x20)
            .map(char::from)
            .chain("\"\\/\u{7f}é漢🦀 plain".chars())
            .collect();
        let mut commands = vec![
            Command::request_with_fields(RequestCode::PULL_MESSAGE, ExtFields::new()),
            Command::response(crate::code::ResponseCode::SUCCESS, -7).with_remark(&*awkward),
        ];
        let mut fields = Command::request_with_fields(RequestCode(-1), ExtFields::new());
        fields.ext_fields.insert("consumerGroup", "g");
        fields.ext_fields.insert(awkward.clone(), awkward.clone());
        fields
            .ext_fields
            .insert("queueOffset", "-9223372036854775808");
        fields.opaque = i32::MIN;
        fields.flag = i32::MAX;
        fields.version = -1;
        fields.language = LanguageCode(200);
        commands.push(fields);
        for command in &commands {
            let written = by_hand(command);
            assert_eq!(
                String::from_utf8_lossy(&written),
                String::from_utf8_lossy(&with_serde(command))
            );
            let read = decode(&written).expect("a written header reads back");
            assert_eq!(read.ext_fields, command.ext_fields);
            assert_eq!(read.remark, command.remark);
            assert_eq!(
                (read.code, read.opaque, read.flag, read.version),
                (command.code, command.opaque, command.flag, command.version)
            );
        }
    }
}
