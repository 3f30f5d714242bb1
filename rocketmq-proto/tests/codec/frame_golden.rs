//! Frames captured from the real Rust broker decode to the values read off the wire: a
//! broker-initiated oneway NOTIFY_CONSUMER_IDS_CHANGED interleaved before a heartbeat response,
//! explicit null members, and a route miss (code 17).

use bytes::BytesMut;
use rocketmq_proto::{Command, FrameDecoder, LanguageCode, RequestCode, ResponseCode};

fn frames(capture: &[u8]) -> Vec<Command> {
    let mut buf = BytesMut::from(capture);
    let mut decoder = FrameDecoder::default();
    let mut out = Vec::new();
    while let Some(command) = decoder.decode(&mut buf).expect("captured frames are valid") {
        out.push(command);
    }
    assert!(buf.is_empty(), "capture ends on a frame boundary");
    out
}

#[test]
fn notify_arrives_before_the_heartbeat_response() {
    let stream = frames(include_bytes!("../data/heartbeat-stream-with-notify.bin"));
    assert_eq!(stream.len(), 2);
    let notify = &stream[0];
    assert!(!notify.is_response());
    assert!(notify.is_oneway());
    assert_eq!(
        notify.request_code(),
        RequestCode::NOTIFY_CONSUMER_IDS_CHANGED
    );
    assert_eq!(notify.opaque, 24537);
    assert_eq!(notify.language, LanguageCode::RUST);
    assert_eq!(notify.version, 474);
    assert_eq!(notify.remark, None);
    assert_eq!(notify.ext_fields.get("consumerGroup"), Some("g-capture2"));

    let response = &stream[1];
    assert!(response.is_response());
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    assert_eq!(response.opaque, 77);
    assert_eq!(response.ext_fields.get("IS_SUB_CHANGE"), Some("true"));
    assert_eq!(
        response.ext_fields.get("IS_SUPPORT_HEART_BEAT_V2"),
        Some("true")
    );
}

#[test]
fn route_miss_is_topic_not_exist() {
    let stream = frames(include_bytes!("../data/route-not-found.bin"));
    assert_eq!(stream.len(), 1);
    assert_eq!(stream[0].response_code(), ResponseCode::TOPIC_NOT_EXIST);
    assert!(stream[0].is_response());
    assert_eq!(
        stream[0].remark.as_deref(),
        Some("Topic route was not found")
    );
    assert!(
        stream[0].ext_fields.is_empty(),
        "extFields: null decodes as empty"
    );
}

#[test]
fn every_capture_decodes_whole() {
    let captures: [&[u8]; 10] = [
        include_bytes!("../data/consumer-list.bin"),
        include_bytes!("../data/heartbeat-response.bin"),
        include_bytes!("../data/heartbeat-stream-with-notify.bin"),
        include_bytes!("../data/lock-batch-response.bin"),
        include_bytes!("../data/pull-found-32x1k.bin"),
        include_bytes!("../data/pull-found-zlib.bin"),
        include_bytes!("../data/pull-offset-overflow.bin"),
        include_bytes!("../data/pull-retry-topic.bin"),
        include_bytes!("../data/route-not-found.bin"),
        include_bytes!("../data/route-standard-json.bin"),
    ];
    for capture in captures {
        assert!(!frames(capture).is_empty());
    }
}

#[test]
fn offset_overflow_carries_the_suggested_offset() {
    let stream = frames(include_bytes!("../data/pull-offset-overflow.bin"));
    let response = stream.last().expect("one frame");
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
    assert!(response.body.is_empty());
    assert_eq!(response.opaque, 1004);
    assert_eq!(response.ext_fields.get("nextBeginOffset"), Some("2500"));
    assert_eq!(response.ext_fields.get("maxOffset"), Some("2500"));
}
