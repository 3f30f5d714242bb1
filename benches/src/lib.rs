//! Inputs shared by the criterion benchmarks.

use rocketmq_proto::{Command, ResponseCode};

/// A pull response header as the broker sends it (code, opaque, remark and the six extFields
/// of `PullMessageResponseHeader`), without a body.
pub fn pull_response_header() -> Command {
    let mut command = Command::response(ResponseCode::SUCCESS, 1_234_567).with_remark("FOUND");
    for (key, value) in [
        ("suggestWhichBrokerId", "0"),
        ("nextBeginOffset", "1048608"),
        ("minOffset", "0"),
        ("maxOffset", "1049600"),
        ("topicSysFlag", "0"),
        ("groupSysFlag", "0"),
    ] {
        command.ext_fields.insert(key, value);
    }
    command
}

/// The body of a real pull response: 32 messages of 1 KiB captured from the local broker.
pub fn captured_pull_body() -> bytes::Bytes {
    let mut wire = bytes::BytesMut::from(
        &include_bytes!("../../rocketmq-proto/tests/data/pull-found-32x1k.bin")[..],
    );
    rocketmq_proto::FrameDecoder::default()
        .decode(&mut wire)
        .expect("the capture is a valid frame")
        .expect("the capture holds one whole frame")
        .body
}

/// A pull response body of `count` messages with `body_len`-byte bodies, laid out as the broker
/// stores them (tags, keys and a unique key as properties, IPv4 hosts).
pub fn synthetic_pull_body(count: usize, body_len: usize) -> bytes::Bytes {
    use rocketmq_proto::message::{StoredMessage, encode_properties, encode_stored};
    let mut out = bytes::BytesMut::new();
    for i in 0..count {
        let properties = encode_properties([
            ("TAGS", "TagA".to_owned()),
            ("KEYS", format!("k{i}")),
            ("UNIQ_KEY", format!("7F00000100002A9F00000000{i:08X}")),
            ("WAIT", "true".to_owned()),
        ]);
        let message = StoredMessage {
            queue_id: 3,
            queue_offset: 100 + i as i64,
            commit_log_offset: 1_000_000 + (i * 1200) as i64,
            born_timestamp: 1_795_900_000_000,
            born_host: "127.0.0.1:49536".parse().expect("literal address"),
            store_timestamp: 1_795_900_000_010,
            store_host: "127.0.0.1:10911".parse().expect("literal address"),
            body: vec![b'x'; body_len].into(),
            topic: "BenchTopic".to_owned(),
            properties,
            ..StoredMessage::default()
        };
        encode_stored(&message, &mut out).expect("bench records fit the format");
    }
    out.freeze()
}
