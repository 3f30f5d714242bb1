//! An `extFields` value ([`ExtString`]): short ones held inline.

use std::fmt;
use std::ops::Deref;

/// The longest value held inline: every `int` and `long` (20 characters at most), and most
/// group, topic and broker names.
const INLINE: usize = 22;

/// An `extFields` value. Most are numbers or short names, and they are held inline: writing a
/// pull request's header and reading its answer's used to allocate a `String` a field, about
/// 15 allocations a pull.
#[derive(Clone)]
pub struct ExtString(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]`, copied from a `str`.
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap(String),
}

impl ExtString {
    /// `value`, copied (inline when it is short).
    pub fn new(value: &str) -> Self {
        Self::inline(value).unwrap_or_else(|| Self(Repr::Heap(value.to_owned())))
    }

    /// `value`'s `Display` form (inline when it is short).
    pub fn display(value: impl fmt::Display) -> Self {
        let mut out = Writer {
            len: 0,
            bytes: [0; INLINE],
            heap: None,
        };
        // `Writer` never fails; a `Display` that does leaves what it wrote.
        let _ = fmt::write(&mut out, format_args!("{value}"));
        match out.heap {
            Some(heap) => Self(Repr::Heap(heap)),
            None => Self(Repr::Inline {
                len: out.len,
                bytes: out.bytes,
            }),
        }
    }

    /// `value` in decimal, as Java's `String.valueOf(long)` writes it (always inline: 20
    /// characters at most). Written digit by digit: a pull request has a dozen numbers, and
    /// `fmt`'s machinery cost more than the rest of building its header (message trace
    /// records write their numbers with it too).
    pub fn integer(value: i64) -> Self {
        // The digits from the last, then the sign, then turned around.
        let mut bytes = [0u8; INLINE];
        let mut len = 0;
        let mut rest = value.unsigned_abs();
        for slot in bytes.iter_mut() {
            // `rest % 10` is below 10.
            *slot = b'0' + (rest % 10) as u8;
            len += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if value < 0
            && let Some(slot) = bytes.get_mut(len)
        {
            *slot = b'-';
            len += 1;
        }
        if let Some(written) = bytes.get_mut(..len) {
            written.reverse();
        }
        Self(Repr::Inline {
            // At most 20 characters: `i64::MIN`'s.
            len: len as u8,
            bytes,
        })
    }

    /// The value.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => inline_str(bytes, *len),
            Repr::Heap(value) => value,
        }
    }

    /// The value's bytes, without the UTF-8 check that [`ExtString::as_str`] makes of inline
    /// ones (a header's writer needs bytes, and checks them for escapes itself).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => inline_bytes(bytes, *len),
            Repr::Heap(value) => value.as_bytes(),
        }
    }

    /// The value as a `String` (allocating when it is held inline).
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Heap(value) => value,
            Repr::Inline { .. } => self.as_str().to_owned(),
        }
    }

    fn inline(value: &str) -> Option<Self> {
        let len = u8::try_from(value.len()).ok()?;
        let mut bytes = [0; INLINE];
        bytes
            .get_mut(..value.len())?
            .copy_from_slice(value.as_bytes());
        Some(Self(Repr::Inline { len, bytes }))
    }
}

/// The first `len` of `bytes` (no more than fit: `len` is only ever set to what was copied).
fn inline_bytes(bytes: &[u8; INLINE], len: u8) -> &[u8] {
    bytes.get(..usize::from(len)).unwrap_or_default()
}

/// The first `len` of `bytes`, which were copied there whole from `str`s.
fn inline_str(bytes: &[u8; INLINE], len: u8) -> &str {
    std::str::from_utf8(inline_bytes(bytes, len))
        .expect("inline bytes are copied whole from a str, and no more than fit")
}

/// Writes inline until a write would not fit, then moves to a `String`. Whole `str`s are
/// copied, so the inline bytes are always UTF-8.
struct Writer {
    len: u8,
    bytes: [u8; INLINE],
    heap: Option<String>,
}

impl fmt::Write for Writer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(heap) = &mut self.heap {
            heap.push_str(s);
            return Ok(());
        }
        let start = usize::from(self.len);
        let end = start + s.len();
        let len = u8::try_from(end).ok();
        match (self.bytes.get_mut(start..end), len) {
            (Some(room), Some(len)) => {
                room.copy_from_slice(s.as_bytes());
                self.len = len;
            }
            _ => {
                let mut heap = String::with_capacity(end.max(2 * INLINE));
                heap.push_str(inline_str(&self.bytes, self.len));
                heap.push_str(s);
                self.heap = Some(heap);
            }
        }
        Ok(())
    }
}

impl Default for ExtString {
    fn default() -> Self {
        Self(Repr::Inline {
            len: 0,
            bytes: [0; INLINE],
        })
    }
}

impl Deref for ExtString {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ExtString {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for ExtString {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<&String> for ExtString {
    fn from(value: &String) -> Self {
        Self::new(value)
    }
}

impl From<String> for ExtString {
    /// Kept as it is: its allocation is made already.
    fn from(value: String) -> Self {
        Self(Repr::Heap(value))
    }
}

impl From<ExtString> for String {
    fn from(value: ExtString) -> Self {
        value.into_string()
    }
}

impl PartialEq for ExtString {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ExtString {}

impl PartialEq<str> for ExtString {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ExtString {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for ExtString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ExtString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_short_names_are_inline_and_read_back() {
        for value in [
            i64::MIN.to_string(),
            "consumer-group-of-22ch".to_owned(),
            String::new(),
        ] {
            let ext = ExtString::new(&value);
            assert!(matches!(ext.0, Repr::Inline { .. }), "{value}");
            assert_eq!(ext.as_str(), value);
        }
        let number = ExtString::display(i64::MIN);
        assert!(matches!(number.0, Repr::Inline { .. }));
        assert_eq!(number, i64::MIN.to_string().as_str());
    }

    #[test]
    fn long_values_move_to_the_heap_whole() {
        let long = "a-topic-name-longer-than-twenty-two-bytes-é";
        assert_eq!(ExtString::new(long).as_str(), long);
        assert!(matches!(ExtString::new(long).0, Repr::Heap(_)));
        // Written in pieces that cross the inline limit.
        let pieces = ExtString::display(format_args!("{}{}", "0123456789abcdef", "ghijklmnop-é"));
        assert_eq!(pieces.as_str(), "0123456789abcdefghijklmnop-é");
        assert!(matches!(pieces.0, Repr::Heap(_)));
    }

    /// Integers are written as their `Display` form, at the edges of both widths too.
    #[test]
    fn integers_are_written_in_decimal() {
        for value in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            1_234_567_890,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(ExtString::integer(value).as_str(), value.to_string());
        }
    }
}
