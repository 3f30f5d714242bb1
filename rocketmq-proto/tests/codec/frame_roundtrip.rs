//! Encoding a command and decoding the frame gives the same command back, in both header
//! encodings, and the frame decoder yields identical frames however the stream is chunked,
//! reserving room for partial frames (`decode`) or not (`decode_whole`).

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rocketmq_proto::{
    Command, ExtFields, FrameDecoder, FrameError, HeaderEncoding, LanguageCode, frame,
};

fn command() -> impl Strategy<Value = Command> {
    let text = "[a-zA-Z0-9 _%@#:.\\-\u{1}\u{2}\"\\\\é中]{1,24}";
    (
        any::<i16>(),
        any::<u8>(),
        any::<i16>(),
        any::<i32>(),
        any::<i32>(),
        proptest::option::of(text),
        proptest::collection::btree_map(text, text, 0..6),
        proptest::collection::vec(any::<u8>(), 0..512),
    )
        .prop_map(
            |(code, lang, version, opaque, flag, remark, ext, body)| Command {
                code: i32::from(code),
                language: LanguageCode(lang),
                version: i32::from(version),
                opaque,
                flag,
                remark,
                ext_fields: ext.into_iter().collect::<ExtFields>(),
                body: Bytes::from(body),
            },
        )
}

fn encoding() -> impl Strategy<Value = HeaderEncoding> {
    prop_oneof![Just(HeaderEncoding::Json), Just(HeaderEncoding::Binary)]
}

fn decode_chunked(stream: &[u8], cuts: &[usize]) -> Vec<Command> {
    let reserving = decode_chunked_by(stream, cuts, FrameDecoder::decode);
    let whole_only = decode_chunked_by(stream, cuts, FrameDecoder::decode_whole);
    assert_eq!(reserving, whole_only, "decode and decode_whole agree");
    reserving
}

type Decode = fn(&mut FrameDecoder, &mut BytesMut) -> Result<Option<Command>, FrameError>;

fn decode_chunked_by(stream: &[u8], cuts: &[usize], decode: Decode) -> Vec<Command> {
    let mut decoder = FrameDecoder::default();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut start = 0;
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(stream.len());
    for end in ends {
        buf.extend_from_slice(&stream[start..end.max(start)]);
        start = end.max(start);
        while let Some(command) = decode(&mut decoder, &mut buf).expect("valid stream") {
            out.push(command);
        }
    }
    assert!(buf.is_empty(), "bytes left over");
    out
}

