//! A tolerant JSON reader for fastjson's output, and a writer for fastjson's non-string map keys.
//!
//! Java brokers and name servers write bodies with fastjson 1.2.x (`RemotingSerializable.java`),
//! whose default writer emits non-standard JSON for maps whose keys are not strings
//! (`remoting-protocol.md` §6):
//!
//! - integer keys unquoted: `{"brokerAddrs":{0:"10.0.0.1:10911"}}` (`BrokerData.brokerAddrs`);
//! - object keys as JSON objects: `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42}}`
//!   (`ResetOffsetBody`, `ConsumerRunningInfo.mqTable`, the local `offsets.json`).
//!
//! [`parse`] reads standard JSON plus those key forms into a [`serde_json::Value`], so typed bodies
//! can then use serde derive. Because a `serde_json` map only has string keys, a key that is not a
//! string is **normalized to its compact JSON text**:
//!
//! | key as written | key in the [`Value`] |
//! |---|---|
//! | `"a"` | `a` |
//! | `0`, `-7` | `0`, `-7` (serde's integer map keys read these back as numbers) |
//! | `{"brokerName":"b","queueId":0,"topic":"T"}` | `{"brokerName":"b","queueId":0,"topic":"T"}` |
//! | `[1,2]`, `true`, `null` | `[1,2]`, `true`, `null` |
//!
//! A normalized object key is the compact text of the parsed key, with its members in the order of
//! `serde_json::Map` (sorted, unless another crate enables `preserve_order`); readers of such keys
//! parse the text again rather than compare it. A string key holding JSON text is therefore read
//! exactly like the object key it spells, which is what non-Java writers that quote such keys need.
//! Non-string keys do not nest: inside a key object every key must be a string (each level of
//! normalization would escape the level below again, doubling its size).
//!
//! Other departures from RFC 8259, all on the lenient side as fastjson's own reader is:
//! raw control characters inside strings are kept; an escaped lone UTF-16 surrogate (which Java
//! strings may hold) becomes U+FFFD; a repeated key keeps its last value, as a Java `HashMap` does.
//! Nothing else is relaxed: no comments, trailing commas, single quotes or bare words.
//!
//! The reader never panics, nests at most [`MAX_DEPTH`] arrays and objects, rejects trailing
//! bytes after the value, and reports every error with the byte position where it was found.
//!
//! [`ObjectWriter`] and [`write_keyed_map`] produce the fastjson key forms for bodies that Java
//! tools read (`ConsumerRunningInfo`, `GetConsumerStatusBody`, `offsets.json`).

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while_m_n};
use nom::character::complete::{char, digit1, one_of};
use nom::combinator::{opt, recognize};
use nom::error::{ErrorKind, ParseError};
use nom::{IResult, Parser};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number};
use thiserror::Error;

pub use serde_json::Value;

/// The deepest nesting of arrays and objects [`parse`] accepts. One level more (128, which is
/// also `serde_json`'s limit) is an error, so hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 127;

