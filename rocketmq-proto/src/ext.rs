//! `extFields`: the string map that carries a command's typed ("custom") header.
//!
//! Java flattens every header class into this map by reflection (`makeCustomHeaderToNet` in
//! `RemotingCommand.java`): the key is the field name, the value its `toString()`, and null
//! fields are left out. [`CommandHeader`] is the typed view; [`command_header!`](crate::command_header)
//! writes one.

use std::borrow::Cow;

use thiserror::Error;

use crate::ext_string::ExtString;

/// The `extFields` of a command: ordered by key, so encoding is deterministic.
///
/// A typed header's keys are its field names, `'static` strings: they are borrowed, not copied,
/// so encoding a header allocates its values only (a pull request's nine keys were nine
/// allocations of every pull). Keys read from the wire are owned. Values are [`ExtString`]s,
/// held inline when short (numbers, most names).
///
/// The entries sit in one vector sorted by key: a header has a dozen fields or so, and a
/// search in one block of memory beats a tree's nodes (a `BTreeMap` of a pull request's
/// fields was three allocations, and its inserts a few per cent of a consumer's CPU).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExtFields(Vec<(Cow<'static, str>, ExtString)>);

impl std::fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl ExtFields {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty map with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        Self(Vec::with_capacity(capacity))
    }

    /// Sets `key` to `value`, replacing what was there.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<ExtString>) {
        self.set(Cow::Owned(key.into()), value.into());
    }

    /// Where `key` is, or where it would go.
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key))
    }

    fn set(&mut self, key: Cow<'static, str>, value: ExtString) {
        // A header whose fields are declared in key order is set in that order: each goes at
        // the end after one comparison.
        if self.0.last().is_none_or(|(last, _)| *last < key) {
            self.0.push((key, value));
            return;
        }
        match self.find(&key) {
            Ok(at) => {
                if let Some(entry) = self.0.get_mut(at) {
                    entry.1 = value;
                }
            }
            Err(at) => self.0.insert(at, (key, value)),
        }
    }

    /// The fields as read from the wire, in the order they came: a key the client reads often
    /// (a field of the answers to pulls, sends, offset queries and pops) is stored as its
    /// `'static` name, not copied. Sorted once at the end ([`FieldsRead::finish`]), so a peer
    /// that sends a long map in reverse order costs `n log n`, not `n²`.
    pub(crate) fn read() -> FieldsRead {
        FieldsRead(Vec::with_capacity(8))
    }

    /// `pairs` sorted by key; of two with the same key, the later stays.
    pub(crate) fn from_pairs(mut pairs: Vec<(Cow<'static, str>, ExtString)>) -> Self {
        // Reversed first, so that the stable sort puts the later of two equal keys first,
        // and `dedup_by` keeps the first of a run.
        pairs.reverse();
        pairs.sort_by(|(a, _), (b, _)| a.cmp(b));
        pairs.dedup_by(|(later, _), (kept, _)| later == kept);
        Self(pairs)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let at = self.find(key).ok()?;
        Some(self.0.remove(at).1.into_string())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let at = self.find(key).ok()?;
        self.0.get(at).map(|(_, value)| value.as_str())
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_ref(), v.as_str()))
    }

    /// The entries in key order, values as bytes (see [`ExtString::as_bytes`]).
    pub(crate) fn iter_bytes(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.0.iter().map(|(k, v)| (k.as_ref(), v.as_bytes()))
    }

    /// A required typed value: an error naming `key` when it is missing or does not parse.
    pub fn required<T: ExtValue>(&self, key: &'static str) -> Result<T, HeaderError> {
        required_value(key, self.get(key))
    }

    /// An optional typed value: `None` when missing, an error naming `key` when it does not parse.
    pub fn optional<T: ExtValue>(&self, key: &'static str) -> Result<Option<T>, HeaderError> {
        optional_value(key, self.get(key))
    }

    /// Sets `key` (a field name: borrowed, not copied) to the wire form of `value`.
    pub fn put<T: ExtValue>(&mut self, key: &'static str, value: &T) {
        self.set(Cow::Borrowed(key), value.to_ext());
    }
}

impl FromIterator<(String, String)> for ExtFields {
    /// The pairs in any order; of two with the same key, the later stays.
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        Self::from_pairs(
            iter.into_iter()
                .map(|(k, v)| (Cow::Owned(k), ExtString::from(v)))
                .collect(),
        )
    }
}

