//! Unit tests of the producer's pieces that need no clock.

// Tests of `PublishRoute`, route requests and the route cache, which need a route to
// build, are in `rocketmq-driver/tests/producer_routes.rs`, beside its route fixture.

use proto::headers::{SendMessageRequestV2, SendMessageResponse};
use proto::message::{OutgoingMessage, property};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use super::*;

fn config() -> ProducerConfig {
    ProducerConfig::new("g", vec!["ns:9876".to_owned()])
}

fn ids() -> UniqueIds {
    UniqueIds::new(&[10, 0, 0, 1], 0x1234, 7, 1_000)
}

#[test]
fn java_string_hash_matches_java() {
    assert_eq!(java_string_hash(""), 0);
    assert_eq!(java_string_hash("abc"), 96_354);
    assert_eq!(java_string_hash("hello"), 99_162_322);
    // "polygenelubricants".hashCode() is Integer.MIN_VALUE.
    assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    // Outside the BMP Java hashes the surrogate pair: "😀" is \uD83D\uDE00.
    assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
    assert_eq!(shard_index("polygenelubricants", 8), Some(0));
    assert_eq!(shard_index("abc", 8), Some(96_354 % 8));
    assert_eq!(shard_index("abc", 0), None);
}

fn prepared(key: Option<&str>) -> Prepared {
    let mut message = ProducerMessage::new("body");
    if let Some(key) = key {
        message = message.with_sharding_key(key);
    }
    Prepared::single(&config(), "T", message, &mut ids(), 2_000).expect("valid message")
}

#[test]
fn single_request_carries_the_message_and_its_id() {
    let message = ProducerMessage::new("hello")
        .with_tag("TagA")
        .with_keys("k1 k2")
        .with_flag(3);
    let prepared =
        Prepared::single(&config(), "T", message, &mut ids(), 2_000).expect("valid message");
    let target = Target {
        queue: MessageQueue::new("T", "a", 5),
        addr: "10.0.0.1:10911".to_owned(),
    };
    let request = prepared.request(&target);
    assert_eq!(request.request_code(), RequestCode::SEND_MESSAGE_V2);
    assert_eq!(&request.body[..], b"hello");
    let header: SendMessageRequestV2 = request.header().expect("own header decodes");
    assert_eq!(
        (header.queue_id, header.flag, header.born_timestamp),
        (5, 3, 2_000)
    );
    assert_eq!(header.producer_group, "g");
    assert_eq!(header.default_topic, DEFAULT_TOPIC);
    let id = &prepared.msg_ids()[0];
    // 10.0.0.1, pid 0x1234, instance 7; 1000 ms after start; counter 0.
    assert_eq!(id, "0A000001123400000007000003E80000");
    let properties = header.properties.expect("properties are sent");
    assert!(properties.contains("TAGS\u{1}TagA\u{2}"), "{properties}");
    assert!(properties.contains("KEYS\u{1}k1 k2\u{2}"), "{properties}");
    assert!(properties.contains(&format!("UNIQ_KEY\u{1}{id}\u{2}")));
}

#[test]
fn unique_ids_differ_and_keep_a_given_one() {
    let mut ids = ids();
    let a = ids.next(5_000);
    let b = ids.next(5_000);
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
    let mut given = OutgoingMessage::new("T", "x");
    given.set_property(property::UNIQ_KEY, "MINE");
    let prepared = Prepared::single(&config(), "T", given.into(), &mut ids, 5_000).expect("valid");
    assert_eq!(prepared.msg_ids(), ["MINE"]);
}

#[test]
fn bad_messages_are_refused_before_sending() {
    let cfg = ProducerConfig {
        max_message_size: 4,
        ..config()
    };
    let mut ids = ids();
    for (topic, body) in [("T", ""), ("T", "12345"), ("", "x"), ("a b", "x")] {
        assert!(matches!(
            Prepared::single(&cfg, topic, body.into(), &mut ids, 0),
            Err(SendError::InvalidMessage(_))
        ));
    }
    let mixed = vec![
        ProducerMessage::new("a").with_sharding_key("k"),
        ProducerMessage::new("b"),
    ];
    assert!(matches!(
        Prepared::batch(&config(), "T", mixed, &mut ids, 0),
        Err(SendError::InvalidMessage(_))
    ));
    assert!(matches!(
        Prepared::batch(&config(), "T", Vec::new(), &mut ids, 0),
        Err(SendError::InvalidMessage(_))
    ));
}

#[test]
fn batch_request_encodes_each_message() {
    let messages = vec![
        ProducerMessage::new("one").with_sharding_key("k"),
        ProducerMessage::new("two").with_sharding_key("k"),
    ];
    let prepared = Prepared::batch(&config(), "T", messages, &mut ids(), 0).expect("valid batch");
    assert_eq!(prepared.sharding_key(), Some("k"));
    assert_eq!(prepared.msg_ids().len(), 2);
    let target = Target {
        queue: MessageQueue::new("T", "a", 1),
        addr: "x:1".to_owned(),
    };
    let request = prepared.request(&target);
    assert_eq!(request.request_code(), RequestCode::SEND_BATCH_MESSAGE);
    let header: SendMessageRequestV2 = request.header().expect("own header decodes");
    assert_eq!(header.batch, Some(true));
    let body = &request.body[..];
    let first_len = u32::from_be_bytes(body[..4].try_into().expect("4 bytes")) as usize;
    assert!(body[..first_len].windows(3).any(|w| w == b"one"));
    assert!(body[first_len..].windows(3).any(|w| w == b"two"));
}