proptest! {
    #[test]
    fn encode_then_decode_is_identity(command in command(), encoding in encoding()) {
        let mut wire = BytesMut::new();
        frame::encode(&command, encoding, &mut wire).expect("fits");
        let decoded = FrameDecoder::default().decode(&mut wire).expect("valid").expect("whole");
        prop_assert!(wire.is_empty());
        prop_assert_eq!(decoded, command);
    }

    #[test]
    fn chunking_does_not_change_frames(
        commands in proptest::collection::vec((command(), encoding()), 1..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let mut stream = BytesMut::new();
        for (command, encoding) in &commands {
            frame::encode(command, *encoding, &mut stream).expect("fits");
        }
        let whole = decode_chunked(&stream, &[]);
        let chunked = decode_chunked(&stream, &cuts);
        let byte_by_byte = decode_chunked(&stream, &(0..stream.len()).collect::<Vec<_>>());
        let expected: Vec<Command> = commands.into_iter().map(|(c, _)| c).collect();
        prop_assert_eq!(&whole, &expected);
        prop_assert_eq!(&chunked, &expected);
        prop_assert_eq!(&byte_by_byte, &expected);
    }
}

#[test]
fn json_header_always_names_its_serialize_type() {
    // The Rust broker drops a connection whose JSON header lacks serializeTypeCurrentRPC.
    let mut wire = BytesMut::new();
    let command =
        Command::request_with_fields(rocketmq_proto::RequestCode::HEART_BEAT, ExtFields::new());
    frame::encode(&command, HeaderEncoding::Json, &mut wire).expect("fits");
    let header = std::str::from_utf8(&wire[8..]).expect("JSON header");
    assert!(
        header.contains(r#""serializeTypeCurrentRPC":"JSON""#),
        "{header}"
    );
    assert!(header.contains(r#""language":"JAVA""#), "{header}");
}

#[test]
fn oversize_command_is_refused_and_leaves_buffer_untouched() {
    let command =
        Command::response(rocketmq_proto::ResponseCode::SUCCESS, 1).with_body(vec![0u8; 2048]);
    let mut wire = BytesMut::from(&b"prefix"[..]);
    let err = frame::encode_with_limit(&command, HeaderEncoding::Binary, 1024, &mut wire)
        .expect_err("2 KiB body over a 1 KiB limit");
    assert!(
        matches!(err, rocketmq_proto::EncodeError::TooLarge { .. }),
        "{err}"
    );
    assert_eq!(&wire[..], b"prefix");
}

#[test]
fn binary_header_refuses_codes_beyond_i16() {
    let mut command = Command::response(rocketmq_proto::ResponseCode::SUCCESS, 1);
    command.code = 200_050; // POP codes do not fit the binary layout's int16
    let mut wire = BytesMut::new();
    assert!(frame::encode(&command, HeaderEncoding::Binary, &mut wire).is_err());
    assert!(wire.is_empty());
    frame::encode(&command, HeaderEncoding::Json, &mut wire).expect("JSON carries any i32");
}

/// Found by the `header` fuzz target: a JSON header with an unknown numeric language code
/// re-encoded as "OTHER"; it now keeps its number.
#[test]
fn unknown_language_code_survives_json() {
    let mut command = Command::response(rocketmq_proto::ResponseCode::SUCCESS, 1);
    command.language = LanguageCode(22);
    let mut wire = BytesMut::new();
    frame::encode(&command, HeaderEncoding::Json, &mut wire).expect("fits");
    let decoded = FrameDecoder::default()
        .decode(&mut wire)
        .expect("valid")
        .expect("whole");
    assert_eq!(decoded.language, LanguageCode(22));
}

/// A frame not whole yet: `decode` reserves room for the rest of it in the buffer,
/// `decode_whole` leaves the buffer as it is, and `frame_len` says how long the frame is.
#[test]
fn a_partial_frame_is_measured_and_room_is_reserved_only_by_decode() {
    let command =
        Command::response(rocketmq_proto::ResponseCode::SUCCESS, 7).with_body(vec![1u8; 10_000]);
    let mut wire = BytesMut::new();
    frame::encode(&command, HeaderEncoding::Binary, &mut wire).expect("fits");
    let mut decoder = FrameDecoder::default();
    assert_eq!(
        decoder.frame_len(&wire[..3]).expect("valid"),
        None,
        "no prefix yet"
    );
    assert_eq!(
        decoder.frame_len(&wire[..4]).expect("valid"),
        Some(wire.len())
    );

    let mut partial = BytesMut::with_capacity(100);
    partial.extend_from_slice(&wire[..100]);
    assert_eq!(decoder.decode_whole(&mut partial).expect("valid"), None);
    assert_eq!(
        partial.capacity(),
        100,
        "decode_whole leaves the room alone"
    );
    assert_eq!(decoder.decode(&mut partial).expect("valid"), None);
    assert!(partial.capacity() >= wire.len(), "decode reserved the rest");
    partial.extend_from_slice(&wire[100..]);
    assert_eq!(
        decoder.decode_whole(&mut partial).expect("valid"),
        Some(command)
    );
    assert!(partial.is_empty());

    let bad = (-1i32).to_be_bytes();
    assert!(matches!(
        decoder.frame_len(&bad),
        Err(FrameError::BadLength(-1))
    ));
    let small = FrameDecoder::new(1024);
    assert!(matches!(
        small.frame_len(&wire),
        Err(FrameError::TooLarge { .. })
    ));
}
