//! Malformed frames give their specific error and never panic: oversize and negative lengths
//! (refused before allocating), a header longer than its frame, an unknown serialize type,
//! broken JSON, and truncated or inconsistent binary headers.

use bytes::{BufMut, BytesMut};
use rocketmq_proto::{FrameDecoder, FrameError, LanguageCode};

fn frame(type_byte: u8, header: &[u8], body: &[u8]) -> BytesMut {
    let mut buf = BytesMut::new();
    buf.put_u32((4 + header.len() + body.len()) as u32);
    buf.put_u32((u32::from(type_byte) << 24) | header.len() as u32);
    buf.put_slice(header);
    buf.put_slice(body);
    buf
}

fn decode(mut buf: BytesMut) -> Result<Option<rocketmq_proto::Command>, FrameError> {
    FrameDecoder::default().decode(&mut buf)
}

#[test]
fn oversize_length_is_refused_before_allocating() {
    let mut buf = BytesMut::new();
    buf.put_u32(0x7FFF_FFFF);
    let capacity = buf.capacity();
    let err = FrameDecoder::default()
        .decode(&mut buf)
        .expect_err("2 GiB frame");
    assert!(
        matches!(
            err,
            FrameError::TooLarge {
                length: 0x7FFF_FFFF,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        buf.capacity(),
        capacity,
        "nothing reserved for a refused frame"
    );
}

#[test]
fn configured_maximum_is_inclusive() {
    let mut ok = frame(0, br#"{"code":0}"#, &[]);
    let len = ok.len() - 4;
    assert!(
        FrameDecoder::new(len)
            .decode(&mut ok)
            .expect("at the limit")
            .is_some()
    );
    let mut over = frame(0, br#"{"code":0}"#, &[]);
    assert!(matches!(
        FrameDecoder::new(len - 1).decode(&mut over),
        Err(FrameError::TooLarge { .. })
    ));
}

#[test]
fn negative_and_tiny_lengths_are_refused() {
    for prefix in [-1i32, i32::MIN, 0, 3] {
        let mut buf = BytesMut::new();
        buf.put_i32(prefix);
        buf.put_u32(0);
        assert_eq!(decode(buf), Err(FrameError::BadLength(prefix)));
    }
}

#[test]
fn header_longer_than_frame_is_refused() {
    let mut buf = BytesMut::new();
    buf.put_u32(4 + 2);
    buf.put_u32(100); // JSON, 100-byte header in a 6-byte frame
    buf.put_slice(b"{}");
    assert_eq!(
        decode(buf),
        Err(FrameError::HeaderTooLong {
            header: 100,
            available: 2
        })
    );
}

#[test]
fn unknown_serialize_type_is_refused() {
    assert_eq!(
        decode(frame(7, b"{}", &[])),
        Err(FrameError::UnknownSerializeType(7))
    );
}

#[test]
fn broken_json_headers_are_refused() {
    for header in [
        &b"{"[..],
        b"not json",
        br#"{"opaque":1}"#,
        br#"{"code":"zero"}"#,
        b"\xff\xfe",
    ] {
        let err = decode(frame(0, header, &[])).expect_err("broken JSON");
        assert!(matches!(err, FrameError::Json(_)), "{err}");
    }
    let err =
        decode(frame(0, br#"{"code":0,"extFields":{"a":[1]}}"#, &[])).expect_err("array value");
    assert!(err.to_string().contains("extFields.a"), "{err}");
    let err = decode(frame(0, br#"{"code":0,"extFields":{"b":{"c":1}}}"#, &[]))
        .expect_err("object value");
    assert!(err.to_string().contains("extFields.b"), "{err}");
}

#[test]
fn json_header_accepts_nulls_and_numbers() {
    // The Rust broker writes explicit nulls; other writers send bare numbers in extFields.
    let header = br#"{"code":0,"language":null,"remark":null,"extFields":{"offset":12,"ok":true,"gone":null,"neg":-3,"f":1.5,"long":"a value longer than twenty-two bytes"},"flag":1,"opaque":5,"version":474}"#;
    let command = decode(frame(0, header, b"body"))
        .expect("valid")
        .expect("whole");
    assert_eq!(command.ext_fields.get("offset"), Some("12"));
    assert_eq!(command.ext_fields.get("ok"), Some("true"));
    assert_eq!(command.ext_fields.get("gone"), None);
    assert_eq!(command.ext_fields.get("neg"), Some("-3"));
    assert_eq!(command.ext_fields.get("f"), Some("1.5"));
    assert_eq!(
        command.ext_fields.get("long"),
        Some("a value longer than twenty-two bytes")
    );
    assert_eq!(&command.body[..], b"body");
}

#[test]
fn json_header_languages_by_name_or_code_and_escaped_keys() {
    let read = |header: &str| decode(frame(0, header.as_bytes(), &[]));
    for (language, expected) in [
        (r#""JAVA""#, LanguageCode::JAVA),
        (r#""RUST""#, LanguageCode::RUST),
        // A newer peer's language: unknown here, as fastjson reads it (null).
        (r#""COBOL""#, LanguageCode::OTHER),
        ("null", LanguageCode::OTHER),
        ("12", LanguageCode(12)),
    ] {
        let header = format!(r#"{{"code":0,"language":{language},"extFields":{{}}}}"#);
        let command = read(&header).expect("valid").expect("whole");
        assert_eq!(command.language, expected, "{language}");
    }
    for language in ["300", "-1", "1.5", "true", "[]"] {
        let header = format!(r#"{{"code":0,"language":{language}}}"#);
        let err = read(&header).expect_err("not a language");
        assert!(err.to_string().contains("language"), "{language}: {err}");
    }
    // A key the client reads often, escaped on the wire, is the same key.
    let command = read(r#"{"code":0,"extFields":{"next\u0042eginOffset":"7","x\"y":"8"}}"#)
        .expect("valid")
        .expect("whole");
    assert_eq!(command.ext_fields.get("nextBeginOffset"), Some("7"));
    assert_eq!(command.ext_fields.get("x\"y"), Some("8"));
}

#[test]
fn truncated_binary_headers_are_refused_at_every_length() {
    let mut full = BytesMut::new();
    let command = rocketmq_proto::Command::response(rocketmq_proto::ResponseCode::SUCCESS, 9)
        .with_remark("remark");
    let mut command = command;
    command.ext_fields.insert("key", "value");
    rocketmq_proto::frame::encode(&command, rocketmq_proto::HeaderEncoding::Binary, &mut full)
        .expect("fits");
    let header = full[8..].to_vec();
    for cut in 0..header.len() {
        let err = decode(frame(1, &header[..cut], &[])).expect_err("truncated header");
        assert!(matches!(err, FrameError::Binary(_)), "cut {cut}: {err}");
    }
}

#[test]
fn binary_lengths_beyond_header_are_refused() {
    let mut header = BytesMut::new();
    header.put_i16(0); // code
    header.put_u8(0); // language
    header.put_i16(0); // version
    header.put_i32(1); // opaque
    header.put_i32(1); // flag
    header.put_i32(-5); // negative remark length
    header.put_i32(0);
    let err = decode(frame(1, &header, &[])).expect_err("negative remark length");
    assert!(err.to_string().contains("remark"), "{err}");

    let mut header = BytesMut::new();
    header.put_slice(&[0; 13]);
    header.put_i32(0); // no remark
    header.put_i32(1000); // ext map longer than the header
    let err = decode(frame(1, &header, &[])).expect_err("ext length beyond header");
    assert!(err.to_string().contains("extFields"), "{err}");
}

#[test]
fn short_buffer_is_not_an_error() {
    let whole = frame(0, br#"{"code":0}"#, b"xyz");
    for cut in 0..whole.len() {
        let mut part = BytesMut::from(&whole[..cut]);
        assert_eq!(
            FrameDecoder::default().decode(&mut part),
            Ok(None),
            "cut {cut}"
        );
        assert_eq!(part.len(), cut, "nothing consumed from a partial frame");
    }
}