/// Why a JSON text could not be read, or a value could not be written.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonError {
    /// The input ended where more was required.
    #[error("unexpected end of input at byte {position}, expected {expected}")]
    UnexpectedEnd {
        /// Byte offset of the end of the input.
        position: usize,
        /// What was required there.
        expected: &'static str,
    },
    /// A byte that cannot start or continue what the grammar requires.
    #[error("unexpected byte 0x{found:02x} at byte {position}, expected {expected}")]
    Unexpected {
        /// Byte offset of the offending byte.
        position: usize,
        /// The offending byte.
        found: u8,
        /// What was required there.
        expected: &'static str,
    },
    /// A backslash escape other than `\" \\ \/ \b \f \n \r \t \uXXXX`.
    #[error("invalid escape sequence at byte {position}")]
    BadEscape {
        /// Byte offset of the backslash.
        position: usize,
    },
    /// A string holds bytes that are not UTF-8.
    #[error("invalid UTF-8 in a string at byte {position}")]
    InvalidUtf8 {
        /// Byte offset of the first invalid byte.
        position: usize,
    },
    /// A number does not follow the JSON grammar (`01`, `1.`, `-`, `1e`).
    #[error("invalid number at byte {position}")]
    InvalidNumber {
        /// Byte offset of the number's first byte.
        position: usize,
    },
    /// A number too large for a 64-bit float.
    #[error("number out of range at byte {position}")]
    NumberOutOfRange {
        /// Byte offset of the number's first byte.
        position: usize,
    },
    /// Arrays and objects nest deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {limit} levels at byte {position}")]
    TooDeep {
        /// Byte offset of the bracket that went one level too deep.
        position: usize,
        /// [`MAX_DEPTH`].
        limit: usize,
    },
    /// Bytes other than whitespace follow the value.
    #[error("trailing data at byte {position}")]
    TrailingData {
        /// Byte offset of the first trailing byte.
        position: usize,
    },
    /// The JSON is well formed but does not have the shape of the requested type.
    #[error("unexpected JSON shape: {0}")]
    Shape(String),
    /// A value could not be serialized (for example a map with keys serde cannot stringify).
    #[error("cannot serialize: {0}")]
    Unserializable(String),
}

impl JsonError {
    /// The byte offset in the input where the error was found, for syntax errors.
    pub fn position(&self) -> Option<usize> {
        match self {
            Self::UnexpectedEnd { position, .. }
            | Self::Unexpected { position, .. }
            | Self::BadEscape { position }
            | Self::InvalidUtf8 { position }
            | Self::InvalidNumber { position }
            | Self::NumberOutOfRange { position }
            | Self::TooDeep { position, .. }
            | Self::TrailingData { position } => Some(*position),
            Self::Shape(_) | Self::Unserializable(_) => None,
        }
    }
}

/// Parses one JSON value, accepting fastjson's non-string map keys (see the module docs for how
/// they are normalized). Whitespace may surround the value; anything else after it is an error.
pub fn parse(input: &[u8]) -> Result<Value, JsonError> {
    let result = value(input, Nest::TOP).and_then(|(rest, parsed)| {
        let (rest, _) = whitespace(rest)?;
        if rest.is_empty() {
            Ok(parsed)
        } else {
            fail(rest, Reason::Trailing).map(|(_, ())| parsed)
        }
    });
    result.map_err(|e| match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e.into_json_error(input.len()),
        // Only the `complete` parsers are used, which never ask for more input.
        nom::Err::Incomplete(_) => JsonError::UnexpectedEnd {
            position: input.len(),
            expected: "more input",
        },
    })
}

/// Parses `input` with [`parse`] and deserializes the result into `T`.
pub fn from_slice<T: DeserializeOwned>(input: &[u8]) -> Result<T, JsonError> {
    let parsed = parse(input)?;
    serde_json::from_value(parsed).map_err(|e| JsonError::Shape(e.to_string()))
}

/// Writes one JSON object member by member into a byte buffer.
///
/// Members are written in call order. Use [`ObjectWriter::field_with`] and [`write_keyed_map`]
/// for members that need fastjson's non-string keys; every other member is plain `serde_json`.
#[derive(Debug)]
pub struct ObjectWriter<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> ObjectWriter<'a> {
    /// Starts an object at the end of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Self { out, empty: true }
    }

    /// Writes the member `name` with `value` serialized by `serde_json`.
    pub fn field<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<(), JsonError> {
        self.key(name)?;
        write_serde(self.out, value)
    }

    /// Writes the member `name` whose value `write` appends to the buffer itself.
    pub fn field_with(
        &mut self,
        name: &str,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), JsonError>,
    ) -> Result<(), JsonError> {
        self.key(name)?;
        write(self.out)
    }

    /// Closes the object.
    pub fn finish(self) {
        self.out.push(b'}');
    }

    fn key(&mut self, name: &str) -> Result<(), JsonError> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        write_serde(self.out, name)?;
        self.out.push(b':');
        Ok(())
    }
}