/// The required field `key`, found as `raw` (`None`: missing), parsed: what
/// [`ExtFields::required`] and [`command_header!`](crate::command_header)'s readers answer.
#[doc(hidden)]
pub fn required_value<T: ExtValue>(key: &'static str, raw: Option<&str>) -> Result<T, HeaderError> {
    match raw {
        Some(raw) => T::parse_ext(raw).ok_or_else(|| HeaderError::invalid::<T>(key, raw)),
        None => Err(HeaderError::Missing { field: key }),
    }
}

/// The optional field `key`, found as `raw`, parsed: `None` when missing (see
/// [`ExtFields::optional`]).
#[doc(hidden)]
pub fn optional_value<T: ExtValue>(
    key: &'static str,
    raw: Option<&str>,
) -> Result<Option<T>, HeaderError> {
    match raw {
        Some(raw) => T::parse_ext(raw)
            .map(Some)
            .ok_or_else(|| HeaderError::invalid::<T>(key, raw)),
        None => Ok(None),
    }
}

/// [`ExtFields`] being read from the wire (see [`ExtFields::read`]).
pub(crate) struct FieldsRead(Vec<(Cow<'static, str>, ExtString)>);

impl FieldsRead {
    /// The next field read.
    pub(crate) fn push(&mut self, key: &str, value: ExtString) {
        let key = match interned(key) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(key.to_owned()),
        };
        self.0.push((key, value));
    }

    /// Every field read, sorted.
    pub(crate) fn finish(self) -> ExtFields {
        ExtFields::from_pairs(self.0)
    }
}

/// `key` as a `'static` name, when it is one the answers the client reads most carry.
fn interned(key: &str) -> Option<&'static str> {
    Some(match key {
        // PULL_MESSAGE's answer (4.x, and 5.x's additions).
        "suggestWhichBrokerId" => "suggestWhichBrokerId",
        "nextBeginOffset" => "nextBeginOffset",
        "minOffset" => "minOffset",
        "maxOffset" => "maxOffset",
        "offsetDelta" => "offsetDelta",
        "topicSysFlag" => "topicSysFlag",
        "groupSysFlag" => "groupSysFlag",
        "forbiddenType" => "forbiddenType",
        // SEND_MESSAGE's, and offset queries'.
        "msgId" => "msgId",
        "queueId" => "queueId",
        "queueOffset" => "queueOffset",
        "transactionId" => "transactionId",
        "batchUniqId" => "batchUniqId",
        "MSG_REGION" => "MSG_REGION",
        "TRACE_ON" => "TRACE_ON",
        "offset" => "offset",
        // POP_MESSAGE's.
        "popTime" => "popTime",
        "invisibleTime" => "invisibleTime",
        "reviveQid" => "reviveQid",
        "restNum" => "restNum",
        "startOffsetInfo" => "startOffsetInfo",
        "msgOffsetInfo" => "msgOffsetInfo",
        "orderCountInfo" => "orderCountInfo",
        _ => return None,
    })
}

/// An entry of [`ExtFields`], as its iterator gives it.
type Entry<'a> = &'a (Cow<'static, str>, ExtString);

impl<'a> IntoIterator for &'a ExtFields {
    type Item = (&'a str, &'a str);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Cow<'static, str>, ExtString)>,
        fn(Entry<'a>) -> (&'a str, &'a str),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k.as_ref(), v.as_str()))
    }
}

/// A typed header field that failed to decode.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderError {
    /// A required field is absent.
    #[error("missing header field `{field}`")]
    Missing {
        /// The `extFields` key.
        field: &'static str,
    },
    /// A field is present but is not of its type.
    #[error("header field `{field}` = {value:?} is not a valid {expected}")]
    Invalid {
        /// The `extFields` key.
        field: &'static str,
        /// What arrived.
        value: String,
        /// The expected type.
        expected: &'static str,
    },
}

impl HeaderError {
    fn invalid<T: ExtValue>(field: &'static str, raw: &str) -> Self {
        Self::Invalid {
            field,
            value: raw.to_owned(),
            expected: T::KIND,
        }
    }
}

/// A value that travels as an `extFields` string.
pub trait ExtValue: Sized {
    /// What the value is, for error messages.
    const KIND: &'static str;
    /// Parses the wire string.
    fn parse_ext(raw: &str) -> Option<Self>;
    /// The wire string.
    fn to_ext(&self) -> ExtString;
}