#[test]
fn responses_become_results_or_errors() {
    let prepared = prepared(None);
    let target = Target {
        queue: MessageQueue::new("T", "a", 1),
        addr: "10.0.0.1:10911".to_owned(),
    };
    let header = SendMessageResponse {
        msg_id: "ABC".to_owned(),
        queue_id: 1,
        queue_offset: 42,
        ..SendMessageResponse::default()
    };
    let mut ok = Command::response(ResponseCode::SUCCESS, 1);
    ok.ext_fields = proto::CommandHeader::to_ext_fields(&header);
    let result = prepared.interpret(&target, &ok).expect("stored");
    assert_eq!(result.status, SendStatus::Ok);
    assert_eq!((result.queue.queue_id(), result.queue_offset), (1, 42));
    assert_eq!(result.offset_msg_ids, ["ABC"]);
    assert_eq!(result.msg_ids, prepared.msg_ids());

    let mut flush = ok.clone();
    flush.code = ResponseCode::FLUSH_DISK_TIMEOUT.0;
    assert_eq!(
        prepared.interpret(&target, &flush).map(|r| r.status),
        Ok(SendStatus::FlushDiskTimeout)
    );
    let busy = Command::response(ResponseCode::SYSTEM_BUSY, 1).with_remark("busy");
    assert!(matches!(
        prepared.interpret(&target, &busy),
        Err(SendError::Refused {
            code: ResponseCode::SYSTEM_BUSY,
            ..
        })
    ));
    let headerless = Command::response(ResponseCode::SUCCESS, 1);
    assert!(matches!(
        prepared.interpret(&target, &headerless),
        Err(SendError::BadResponse { .. })
    ));
}

#[test]
fn retries_follow_java_and_are_bounded() {
    let mut attempts = Attempts::new(&config());
    let gone = SendError::Disconnected {
        peer: "b".to_owned(),
        reason: "reset".to_owned(),
    };
    let busy = SendError::Refused {
        peer: "b".to_owned(),
        code: ResponseCode::SYSTEM_BUSY,
        remark: String::new(),
    };
    let refused = |code| SendError::Refused {
        peer: "b".to_owned(),
        code,
        remark: String::new(),
    };
    let lost_topic = refused(ResponseCode::TOPIC_NOT_EXIST);
    let bad_request = refused(ResponseCode(13));
    assert_eq!(attempts.after(&bad_request), Retry::No);
    assert_eq!(
        Attempts::classify(&SendError::Timeout {
            peer: "b".to_owned()
        }),
        Retry::Yes {
            refresh_route: false
        },
        "a timeout is retried when the send has time left"
    );
    assert_eq!(
        attempts.after(&gone),
        Retry::Yes {
            refresh_route: true
        }
    );
    assert_eq!(
        attempts.after(&busy),
        Retry::Yes {
            refresh_route: false
        }
    );
    assert_eq!(attempts.after(&lost_topic), Retry::No, "two retries used");
}

#[test]
fn config_is_validated() {
    assert!(config().validate().is_ok());
    assert!(
        ProducerConfig::new("", vec!["x".to_owned()])
            .validate()
            .is_err()
    );
    assert!(ProducerConfig::new("g", Vec::new()).validate().is_err());
}

/// With a namespace the topic, the batch's topic and the producer group go out wrapped
/// (`tenant%T`, `tenant%g`), and the result names the topic without it.
#[test]
fn a_namespace_wraps_the_wire_names_only() {
    let mut cfg = config();
    cfg.namespace = Some("tenant".to_owned());
    let prepared =
        Prepared::single(&cfg, "T", "hello".into(), &mut ids(), 2_000).expect("valid message");
    assert_eq!(
        prepared.topic(),
        "tenant%T",
        "routes are looked up by the wire name"
    );
    let target = Target {
        queue: MessageQueue::new("tenant%T", "a", 2),
        addr: "10.0.0.1:10911".to_owned(),
    };
    let header: SendMessageRequestV2 = prepared.request(&target).header().expect("decodes");
    assert_eq!(
        (header.topic.as_str(), header.producer_group.as_str()),
        ("tenant%T", "tenant%g")
    );
    let mut ok = Command::response(ResponseCode::SUCCESS, 1);
    ok.ext_fields = proto::CommandHeader::to_ext_fields(&SendMessageResponse {
        msg_id: "ABC".to_owned(),
        queue_id: 2,
        queue_offset: 7,
        ..SendMessageResponse::default()
    });
    let result = prepared.interpret(&target, &ok).expect("stored");
    assert_eq!(result.queue, MessageQueue::new("T", "a", 2));

    let batch = Prepared::batch(&cfg, "T", vec!["a".into(), "b".into()], &mut ids(), 2_000)
        .expect("valid batch");
    assert_eq!(batch.topic(), "tenant%T");
    cfg.namespace = Some("bad%ns".to_owned());
    assert!(cfg.validate().is_err(), "a namespace with '%' is refused");
}