/// Appends a map the way fastjson's default `MapSerializer` writes it: every key as its own JSON
/// value, so `i64` keys come out unquoted (`{0:"a"}`) and struct keys as objects
/// (`{{"brokerName":"b","queueId":0,"topic":"T"}:42}`); string keys stay quoted.
pub fn write_keyed_map<'e, K, V>(
    out: &mut Vec<u8>,
    entries: impl IntoIterator<Item = (&'e K, &'e V)>,
) -> Result<(), JsonError>
where
    K: Serialize + ?Sized + 'e,
    V: Serialize + ?Sized + 'e,
{
    out.push(b'{');
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_serde(out, key)?;
        out.push(b':');
        write_serde(out, value)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_serde<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), JsonError> {
    serde_json::to_writer(out, value).map_err(|e| JsonError::Unserializable(e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// The grammar. Every function takes the remaining input and returns the rest; errors carry the
// remaining input at the failure point, from which `parse` computes the byte position. All
// failures are `nom::Err::Failure`: dispatch is on the next byte, so nothing ever backtracks.

type PResult<'a, T> = IResult<&'a [u8], T, PError<'a>>;

#[derive(Debug)]
struct PError<'a> {
    at: &'a [u8],
    reason: Reason,
}

#[derive(Debug)]
enum Reason {
    Expected(&'static str),
    BadEscape,
    InvalidUtf8,
    InvalidNumber,
    NumberOutOfRange,
    TooDeep,
    Trailing,
}

impl PError<'_> {
    fn into_json_error(self, total: usize) -> JsonError {
        let position = total.saturating_sub(self.at.len());
        match self.reason {
            Reason::Expected(expected) => match self.at.first() {
                Some(&found) => JsonError::Unexpected {
                    position,
                    found,
                    expected,
                },
                None => JsonError::UnexpectedEnd { position, expected },
            },
            Reason::BadEscape => JsonError::BadEscape { position },
            Reason::InvalidUtf8 => JsonError::InvalidUtf8 { position },
            Reason::InvalidNumber => JsonError::InvalidNumber { position },
            Reason::NumberOutOfRange => JsonError::NumberOutOfRange { position },
            Reason::TooDeep => JsonError::TooDeep {
                position,
                limit: MAX_DEPTH,
            },
            Reason::Trailing => JsonError::TrailingData { position },
        }
    }
}

impl<'a> ParseError<&'a [u8]> for PError<'a> {
    fn from_error_kind(input: &'a [u8], kind: ErrorKind) -> Self {
        let expected = match kind {
            ErrorKind::Digit => "a digit",
            ErrorKind::Char | ErrorKind::OneOf | ErrorKind::Tag => "a specific character",
            _ => "valid JSON",
        };
        Self {
            at: input,
            reason: Reason::Expected(expected),
        }
    }

    fn append(_: &'a [u8], _: ErrorKind, other: Self) -> Self {
        other
    }
}

fn fail<T>(at: &[u8], reason: Reason) -> PResult<'_, T> {
    Err(nom::Err::Failure(PError { at, reason }))
}

fn whitespace(input: &[u8]) -> PResult<'_, &[u8]> {
    take_while(|b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).parse(input)
}

/// Where a value sits.
#[derive(Clone, Copy)]
struct Nest {
    /// The number of enclosing arrays and objects.
    depth: usize,
    /// Whether the value is (part of) a non-string object key. Such keys are normalized to text,
    /// and text inside text is escaped again: letting non-string keys nest would double the
    /// backslashes at every level, an exponential blow-up from a few hundred input bytes. So a
    /// non-string key may hold only string keys, which is all fastjson ever writes.
    in_key: bool,
}