impl ExtValue for String {
    const KIND: &'static str = "string";
    fn parse_ext(raw: &str) -> Option<Self> {
        Some(raw.to_owned())
    }
    fn to_ext(&self) -> ExtString {
        ExtString::new(self)
    }
}

macro_rules! ext_integer {
    ($($ty:ty => $kind:literal),*) => {$(
        impl ExtValue for $ty {
            const KIND: &'static str = $kind;
            fn parse_ext(raw: &str) -> Option<Self> {
                raw.trim().parse().ok()
            }
            fn to_ext(&self) -> ExtString {
                ExtString::integer(i64::from(*self))
            }
        }
    )*};
}
ext_integer!(i32 => "32-bit integer", i64 => "64-bit integer");

impl ExtValue for bool {
    const KIND: &'static str = "boolean";
    /// Java's `Boolean.parseBoolean` treats anything but `true` as false; we accept only the two
    /// spellings (any case) so a garbled value is reported rather than silently read as false.
    fn parse_ext(raw: &str) -> Option<Self> {
        if raw.eq_ignore_ascii_case("true") {
            Some(true)
        } else if raw.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        }
    }
    fn to_ext(&self) -> ExtString {
        ExtString::new(if *self { "true" } else { "false" })
    }
}

/// A typed command header, carried in [`ExtFields`].
pub trait CommandHeader: Sized {
    /// Writes the fields into `ext` (absent optional fields are left out, as Java does).
    fn encode_into(&self, ext: &mut ExtFields);
    /// Reads the fields; an error names the first missing or malformed required field.
    fn decode_from(ext: &ExtFields) -> Result<Self, HeaderError>;

    /// The header as a fresh map.
    fn to_ext_fields(&self) -> ExtFields {
        let mut ext = ExtFields::new();
        self.encode_into(&mut ext);
        ext
    }
}

/// Defines a [`CommandHeader`] struct. Each field is `req` (always sent; missing is an error) or
/// `opt` (an `Option`, left out when `None`), with its `extFields` key:
///
/// ```
/// rocketmq_proto::command_header! {
///     /// Example.
///     pub struct Example {
///         /// The group.
///         req group: String = "consumerGroup",
///         /// The queue.
///         opt queue_id: i32 = "queueId",
///     }
/// }
/// ```
#[macro_export]
macro_rules! command_header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $kind:ident $field:ident : $ty:ty = $key:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $crate::command_header!(@type $kind $ty), )*
        }

        impl $crate::ext::CommandHeader for $name {
            fn encode_into(&self, ext: &mut $crate::ext::ExtFields) {
                let _ = &ext;
                $( $crate::command_header!(@put $kind ext, $key, self.$field); )*
            }

            fn decode_from(
                ext: &$crate::ext::ExtFields,
            ) -> ::std::result::Result<Self, $crate::ext::HeaderError> {
                // One pass over the fields, each key matched against the header's (most differ
                // in length, so a match costs a length compare): a search of the map per field
                // was a string compare at each step, 29 `memcmp` calls per pull answer.
                const KEYS: &[&str] = &[$($key),*];
                let mut found: [Option<&str>; KEYS.len()] = [None; KEYS.len()];
                for (key, value) in ext.iter() {
                    if let Some(slot) = KEYS
                        .iter()
                        .position(|k| *k == key)
                        .and_then(|at| found.get_mut(at))
                    {
                        *slot = Some(value);
                    }
                }
                // In declaration order, as `KEYS`: the first bad required field is named.
                let mut found = found.into_iter();
                // A header without fields reads none.
                let _ = &mut found;
                Ok(Self {
                    $( $field: $crate::command_header!(@get $kind found, $key, $ty), )*
                })
            }

            /// Room for every field in one allocation (a pull request's, at every pull).
            fn to_ext_fields(&self) -> $crate::ext::ExtFields {
                let fields: &[&str] = &[$($key),*];
                let mut ext = $crate::ext::ExtFields::with_capacity(fields.len());
                self.encode_into(&mut ext);
                ext
            }
        }
    };
    (@type req $ty:ty) => { $ty };
    (@type opt $ty:ty) => { ::std::option::Option<$ty> };
    (@put req $ext:ident, $key:literal, $value:expr) => { $ext.put($key, &$value) };
    (@put opt $ext:ident, $key:literal, $value:expr) => {
        if let Some(value) = &$value { $ext.put($key, value) }
    };
    (@get req $found:ident, $key:literal, $ty:ty) => {
        $crate::ext::required_value::<$ty>($key, $found.next().flatten())?
    };
    (@get opt $found:ident, $key:literal, $ty:ty) => {
        $crate::ext::optional_value::<$ty>($key, $found.next().flatten())?
    };
}

