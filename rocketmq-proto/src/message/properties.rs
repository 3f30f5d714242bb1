//! The property string (`remoting-protocol.md` §5.5): `name U+0001 value U+0002`, repeated.
//!
//! Parsing follows `MessageDecoder.string2messageProperties`: split on U+0002; in each piece
//! the first U+0001 separates name from value; a pair is kept only when both are non-empty.
//! Both separators are ASCII, so working on bytes splits exactly where Java's `String.indexOf`
//! does.

use std::iter::FusedIterator;

use super::property;

/// `MessageDecoder.NAME_VALUE_SEPARATOR` as a byte.
pub(super) const NAME_VALUE_SEPARATOR: u8 = property::NAME_VALUE_SEPARATOR as u8;
/// `MessageDecoder.PROPERTY_SEPARATOR` as a byte.
pub(super) const PROPERTY_SEPARATOR: u8 = property::PROPERTY_SEPARATOR as u8;

/// The properties of a message, parsed on the fly: an iterator of `(name, value)` pairs in
/// stored order.
///
/// Pairs Java would drop (no U+0001, or an empty name or value) are skipped. So is a pair
/// whose name or value is not valid UTF-8, where Java would substitute U+FFFD; the raw string
/// is available from [`Message::raw_properties`](super::Message::raw_properties). A name may
/// occur twice; collecting into a map keeps the last, as Java does.
#[derive(Clone, Debug)]
pub struct Properties<'a> {
    rest: &'a [u8],
}

impl<'a> Properties<'a> {
    /// The pairs of a stored property string.
    pub fn new(raw: &'a [u8]) -> Self {
        Self { rest: raw }
    }

    /// The pairs of a stored property string as bytes, before UTF-8 validation.
    fn next_raw(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        while !self.rest.is_empty() {
            let segment = match self.rest.iter().position(|&b| b == PROPERTY_SEPARATOR) {
                Some(end) => {
                    let (segment, after) = self.rest.split_at(end);
                    self.rest = after.get(1..).unwrap_or_default();
                    segment
                }
                None => std::mem::take(&mut self.rest),
            };
            if let Some(pair) = pair(segment) {
                return Some(pair);
            }
        }
        None
    }
}

impl<'a> Iterator for Properties<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some((name, value)) = self.next_raw() {
            if let (Ok(name), Ok(value)) = (std::str::from_utf8(name), std::str::from_utf8(value)) {
                return Some((name, value));
            }
        }
        None
    }
}

impl FusedIterator for Properties<'_> {}

/// Splits one U+0002-free piece into name and value, or `None` when Java would drop it.
pub(super) fn pair(segment: &[u8]) -> Option<(&[u8], &[u8])> {
    let separator = segment.iter().position(|&b| b == NAME_VALUE_SEPARATOR)?;
    let (name, value) = segment.split_at(separator);
    let value = value.get(1..)?;
    (!name.is_empty() && !value.is_empty()).then_some((name, value))
}

/// The last value of `name` in a stored property string. Names are compared as bytes before
/// any UTF-8 check, so a lookup validates only the value it returns.
pub(super) fn find<'a>(raw: &'a [u8], name: &str) -> Option<&'a str> {
    let mut pairs = Properties::new(raw);
    let mut found = None;
    while let Some((key, value)) = pairs.next_raw() {
        if key == name.as_bytes() {
            found = Some(value);
        }
    }
    std::str::from_utf8(found?).ok()
}

/// Encodes properties as Java's `MessageDecoder.messageProperties2String` does: each pair as
/// `name U+0001 value U+0002`, so the string always ends with U+0002 unless it is empty.
///
/// Neither names nor values may contain U+0001 or U+0002: they would split differently when
/// read back (Java does not check either). A stored string must fit in 32767 bytes.
pub fn encode_properties<K, V>(properties: impl IntoIterator<Item = (K, V)>) -> String
where
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut out = String::new();
    for (name, value) in properties {
        out.push_str(name.as_ref());
        out.push(property::NAME_VALUE_SEPARATOR);
        out.push_str(value.as_ref());
        out.push(property::PROPERTY_SEPARATOR);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8]) -> Vec<(&str, &str)> {
        Properties::new(raw).collect()
    }

    #[test]
    fn encodes_with_trailing_separator() {
        assert_eq!(
            encode_properties([("TAGS", "A"), ("UNIQ_KEY", "X")]),
            "TAGS\u{1}A\u{2}UNIQ_KEY\u{1}X\u{2}"
        );
        assert_eq!(encode_properties(Vec::<(&str, &str)>::new()), "");
    }

    #[test]
    fn follows_java_string2message_properties() {
        // Empty name or value, a missing separator and empty pieces are dropped.
        assert_eq!(
            parse(b"\x01v\x02k\x01\x02noSeparator\x02\x02a\x01b"),
            vec![("a", "b")]
        );
        // Only the first U+0001 separates; the value keeps later ones.
        assert_eq!(parse(b"k\x01v\x01w\x02"), vec![("k", "v\u{1}w")]);
        // A final piece without U+0002 still counts.
        assert_eq!(parse(b"k\x01v"), vec![("k", "v")]);
        assert_eq!(parse(b""), vec![]);
    }

    #[test]
    fn last_duplicate_wins() {
        let raw = b"K\x01first\x02K\x01second\x02";
        assert_eq!(find(raw, "K"), Some("second"));
        assert_eq!(find(raw, "k"), None);
        assert_eq!(parse(raw).len(), 2);
    }

    #[test]
    fn invalid_utf8_pairs_are_skipped() {
        let raw = b"bad\x01\xff\x02good\x01yes\x02";
        assert_eq!(parse(raw), vec![("good", "yes")]);
        assert_eq!(find(raw, "bad"), None);
    }
}