impl Nest {
    const TOP: Self = Self {
        depth: 0,
        in_key: false,
    };
}

/// One value after optional whitespace.
fn value(input: &[u8], nest: Nest) -> PResult<'_, Value> {
    let (input, _) = whitespace(input)?;
    match input.first() {
        Some(b'{') => object(input, nest),
        Some(b'[') => array(input, nest),
        Some(b'"') => string(input).map(|(rest, s)| (rest, Value::String(s))),
        Some(b't') => literal(input, "true", Value::Bool(true)),
        Some(b'f') => literal(input, "false", Value::Bool(false)),
        Some(b'n') => literal(input, "null", Value::Null),
        Some(b'-' | b'0'..=b'9') => number(input),
        _ => fail(input, Reason::Expected("a JSON value")),
    }
}

fn literal<'a>(input: &'a [u8], word: &'static str, parsed: Value) -> PResult<'a, Value> {
    match tag::<_, _, PError<'a>>(word).parse(input) {
        Ok((rest, _)) => Ok((rest, parsed)),
        Err(_) => fail(input, Reason::Expected("a JSON value")),
    }
}

/// Opens a container at `input` (which starts with its bracket), enforcing [`MAX_DEPTH`];
/// returns the nesting of its members.
fn open(input: &[u8], bracket: char, nest: Nest) -> PResult<'_, Nest> {
    let depth = nest.depth + 1;
    if depth > MAX_DEPTH {
        return fail(input, Reason::TooDeep);
    }
    let (rest, _) = char(bracket).parse(input)?;
    Ok((rest, Nest { depth, ..nest }))
}

fn object(input: &[u8], nest: Nest) -> PResult<'_, Value> {
    let (rest, inner) = open(input, '{', nest)?;
    let mut map = Map::new();
    let (mut rest, _) = whitespace(rest)?;
    if let Some((b'}', after)) = rest.split_first() {
        return Ok((after, Value::Object(map)));
    }
    loop {
        let (after_key, key) = key(rest, inner)?;
        let (after_colon, _) = whitespace(after_key)?;
        let Some((b':', after_colon)) = after_colon.split_first() else {
            return fail(after_colon, Reason::Expected("':' after an object key"));
        };
        let (after_value, member) = value(after_colon, inner)?;
        // A repeated key keeps its last value, as fastjson's reader into a HashMap does.
        map.insert(key, member);
        let (after_value, _) = whitespace(after_value)?;
        match after_value.split_first() {
            Some((b',', next)) => rest = next,
            Some((b'}', next)) => return Ok((next, Value::Object(map))),
            _ => return fail(after_value, Reason::Expected("',' or '}' in an object")),
        }
    }
}

/// An object key: a string, or (fastjson) any other value, normalized to its compact JSON text.
fn key(input: &[u8], nest: Nest) -> PResult<'_, String> {
    let (input, _) = whitespace(input)?;
    match input.first() {
        Some(b'"') => string(input),
        Some(b'{' | b'[' | b't' | b'f' | b'n' | b'-' | b'0'..=b'9') if nest.in_key => fail(
            input,
            Reason::Expected("a string key inside a non-string key"),
        ),
        Some(b'{' | b'[' | b't' | b'f' | b'n' | b'-' | b'0'..=b'9') => {
            let (rest, parsed) = value(
                input,
                Nest {
                    in_key: true,
                    ..nest
                },
            )?;
            Ok((rest, parsed.to_string()))
        }
        _ => fail(input, Reason::Expected("an object key")),
    }
}

fn array(input: &[u8], nest: Nest) -> PResult<'_, Value> {
    let (rest, inner) = open(input, '[', nest)?;
    let mut items = Vec::new();
    let (mut rest, _) = whitespace(rest)?;
    if let Some((b']', after)) = rest.split_first() {
        return Ok((after, Value::Array(items)));
    }
    loop {
        let (after_value, item) = value(rest, inner)?;
        items.push(item);
        let (after_value, _) = whitespace(after_value)?;
        match after_value.split_first() {
            Some((b',', next)) => rest = next,
            Some((b']', next)) => return Ok((next, Value::Array(items))),
            _ => return fail(after_value, Reason::Expected("',' or ']' in an array")),
        }
    }
}