#[cfg(test)]
// The macro declares `pub` items, as headers are public API; here they only serve the tests.
#[allow(unreachable_pub)]
mod tests {
    use super::*;

    command_header! {
        /// Test header.
        pub struct Sample {
            /// A required string.
            req group: String = "consumerGroup",
            /// A required number.
            req queue_id: i32 = "queueId",
            /// An optional flag.
            opt flag: bool = "flag",
        }
    }

    #[test]
    fn missing_required_field_is_named() {
        let mut ext = ExtFields::new();
        ext.insert("consumerGroup", "g");
        assert_eq!(
            Sample::decode_from(&ext),
            Err(HeaderError::Missing { field: "queueId" })
        );
    }

    #[test]
    fn malformed_number_is_named() {
        let mut ext = ExtFields::new();
        ext.insert("consumerGroup", "g");
        ext.insert("queueId", "seven");
        let err = Sample::decode_from(&ext).expect_err("queueId is not a number");
        assert!(err.to_string().contains("queueId"), "{err}");
    }

    /// A header is read in one pass over the map: keys it does not declare are passed over,
    /// each declared field gets its own key's value whatever the order on the wire, and of two
    /// bad fields the error names the one declared first.
    #[test]
    fn fields_are_read_by_key_and_the_first_declared_bad_one_is_named() {
        let ext: ExtFields = [
            ("zeta", "ignored"),
            ("flag", "true"),
            ("queueId", "7"),
            ("consumer", "not the group"),
            ("consumerGroup", "g"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(
            Sample::decode_from(&ext),
            Ok(Sample {
                group: "g".into(),
                queue_id: 7,
                flag: Some(true),
            })
        );
        let mut bad = ExtFields::new();
        bad.insert("flag", "maybe");
        bad.insert("queueId", "seven");
        let err = Sample::decode_from(&bad).expect_err("the group is missing");
        assert_eq!(
            err,
            HeaderError::Missing {
                field: "consumerGroup"
            }
        );
        bad.insert("consumerGroup", "g");
        let err = Sample::decode_from(&bad).expect_err("queueId is not a number");
        assert!(err.to_string().contains("queueId"), "{err}");
    }

    #[test]
    fn optional_absent_round_trips() {
        let header = Sample {
            group: "g".into(),
            queue_id: 3,
            flag: None,
        };
        let ext = header.to_ext_fields();
        assert_eq!(ext.len(), 2);
        assert_eq!(Sample::decode_from(&ext), Ok(header));
    }

    /// However the fields were set, they come out in key order, one per key, the last value
    /// set winning, as Java's `TreeMap` (which signing follows) would hold them.
    #[test]
    fn fields_come_out_in_key_order_with_the_last_value_set() {
        let mut set = ExtFields::new();
        for (key, value) in [("b", "1"), ("a", "2"), ("c", "3"), ("a", "4"), ("ab", "5")] {
            set.insert(key, value);
        }
        let collected: ExtFields = [("b", "1"), ("a", "2"), ("c", "3"), ("a", "4"), ("ab", "5")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let mut read = ExtFields::read();
        for (key, value) in [("b", "1"), ("a", "2"), ("c", "3"), ("a", "4"), ("ab", "5")] {
            read.push(key, ExtString::new(value));
        }
        let read = read.finish();
        for fields in [&set, &collected, &read] {
            let entries: Vec<(&str, &str)> = fields.iter().collect();
            assert_eq!(entries, [("a", "4"), ("ab", "5"), ("b", "1"), ("c", "3")]);
            assert_eq!(fields.get("a"), Some("4"));
            assert_eq!(fields.get("d"), None);
        }
        assert_eq!(set, collected);
        assert_eq!(set, read);
        assert_eq!(
            format!("{set:?}"),
            r#"{"a": "4", "ab": "5", "b": "1", "c": "3"}"#
        );
    }

    #[test]
    fn a_removed_field_is_gone_and_the_rest_stay_in_order() {
        let mut ext = ExtFields::new();
        for key in ["c", "a", "b"] {
            ext.insert(key, key);
        }
        assert_eq!(ext.remove("b"), Some("b".to_owned()));
        assert_eq!(ext.remove("b"), None);
        assert_eq!(ext.iter().collect::<Vec<_>>(), [("a", "a"), ("c", "c")]);
    }
}
