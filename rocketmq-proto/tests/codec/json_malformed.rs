//! Malformed JSON never panics and never recurses without bound: the tolerant reader answers
//! broken syntax, hostile nesting, trailing garbage, out-of-range numbers, bad escapes and
//! invalid UTF-8 with an error naming the byte position, and the body decoders pass that
//! position on (or say which member had the wrong shape).

use rocketmq_proto::body::{BodyError, ConsumerListBody, ResetOffsetBody, TopicRouteData};
use rocketmq_proto::json::{self, JsonError, MAX_DEPTH};

fn err(input: &[u8]) -> JsonError {
    match json::parse(input) {
        Ok(v) => panic!("{:?} parsed as {v}", String::from_utf8_lossy(input)),
        Err(e) => e,
    }
}

#[test]
fn broken_syntax_reports_where() {
    let cases: &[(&[u8], usize)] = &[
        (b"{", 1),
        (b"{\"a\"", 4),
        (b"{\"a\":", 5),
        (b"{\"a\":1", 6),
        (b"{\"a\":1,}", 7),
        (b"[1,]", 3),
        (b"[1 2]", 3),
        (b"{'a':1}", 1),
        (b"{a:1}", 1),
        (b"// c\n{}", 0),
        (b"[NaN]", 1),
        (b"[Infinity]", 1),
        (b"[+1]", 1),
        (b"[.5]", 1),
        (b"[tru]", 1),
        (b"\"abc", 4),
        (b"{\"a\":1}}", 7),
        (b"", 0),
        (b"   ", 3),
    ];
    for &(input, position) in cases {
        let e = err(input);
        assert_eq!(
            e.position(),
            Some(position),
            "{:?}: {e}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn errors_read_well() {
    assert_eq!(
        err(b"{\"a\":1,}").to_string(),
        "unexpected byte 0x7d at byte 7, expected an object key"
    );
    assert_eq!(
        err(b"[1").to_string(),
        "unexpected end of input at byte 2, expected ',' or ']' in an array"
    );
    assert_eq!(err(b"{} {}").to_string(), "trailing data at byte 3");
}

#[test]
fn trailing_garbage() {
    assert_eq!(err(b"{}x"), JsonError::TrailingData { position: 2 });
    assert_eq!(err(b"{} {}"), JsonError::TrailingData { position: 3 });
    assert_eq!(err(b"{}\0"), JsonError::TrailingData { position: 2 });
    assert_eq!(err(b"1 2"), JsonError::TrailingData { position: 2 });
    assert!(
        json::parse(b" \t\r\n{}\n\t ").is_ok(),
        "whitespace is not garbage"
    );
}

#[test]
fn hostile_nesting_is_refused_not_overflowed() {
    let deep = vec![b'['; 1_000_000];
    assert_eq!(
        err(&deep),
        JsonError::TooDeep {
            position: MAX_DEPTH,
            limit: MAX_DEPTH
        }
    );
    let deep = b"{\"a\":".repeat(200_000);
    assert_eq!(
        err(&deep),
        JsonError::TooDeep {
            position: 5 * MAX_DEPTH,
            limit: MAX_DEPTH
        }
    );
    // Just inside the limit is fine, and decodes as a body member that is ignored.
    let ok = format!(
        "{{\"x\":{}{}}}",
        "[".repeat(MAX_DEPTH - 1),
        "]".repeat(MAX_DEPTH - 1)
    );
    assert!(ConsumerListBody::decode(ok.as_bytes()).is_ok());
}

#[test]
fn non_string_keys_do_not_nest() {
    // `{{{{...` would normalize each key's text into the next key's text, escaping it again at
    // every level: exponential in the nesting. A non-string key may hold only string keys.
    let e = err(&vec![b'{'; 1_000_000]);
    assert_eq!(
        e,
        JsonError::Unexpected {
            position: 2,
            found: b'{',
            expected: "a string key inside a non-string key"
        }
    );
    let mut bomb = b"{".repeat(60);
    bomb.extend_from_slice(br#""\\\"":1"#);
    bomb.extend(b"}:1".repeat(59));
    bomb.push(b'}');
    assert!(
        err(&bomb)
            .to_string()
            .contains("a string key inside a non-string key")
    );
    // An integer key inside a key object is refused too; one level of object keys is fine.
    assert!(json::parse(br#"{{"a":{0:1}}:1}"#).is_err());
    assert!(json::parse(br#"{{"a":{"0":1}}:1}"#).is_ok());
}

#[test]
fn huge_numbers() {
    assert_eq!(err(b"1e400"), JsonError::NumberOutOfRange { position: 0 });
    assert_eq!(
        err(b"[-1e400]"),
        JsonError::NumberOutOfRange { position: 1 }
    );
    let digits = format!("[{}]", "9".repeat(400));
    assert_eq!(
        err(digits.as_bytes()),
        JsonError::NumberOutOfRange { position: 1 }
    );
    // Beyond 64 bits but within f64: a float, which an integer member refuses by name.
    let e = TopicRouteData::decode(
        br#"{"queueDatas":[{"brokerName":"b","readQueueNums":99999999999999999999}]}"#,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            BodyError::Json {
                source: JsonError::Shape(_),
                ..
            }
        ),
        "{e}"
    );
    // In range for i64 but not for a Java int.
    let e =
        TopicRouteData::decode(br#"{"queueDatas":[{"readQueueNums":2147483648}]}"#).unwrap_err();
    assert!(e.to_string().contains("2147483648"), "{e}");
    // Tiny floats underflow to zero, which is not an error.
    assert!(json::parse(b"1e-400").is_ok());
    // A megabyte of digits is parsed, not choked on.
    let long = format!("0.{}", "1".repeat(1 << 20));
    assert!(json::parse(long.as_bytes()).is_ok());
}

#[test]
fn bad_escapes() {
    assert_eq!(err(br#""\x41""#), JsonError::BadEscape { position: 1 });
    assert_eq!(err(br#""\u12""#), JsonError::BadEscape { position: 1 });
    assert_eq!(err(br#""\u12g4""#), JsonError::BadEscape { position: 1 });
    assert_eq!(err(br#""ab\"#), JsonError::BadEscape { position: 3 });
    assert_eq!(err(br#""\U0041""#), JsonError::BadEscape { position: 1 });
    // A high surrogate followed by a bad second escape: the pair is not joined, the second
    // escape is still checked.
    assert_eq!(
        err(br#""\ud83d\uzzzz""#),
        JsonError::BadEscape { position: 7 }
    );
}

#[test]
fn invalid_utf8() {
    assert_eq!(err(b"\"a\xffb\""), JsonError::InvalidUtf8 { position: 2 });
    // A truncated multi-byte sequence before the closing quote.
    assert_eq!(err(b"\"\xe6\xa0\""), JsonError::InvalidUtf8 { position: 1 });
    // An encoded surrogate (CESU-8, as Java's modified UTF-8 might produce).
    assert_eq!(
        err(b"\"\xed\xa0\x80\""),
        JsonError::InvalidUtf8 { position: 1 }
    );
    // Overlong encoding of '/'.
    assert_eq!(err(b"\"\xc0\xaf\""), JsonError::InvalidUtf8 { position: 1 });
    // Outside strings, a non-ASCII byte is just unexpected.
    assert!(matches!(
        err(b"\xff"),
        JsonError::Unexpected {
            found: 0xff,
            position: 0,
            ..
        }
    ));
    // In an object key too, with the position in the whole input.
    assert_eq!(
        err(b"{\"ok\":1,\"\xfe\":2}"),
        JsonError::InvalidUtf8 { position: 9 }
    );
}

#[test]
fn body_errors_carry_the_position() {
    let e = TopicRouteData::decode(br#"{"queueDatas":[}"#).unwrap_err();
    assert_eq!(e.position(), Some(15));
    assert!(
        e.to_string().starts_with("bad TopicRouteData body: "),
        "{e}"
    );
    assert_eq!(
        ConsumerListBody::decode(b""),
        Err(BodyError::Empty {
            body: "GetConsumerListByGroupResponseBody"
        })
    );
    // Well-formed JSON of the wrong shape: no position, the member is named.
    let e = ConsumerListBody::decode(br#"{"consumerIdList":"c1"}"#).unwrap_err();
    assert_eq!(e.position(), None);
    assert!(e.to_string().contains("invalid type"), "{e}");
    // serde would read a struct from an array of its fields; a body must be an object.
    let e = TopicRouteData::decode(b"[]").unwrap_err();
    assert_eq!(e.position(), None);
    assert!(
        e.to_string()
            .contains("expected a JSON object, found an array"),
        "{e}"
    );
    assert!(TopicRouteData::decode(b"null").is_err());
    let e = ResetOffsetBody::decode(br#"{"offsetTable":"x"}"#).unwrap_err();
    assert!(e.to_string().contains("MessageQueue map"), "{e}");
}