fn string(input: &[u8]) -> PResult<'_, String> {
    let (mut rest, _) = char('"').parse(input)?;
    let mut out = String::new();
    loop {
        // A run without quote or backslash. Both are ASCII, so a run never splits a UTF-8
        // sequence; raw control characters are kept, as fastjson's reader keeps them.
        let (after_run, run) = take_while(|b: u8| b != b'"' && b != b'\\').parse(rest)?;
        match std::str::from_utf8(run) {
            Ok(text) => out.push_str(text),
            Err(e) => {
                let bad = rest.get(e.valid_up_to()..).unwrap_or(rest);
                return fail(bad, Reason::InvalidUtf8);
            }
        }
        match after_run.split_first() {
            Some((b'"', next)) => return Ok((next, out)),
            Some((b'\\', _)) => rest = escape(after_run, &mut out)?.0,
            _ => return fail(after_run, Reason::Expected("'\"' closing a string")),
        }
    }
}

/// One backslash escape at `input`, appended to `out`.
fn escape<'a>(input: &'a [u8], out: &mut String) -> PResult<'a, ()> {
    let Some((b'\\', rest)) = input.split_first() else {
        return fail(input, Reason::BadEscape);
    };
    let Some((&letter, rest)) = rest.split_first() else {
        return fail(input, Reason::BadEscape);
    };
    let simple = match letter {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return unicode_escape(input, rest, out),
        _ => return fail(input, Reason::BadEscape),
    };
    out.push(simple);
    Ok((rest, ()))
}

/// `\uXXXX` (the backslash at `start`, `digits` just after the `u`), joining a surrogate pair.
fn unicode_escape<'a>(start: &'a [u8], digits: &'a [u8], out: &mut String) -> PResult<'a, ()> {
    let Some((rest, unit)) = hex4(digits) else {
        return fail(start, Reason::BadEscape);
    };
    let unit = u32::from(unit);
    if (0xD800..0xDC00).contains(&unit)
        && let Some((after, low)) = rest.strip_prefix(b"\\u").and_then(hex4)
        && (0xDC00..0xE000).contains(&u32::from(low))
    {
        let joined = 0x10000 + ((unit - 0xD800) << 10) + (u32::from(low) - 0xDC00);
        out.push(char::from_u32(joined).unwrap_or(char::REPLACEMENT_CHARACTER));
        return Ok((after, ()));
    }
    // A lone surrogate is legal in a Java string but not in a Rust one.
    out.push(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER));
    Ok((rest, ()))
}

fn hex4(input: &[u8]) -> Option<(&[u8], u16)> {
    let (rest, digits) = take_while_m_n::<_, _, PError<'_>>(4, 4, |b: u8| b.is_ascii_hexdigit())
        .parse(input)
        .ok()?;
    let text = std::str::from_utf8(digits).ok()?;
    Some((rest, u16::from_str_radix(text, 16).ok()?))
}

fn number(input: &[u8]) -> PResult<'_, Value> {
    let mut grammar = recognize::<_, PError<'_>, _>((
        opt(char('-')),
        alt((tag("0"), digit1)),
        opt((char('.'), digit1)),
        opt((one_of("eE"), opt(one_of("+-")), digit1)),
    ));
    let Ok((rest, text)) = grammar.parse(input) else {
        return fail(input, Reason::InvalidNumber);
    };
    // What the grammar stopped short of (`01`, `1.`, `1e+`) is a malformed number, not a
    // separator the caller should complain about.
    if let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = rest.first() {
        return fail(input, Reason::InvalidNumber);
    }
    let Ok(text) = std::str::from_utf8(text) else {
        return fail(input, Reason::InvalidNumber);
    };
    let integral = !text.contains(['.', 'e', 'E']);
    let parsed = if text == "-0" {
        // serde_json keeps the sign of a negative zero by reading it as a float; do the same so
        // both readers give equal values for standard JSON.
        Number::from_f64(-0.0)
    } else if integral {
        // Integers that overflow 64 bits fall back to a float, as serde_json does; the typed
        // layer then rejects them where an integer is required.
        text.parse::<i64>()
            .map(Number::from)
            .or_else(|_| text.parse::<u64>().map(Number::from))
            .ok()
    } else {
        None
    };
    let parsed = match parsed {
        Some(n) => n,
        None => match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => n,
            None => return fail(input, Reason::NumberOutOfRange),
        },
    };
    Ok((rest, Value::Number(parsed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(input: &str) -> JsonError {
        parse(input.as_bytes()).expect_err(input)
    }

    #[test]
    fn reads_standard_json() {
        let v = parse(br#" {"a": [1, -2, 3.5, true, false, null, "x\ny"], "b": {}} "#).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": [1, -2, 3.5, true, false, null, "x\ny"], "b": {}})
        );
    }

    #[test]
    fn normalizes_bare_integer_keys() {
        let v = parse(br#"{0:"a",-1:"b","2":"c"}"#).unwrap();
        assert_eq!(v, serde_json::json!({"0": "a", "-1": "b", "2": "c"}));
    }

    #[test]
    fn normalizes_object_keys_to_compact_text() {
        let v = parse(br#"{ { "topic" : "T", "brokerName":"b","queueId":0 } : 42 }"#).unwrap();
        let map = v.as_object().unwrap();
        let (key, value) = map.iter().next().unwrap();
        assert_eq!(value, &serde_json::json!(42));
        let key: Value = serde_json::from_str(key).unwrap();
        assert_eq!(
            key,
            serde_json::json!({"brokerName": "b", "queueId": 0, "topic": "T"})
        );
    }

    #[test]
    fn non_string_keys_do_not_nest() {
        // One level of normalization is linear in the input.
        assert!(parse(br#"{{"a":{"b":[1]}}:1}"#).is_ok());
        let e = parse(br#"{{"a":{0:1}}:1}"#).unwrap_err();
        assert_eq!(
            e,
            JsonError::Unexpected {
                position: 7,
                found: b'0',
                expected: "a string key inside a non-string key"
            }
        );
        assert!(parse(br#"{[{{"a":1}:2}]:3}"#).is_err());
        // What would otherwise double at every level.
        let mut bomb = Vec::new();
        for _ in 0..100 {
            bomb.extend_from_slice(b"{");
        }
        bomb.extend_from_slice(br#"""":1"#);
        for _ in 0..100 {
            bomb.extend_from_slice(b"}:1");
        }
        assert!(parse(&bomb).is_err());
    }

    #[test]
    fn repeated_key_keeps_last_value() {
        assert_eq!(
            parse(br#"{"a":1,"a":2}"#).unwrap(),
            serde_json::json!({"a": 2})
        );
    }

    #[test]
    fn escapes_and_surrogates() {
        let v = parse(br#""\u00e9\ud83d\ude00\/\b\f\r\t\\\"""#).unwrap();
        assert_eq!(v, Value::String("é😀/\u{8}\u{c}\r\t\\\"".into()));
        let lone = parse(br#""a\ud800b\udc00""#).unwrap();
        assert_eq!(lone, Value::String("a\u{FFFD}b\u{FFFD}".into()));
    }

    #[test]
    fn raw_control_characters_are_kept() {
        assert_eq!(
            parse(b"\"a\x01b\"").unwrap(),
            Value::String("a\u{1}b".into())
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            parse(b"-9223372036854775808").unwrap(),
            serde_json::json!(i64::MIN)
        );
        assert_eq!(
            parse(b"18446744073709551615").unwrap(),
            serde_json::json!(u64::MAX)
        );
        assert!(parse(b"18446744073709551616").unwrap().is_f64());
        assert_eq!(parse(b"1.5e3").unwrap(), serde_json::json!(1500.0));
        assert_eq!(
            parse(b"-0").unwrap(),
            serde_json::from_str::<Value>("-0").unwrap(),
            "negative zero as serde_json reads it"
        );
        assert_eq!(err("1e400"), JsonError::NumberOutOfRange { position: 0 });
        assert_eq!(err("[01]"), JsonError::InvalidNumber { position: 1 });
        assert_eq!(err("1."), JsonError::InvalidNumber { position: 0 });
        assert_eq!(err("-"), JsonError::InvalidNumber { position: 0 });
        assert_eq!(err("1e+"), JsonError::InvalidNumber { position: 0 });
    }

    #[test]
    fn positions() {
        assert_eq!(
            err(r#"{"a":1,}"#),
            JsonError::Unexpected {
                position: 7,
                found: b'}',
                expected: "an object key"
            }
        );
        assert_eq!(
            err(r#"{"a" 1}"#),
            JsonError::Unexpected {
                position: 5,
                found: b'1',
                expected: "':' after an object key"
            }
        );
        assert_eq!(err("[1] x"), JsonError::TrailingData { position: 4 });
        assert_eq!(
            err(""),
            JsonError::UnexpectedEnd {
                position: 0,
                expected: "a JSON value"
            }
        );
        assert_eq!(err(r#""a\x""#), JsonError::BadEscape { position: 2 });
        assert_eq!(err(r#""\u12""#), JsonError::BadEscape { position: 1 });
        assert_eq!(
            parse(b"\"ab\xff\"").unwrap_err(),
            JsonError::InvalidUtf8 { position: 3 }
        );
        assert_eq!(err("tru"), err("trux"));
        assert_eq!(err("nul").position(), Some(0));
    }

    #[test]
    fn depth_limit() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(ok.as_bytes()).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(
            parse(deep.as_bytes()).unwrap_err(),
            JsonError::TooDeep {
                position: MAX_DEPTH,
                limit: MAX_DEPTH
            }
        );
        // An object key counts as a level inside its object.
        let keyed = format!("{}{{{{", "[".repeat(MAX_DEPTH - 2));
        assert!(matches!(
            parse(keyed.as_bytes()).unwrap_err(),
            JsonError::UnexpectedEnd { .. }
        ));
        let keyed = format!("{}{{{{", "[".repeat(MAX_DEPTH - 1));
        assert!(matches!(
            parse(keyed.as_bytes()).unwrap_err(),
            JsonError::TooDeep { .. }
        ));
    }

    #[test]
    fn writer_emits_fastjson_keys() {
        let mut out = Vec::new();
        let mut w = ObjectWriter::new(&mut out);
        w.field("name", "x\"y").unwrap();
        w.field_with("addrs", |out| {
            write_keyed_map(out, [(&0i64, "a"), (&1i64, "b")])
        })
        .unwrap();
        w.field_with("strings", |out| write_keyed_map(out, [("k", &1)]))
            .unwrap();
        w.finish();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"name":"x\"y","addrs":{0:"a",1:"b"},"strings":{"k":1}}"#
        );
        assert_eq!(
            parse(&out).unwrap(),
            serde_json::json!({"name": "x\"y", "addrs": {"0": "a", "1": "b"}, "strings": {"k": 1}})
        );
    }

    #[test]
    fn from_slice_reports_shape_errors() {
        let e = from_slice::<Vec<i32>>(br#"{"a":1}"#).unwrap_err();
        assert!(matches!(e, JsonError::Shape(_)), "{e}");
        assert_eq!(e.position(), None);
    }
}
