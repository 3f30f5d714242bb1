//! Pins the typed command headers of `rocketmq_proto::headers` to the wire.
//!
//! - Every header survives encode → `ExtFields` → decode unchanged, fully populated and with
//!   every optional field absent; the big ones (pull request and response, both send request
//!   shapes) also under proptest, through `ExtFields` and through whole JSON and binary frames.
//! - Every header writes exactly its Java keys (`remoting-protocol.md` §3), and every key is
//!   classified right: dropping a required key fails decoding with an error naming that key,
//!   dropping an optional one only clears that field.
//! - The frames of §1.4 (JSON, total length 162) and §1.5 (binary, total length 73, built here
//!   from the document's hex) decode to the expected `QUERY_CONSUMER_OFFSET` header, and the
//!   JSON one is re-encoded byte for byte.
//! - The pull, notify and heartbeat headers captured from the local broker
//!   (`tests/data/*.bin`) decode to the values read off those captures.
//! - The pull `sysFlag` helpers agree with §4.1, and V1 / V2 send headers convert losslessly with
//!   the key mapping of §3.17.

use std::collections::BTreeSet;
use std::fmt::Debug;

use bytes::BytesMut;
use proptest::option;
use proptest::prelude::*;
use rocketmq_proto::headers::{
    BoundaryType, CheckClientConfigRequest, ConsumeMessageDirectlyRequest,
    ConsumerSendMsgBackRequest, CreateTopicRequest, GetConsumerListByGroupRequest,
    GetConsumerRunningInfoRequest, GetConsumerStatusRequest, GetEarliestMsgStoretimeRequest,
    GetEarliestMsgStoretimeResponse, GetMaxOffsetRequest, GetMaxOffsetResponse,
    GetMinOffsetRequest, GetMinOffsetResponse, GetRouteInfoRequest, HeartbeatRequest,
    HeartbeatResponse, LockBatchMqRequest, NotifyConsumerIdsChangedRequest, PullMessageRequest,
    PullMessageResponse, QueryConsumerOffsetRequest, QueryConsumerOffsetResponse,
    ResetOffsetRequest, SearchOffsetRequest, SearchOffsetResponse, SendMessageRequest,
    SendMessageRequestV2, SendMessageResponse, UnlockBatchMqRequest, UnregisterClientRequest,
    UpdateConsumerOffsetRequest, pull_sys_flag,
};
use rocketmq_proto::{
    Command, CommandHeader, ExtFields, FrameDecoder, HeaderEncoding, HeaderError, LanguageCode,
    RequestCode, ResponseCode, frame,
};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Encodes and decodes `header` through a fresh `ExtFields`.
fn assert_round_trip<H: CommandHeader + PartialEq + Debug>(header: &H) {
    let ext = header.to_ext_fields();
    assert_eq!(H::decode_from(&ext).as_ref(), Ok(header), "through {ext:?}");
}

/// `full` must have every optional field set (to a non-empty value). Checks that it encodes to
/// exactly the keys `required` ∪ `optional`, that it round-trips, that dropping any required
/// key is an error naming that key, and that dropping an optional key only clears that field.
fn assert_keys<H: CommandHeader + PartialEq + Debug>(
    full: &H,
    required: &[&'static str],
    optional: &[&str],
) {
    let ext = full.to_ext_fields();
    let keys: BTreeSet<&str> = ext.iter().map(|(k, _)| k).collect();
    let expected: BTreeSet<&str> = required.iter().chain(optional).copied().collect();
    assert_eq!(keys, expected, "wire keys of {full:?}");
    assert_eq!(H::decode_from(&ext).as_ref(), Ok(full));

    for &key in required {
        let mut without = ext.clone();
        without.remove(key);
        assert_eq!(
            H::decode_from(&without),
            Err(HeaderError::Missing { field: key }),
            "dropping required `{key}`"
        );
    }
    for &key in optional {
        let mut without = ext.clone();
        without.remove(key);
        let decoded = H::decode_from(&without)
            .unwrap_or_else(|e| panic!("dropping optional `{key}` must still decode: {e}"));
        assert_ne!(&decoded, full, "`{key}` must map to a field");
        assert_eq!(
            decoded.to_ext_fields(),
            without,
            "dropping `{key}` clears only its field"
        );
    }
}

/// The key an [`HeaderError::Invalid`] names.
fn invalid_key(err: &HeaderError) -> Option<&'static str> {
    match err {
        HeaderError::Invalid { field, .. } => Some(field),
        _ => None,
    }
}

/// Encodes `command` as one frame and decodes it back, checking nothing is left over.
fn through_frame(command: &Command, encoding: HeaderEncoding) -> Command {
    let mut wire = BytesMut::new();
    frame::encode(command, encoding, &mut wire).expect("command fits a frame");
    let decoded = FrameDecoder::default()
        .decode(&mut wire)
        .expect("our own frame decodes")
        .expect("one whole frame was written");
    assert!(wire.is_empty(), "exactly one frame");
    decoded
}

/// A frame with a JSON header and no body.
fn json_frame(header: &str) -> BytesMut {
    let len = u32::try_from(header.len()).expect("short test header");
    let mut wire = BytesMut::new();
    wire.extend_from_slice(&(4 + len).to_be_bytes());
    wire.extend_from_slice(&len.to_be_bytes());
    wire.extend_from_slice(header.as_bytes());
    wire
}

/// Every frame of a capture file.
fn frames(mut capture: &[u8]) -> Vec<Command> {
    let mut wire = BytesMut::new();
    let mut decoder = FrameDecoder::default();
    let mut out = Vec::new();
    // Feed in small pieces: the decoder must not care how the bytes arrive.
    while !capture.is_empty() {
        let (piece, rest) = capture.split_at(capture.len().min(61));
        wire.extend_from_slice(piece);
        capture = rest;
        while let Some(command) = decoder.decode(&mut wire).expect("captured frames decode") {
            out.push(command);
        }
    }
    assert!(wire.is_empty(), "capture ends on a frame boundary");
    out
}

// ---------------------------------------------------------------------------------------------
// Samples: every optional field set

fn pull_request() -> PullMessageRequest {
    PullMessageRequest {
        consumer_group: "please_rename_unique_group_name".into(),
        topic: "TopicTest".into(),
        queue_id: 3,
        queue_offset: 1_234_567_890_123,
        max_msg_nums: 32,
        sys_flag: pull_sys_flag::build(true, true, true, false, false),
        commit_offset: 1_234_567_890_000,
        suspend_timeout_millis: 15_000,
        subscription: Some("TagA || TagB".into()),
        sub_version: 1_718_000_000_000,
        expression_type: Some("TAG".into()),
        max_msg_bytes: Some(256 * 1024),
        broker_name: Some("broker-a".into()),
    }
}

fn pull_response() -> PullMessageResponse {
    PullMessageResponse {
        suggest_which_broker_id: 1,
        next_begin_offset: 132,
        min_offset: 0,
        max_offset: 2500,
        offset_delta: Some(-7),
        topic_sys_flag: Some(0),
        group_sys_flag: Some(0),
        forbidden_type: Some(2),
    }
}

fn send_v2() -> SendMessageRequestV2 {
    SendMessageRequestV2 {
        producer_group: "pg".into(),
        topic: "%RETRY%cg".into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: -1,
        sys_flag: 0x301,
        born_timestamp: 1_718_000_000_123,
        flag: 0,
        properties: Some("TAGS\u{1}TagA\u{2}KEYS\u{1}k1\u{2}".into()),
        reconsume_times: Some(1),
        unit_mode: Some(false),
        max_reconsume_times: Some(16),
        batch: Some(true),
        broker_name: Some("broker-a".into()),
    }
}

// ---------------------------------------------------------------------------------------------
// Keys and required fields, header by header (§3)

#[test]
fn route_and_membership_headers() {
    assert_keys(
        &GetRouteInfoRequest {
            topic: "T".into(),
            accept_standard_json_only: Some(true),
        },
        &["topic"],
        &["acceptStandardJsonOnly"],
    );
    assert_keys(
        &UnregisterClientRequest {
            client_id: "10.0.0.5@12345#1".into(),
            producer_group: Some("pg".into()),
            consumer_group: Some("cg".into()),
        },
        &["clientID"],
        &["producerGroup", "consumerGroup"],
    );
    assert_keys(
        &GetConsumerListByGroupRequest {
            consumer_group: "cg".into(),
        },
        &["consumerGroup"],
        &[],
    );
    assert_keys(
        &HeartbeatResponse {
            is_support_heart_beat_v2: Some(true),
            is_sub_change: Some(false),
        },
        &[],
        &["IS_SUPPORT_HEART_BEAT_V2", "IS_SUB_CHANGE"],
    );
    assert_round_trip(&HeartbeatResponse::default());
}

#[test]
fn headers_without_fields_encode_nothing() {
    assert!(HeartbeatRequest {}.to_ext_fields().is_empty());
    assert!(LockBatchMqRequest {}.to_ext_fields().is_empty());
    assert!(UnlockBatchMqRequest {}.to_ext_fields().is_empty());
    assert!(CheckClientConfigRequest {}.to_ext_fields().is_empty());
    // Unknown keys (5.x `RpcRequestHeader` additions, ACL signature) are ignored.
    let mut ext = ExtFields::new();
    ext.insert("bname", "broker-a");
    ext.insert("Signature", "abc=");
    assert_eq!(HeartbeatRequest::decode_from(&ext), Ok(HeartbeatRequest {}));
    assert_eq!(
        LockBatchMqRequest::decode_from(&ext),
        Ok(LockBatchMqRequest {})
    );
    assert_eq!(
        UnlockBatchMqRequest::decode_from(&ext),
        Ok(UnlockBatchMqRequest {})
    );
    assert_eq!(
        CheckClientConfigRequest::decode_from(&ext),
        Ok(CheckClientConfigRequest {})
    );
}

#[test]
fn pull_headers() {
    assert_keys(
        &pull_request(),
        &[
            "consumerGroup",
            "topic",
            "queueId",
            "queueOffset",
            "maxMsgNums",
            "sysFlag",
            "commitOffset",
            "suspendTimeoutMillis",
            "subVersion",
        ],
        &["subscription", "expressionType", "maxMsgBytes", "bname"],
    );
    assert_keys(
        &pull_response(),
        &[
            "suggestWhichBrokerId",
            "nextBeginOffset",
            "minOffset",
            "maxOffset",
        ],
        &[
            "offsetDelta",
            "topicSysFlag",
            "groupSysFlag",
            "forbiddenType",
        ],
    );
}

#[test]
fn pull_request_exact_wire_values() {
    let ext = pull_request().to_ext_fields();
    let expected: Vec<(&str, &str)> = vec![
        ("bname", "broker-a"),
        ("commitOffset", "1234567890000"),
        ("consumerGroup", "please_rename_unique_group_name"),
        ("expressionType", "TAG"),
        ("maxMsgBytes", "262144"),
        ("maxMsgNums", "32"),
        ("queueId", "3"),
        ("queueOffset", "1234567890123"),
        ("subVersion", "1718000000000"),
        ("subscription", "TagA || TagB"),
        ("suspendTimeoutMillis", "15000"),
        ("sysFlag", "7"),
        ("topic", "TopicTest"),
    ];
    assert_eq!(ext.iter().collect::<Vec<_>>(), expected);
}

#[test]
fn offset_headers() {
    assert_keys(
        &QueryConsumerOffsetRequest {
            consumer_group: "cg".into(),
            topic: "T".into(),
            queue_id: 0,
            set_zero_if_not_found: Some(false),
        },
        &["consumerGroup", "topic", "queueId"],
        &["setZeroIfNotFound"],
    );
    assert_keys(
        &QueryConsumerOffsetResponse { offset: 12 },
        &["offset"],
        &[],
    );
    assert_keys(
        &UpdateConsumerOffsetRequest {
            consumer_group: "cg".into(),
            topic: "T".into(),
            queue_id: 7,
            commit_offset: 100,
        },
        &["consumerGroup", "topic", "queueId", "commitOffset"],
        &[],
    );
    assert_keys(
        &SearchOffsetRequest {
            topic: "T".into(),
            queue_id: 1,
            timestamp: 1_718_000_000_000,
            boundary_type: Some(BoundaryType::Upper),
        },
        &["topic", "queueId", "timestamp"],
        &["boundaryType"],
    );
    assert_keys(&SearchOffsetResponse { offset: 5 }, &["offset"], &[]);
    assert_keys(
        &GetMaxOffsetRequest {
            topic: "T".into(),
            queue_id: 2,
            committed: Some(true),
        },
        &["topic", "queueId"],
        &["committed"],
    );
    assert_keys(&GetMaxOffsetResponse { offset: i64::MAX }, &["offset"], &[]);
    assert_keys(
        &GetMinOffsetRequest {
            topic: "T".into(),
            queue_id: 2,
        },
        &["topic", "queueId"],
        &[],
    );
    assert_keys(&GetMinOffsetResponse { offset: 0 }, &["offset"], &[]);
    assert_keys(
        &GetEarliestMsgStoretimeRequest {
            topic: "T".into(),
            queue_id: 2,
        },
        &["topic", "queueId"],
        &[],
    );
    assert_keys(
        &GetEarliestMsgStoretimeResponse {
            timestamp: 1_718_000_000_000,
        },
        &["timestamp"],
        &[],
    );
}

#[test]
fn boundary_type_is_the_java_enum_name_read_in_any_case() {
    let header = SearchOffsetRequest {
        topic: "T".into(),
        queue_id: 0,
        timestamp: 1,
        boundary_type: Some(BoundaryType::Upper),
    };
    assert_eq!(header.to_ext_fields().get("boundaryType"), Some("UPPER"));
    let mut ext = header.to_ext_fields();
    for (raw, expected) in [
        ("upper", BoundaryType::Upper),
        ("Lower", BoundaryType::Lower),
    ] {
        ext.insert("boundaryType", raw);
        assert_eq!(
            SearchOffsetRequest::decode_from(&ext).map(|h| h.boundary_type),
            Ok(Some(expected))
        );
    }
    ext.insert("boundaryType", "middle");
    let err = SearchOffsetRequest::decode_from(&ext).expect_err("not a boundary type");
    assert_eq!(invalid_key(&err), Some("boundaryType"), "{err}");
}

#[test]
fn send_back_header() {
    assert_keys(
        &ConsumerSendMsgBackRequest {
            offset: 987_654_321,
            group: "cg".into(),
            delay_level: 0,
            origin_msg_id: Some("0A00000500002A9F0000000000001234".into()),
            origin_topic: Some("T".into()),
            unit_mode: false,
            max_reconsume_times: Some(16),
        },
        &["offset", "group", "delayLevel", "unitMode"],
        &["originMsgId", "originTopic", "maxReconsumeTimes"],
    );
}

#[test]
fn broker_to_client_headers() {
    assert_keys(
        &NotifyConsumerIdsChangedRequest {
            consumer_group: "cg".into(),
        },
        &["consumerGroup"],
        &[],
    );
    assert_keys(
        &ResetOffsetRequest {
            topic: "T".into(),
            group: "cg".into(),
            timestamp: 1_718_000_000_000,
            is_force: true,
            queue_id: Some(-1),
            offset: Some(42),
        },
        &["topic", "group", "timestamp", "isForce"],
        &["queueId", "offset"],
    );
    assert_keys(
        &GetConsumerStatusRequest {
            topic: "T".into(),
            group: "cg".into(),
            client_addr: Some("10.0.0.5".into()),
        },
        &["topic", "group"],
        &["clientAddr"],
    );
    assert_keys(
        &GetConsumerRunningInfoRequest {
            consumer_group: "cg".into(),
            client_id: "10.0.0.5@1#2".into(),
            jstack_enable: Some(false),
        },
        &["consumerGroup", "clientId"],
        &["jstackEnable"],
    );
    assert_keys(
        &ConsumeMessageDirectlyRequest {
            consumer_group: "cg".into(),
            client_id: Some("10.0.0.5@1#2".into()),
            msg_id: Some("0A00000500002A9F0000000000001234".into()),
            broker_name: Some("broker-a".into()),
            topic: Some("T".into()),
            topic_sys_flag: Some(0),
            group_sys_flag: Some(1),
        },
        &["consumerGroup"],
        &[
            "clientId",
            "msgId",
            "brokerName",
            "topic",
            "topicSysFlag",
            "groupSysFlag",
        ],
    );
}

#[test]
fn send_headers() {
    assert_keys(
        &send_v2(),
        &["a", "b", "c", "d", "e", "f", "g", "h"],
        &["i", "j", "k", "l", "m", "n"],
    );
    assert_keys(
        &SendMessageRequest::from(send_v2()),
        &[
            "producerGroup",
            "topic",
            "defaultTopic",
            "defaultTopicQueueNums",
            "queueId",
            "sysFlag",
            "bornTimestamp",
            "flag",
        ],
        &[
            "properties",
            "reconsumeTimes",
            "unitMode",
            "maxReconsumeTimes",
            "batch",
            "bname",
        ],
    );
    assert_keys(
        &SendMessageResponse {
            msg_id: "0A00000500002A9F0000000000001234".into(),
            queue_id: 3,
            queue_offset: 17,
            transaction_id: Some("tx".into()),
            batch_uniq_id: Some("b".into()),
        },
        &["msgId", "queueId", "queueOffset"],
        &["transactionId", "batchUniqId"],
    );
}

#[test]
fn send_v2_exact_wire_values() {
    let ext = send_v2().to_ext_fields();
    let expected: Vec<(&str, &str)> = vec![
        ("a", "pg"),
        ("b", "%RETRY%cg"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "-1"),
        ("f", "769"),
        ("g", "1718000000123"),
        ("h", "0"),
        ("i", "TAGS\u{1}TagA\u{2}KEYS\u{1}k1\u{2}"),
        ("j", "1"),
        ("k", "false"),
        ("l", "16"),
        ("m", "true"),
        ("n", "broker-a"),
    ];
    assert_eq!(ext.iter().collect::<Vec<_>>(), expected);
}

/// §3.17's table: V1 key, V2 key.
const SEND_KEY_MAP: [(&str, &str); 14] = [
    ("producerGroup", "a"),
    ("topic", "b"),
    ("defaultTopic", "c"),
    ("defaultTopicQueueNums", "d"),
    ("queueId", "e"),
    ("sysFlag", "f"),
    ("bornTimestamp", "g"),
    ("flag", "h"),
    ("properties", "i"),
    ("reconsumeTimes", "j"),
    ("unitMode", "k"),
    ("maxReconsumeTimes", "l"),
    ("batch", "m"),
    ("bname", "n"),
];

/// The V1 encoding of `v2`'s conversion carries the same values under the long keys.
fn assert_v1_v2_keys_agree(v2: &SendMessageRequestV2) {
    let v1 = SendMessageRequest::from(v2.clone());
    let (ext1, ext2) = (v1.to_ext_fields(), v2.to_ext_fields());
    assert_eq!(ext1.len(), ext2.len());
    for (long, short) in SEND_KEY_MAP {
        assert_eq!(ext1.get(long), ext2.get(short), "{long} / {short}");
    }
    assert_eq!(SendMessageRequestV2::from(v1), *v2);
}

#[test]
fn send_v1_and_v2_convert_with_the_documented_key_map() {
    assert_v1_v2_keys_agree(&send_v2());
    assert_v1_v2_keys_agree(&SendMessageRequestV2::default());
}

#[test]
fn create_topic_header() {
    let header = CreateTopicRequest {
        topic: "T".into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 8,
        write_queue_nums: 8,
        perm: 6,
        topic_filter_type: "MULTI_TAG".into(),
        topic_sys_flag: Some(0),
        order: true,
        attributes: Some("+message.type=NORMAL".into()),
    };
    assert_keys(
        &header,
        &[
            "topic",
            "defaultTopic",
            "readQueueNums",
            "writeQueueNums",
            "perm",
            "topicFilterType",
            "order",
        ],
        &["topicSysFlag", "attributes"],
    );
    assert_eq!(header.to_ext_fields().get("order"), Some("true"));
}

#[test]
fn headers_with_every_optional_field_absent_round_trip() {
    assert_round_trip(&GetRouteInfoRequest {
        topic: "T".into(),
        accept_standard_json_only: None,
    });
    assert_round_trip(&UnregisterClientRequest {
        client_id: "c".into(),
        ..Default::default()
    });
    assert_round_trip(&PullMessageRequest {
        subscription: None,
        expression_type: None,
        max_msg_bytes: None,
        broker_name: None,
        ..pull_request()
    });
    assert_round_trip(&PullMessageResponse {
        offset_delta: None,
        topic_sys_flag: None,
        group_sys_flag: None,
        forbidden_type: None,
        ..pull_response()
    });
    assert_round_trip(&QueryConsumerOffsetRequest {
        consumer_group: "g1".into(),
        topic: "t1".into(),
        queue_id: 0,
        set_zero_if_not_found: None,
    });
    assert_round_trip(&SearchOffsetRequest {
        topic: "T".into(),
        ..Default::default()
    });
    assert_round_trip(&GetMaxOffsetRequest {
        topic: "T".into(),
        ..Default::default()
    });
    assert_round_trip(&ConsumerSendMsgBackRequest {
        group: "g".into(),
        ..Default::default()
    });
    assert_round_trip(&ResetOffsetRequest {
        topic: "T".into(),
        group: "g".into(),
        ..Default::default()
    });
    assert_round_trip(&GetConsumerStatusRequest {
        topic: "T".into(),
        group: "g".into(),
        client_addr: None,
    });
    assert_round_trip(&GetConsumerRunningInfoRequest {
        consumer_group: "g".into(),
        client_id: "c".into(),
        jstack_enable: None,
    });
    assert_round_trip(&ConsumeMessageDirectlyRequest {
        consumer_group: "g".into(),
        ..Default::default()
    });
    assert_round_trip(&SendMessageRequestV2 {
        producer_group: "p".into(),
        ..Default::default()
    });
    assert_round_trip(&SendMessageRequest {
        producer_group: "p".into(),
        ..Default::default()
    });
    assert_round_trip(&SendMessageResponse {
        msg_id: "m".into(),
        ..Default::default()
    });
    assert_round_trip(&CreateTopicRequest {
        topic: "T".into(),
        ..Default::default()
    });
}

#[test]
fn malformed_values_name_their_key() {
    let mut ext = pull_request().to_ext_fields();
    ext.insert("queueOffset", "12x");
    let err = PullMessageRequest::decode_from(&ext).expect_err("not a number");
    assert_eq!(invalid_key(&err), Some("queueOffset"), "{err}");

    // Java's Boolean.parseBoolean would read this as false; we report it.
    let mut ext = send_v2().to_ext_fields();
    ext.insert("k", "yes");
    let err = SendMessageRequestV2::decode_from(&ext).expect_err("not a boolean");
    assert_eq!(invalid_key(&err), Some("k"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Pull sysFlag (§4.1)

#[test]
fn pull_sys_flag_bits_match_java() {
    assert_eq!(
        [
            pull_sys_flag::COMMIT_OFFSET,
            pull_sys_flag::SUSPEND,
            pull_sys_flag::SUBSCRIPTION,
            pull_sys_flag::CLASS_FILTER,
            pull_sys_flag::LITE_PULL,
        ],
        [0x1, 0x2, 0x4, 0x8, 0x10]
    );
    // Push consumer: suspend, plus commit-offset when it has an offset to commit.
    assert_eq!(pull_sys_flag::build(false, true, false, false, false), 0x02);
    assert_eq!(pull_sys_flag::build(true, true, false, false, false), 0x03);
    // Lite pull consumer: suspend | subscription | lite pull.
    assert_eq!(pull_sys_flag::build(false, true, true, false, true), 0x16);
    assert_eq!(pull_sys_flag::clear_commit_offset(0x03), 0x02);
    assert_eq!(pull_sys_flag::clear_commit_offset(0x16), 0x16);

    for bits in 0..32 {
        let [c, s, sub, cf, lp] = [0, 1, 2, 3, 4].map(|i| bits & (1 << i) != 0);
        let flag = pull_sys_flag::build(c, s, sub, cf, lp);
        assert_eq!(flag, bits);
        assert_eq!(
            [
                pull_sys_flag::has_commit_offset(flag),
                pull_sys_flag::has_suspend(flag),
                pull_sys_flag::has_subscription(flag),
                pull_sys_flag::has_class_filter(flag),
                pull_sys_flag::has_lite_pull(flag),
            ],
            [c, s, sub, cf, lp]
        );
        assert!(!pull_sys_flag::has_commit_offset(
            pull_sys_flag::clear_commit_offset(flag)
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Whole frames

#[test]
fn pull_request_through_json_and_binary_frames() {
    for encoding in [HeaderEncoding::Json, HeaderEncoding::Binary] {
        let header = pull_request();
        let mut request = Command::request(RequestCode::PULL_MESSAGE, &header);
        request.opaque = 99;
        let decoded = through_frame(&request, encoding);
        assert_eq!(decoded.request_code(), RequestCode::PULL_MESSAGE);
        assert_eq!(decoded.opaque, 99);
        assert_eq!(
            decoded.header::<PullMessageRequest>(),
            Ok(header),
            "{encoding:?}"
        );
    }
}

#[test]
fn every_request_header_through_both_frame_encodings() {
    fn check<H: CommandHeader + PartialEq + Debug>(code: RequestCode, header: H) {
        for encoding in [HeaderEncoding::Json, HeaderEncoding::Binary] {
            let decoded = through_frame(&Command::request(code, &header), encoding);
            assert_eq!(decoded.request_code(), code);
            assert_eq!(
                decoded.header::<H>().as_ref(),
                Ok(&header),
                "{code} {encoding:?}"
            );
        }
    }
    check(
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        GetRouteInfoRequest {
            topic: "T".into(),
            accept_standard_json_only: Some(true),
        },
    );
    check(RequestCode::HEART_BEAT, HeartbeatRequest {});
    check(
        RequestCode::UNREGISTER_CLIENT,
        UnregisterClientRequest {
            client_id: "c".into(),
            producer_group: None,
            consumer_group: Some("cg".into()),
        },
    );
    check(
        RequestCode::GET_CONSUMER_LIST_BY_GROUP,
        GetConsumerListByGroupRequest {
            consumer_group: "cg".into(),
        },
    );
    check(RequestCode::LITE_PULL_MESSAGE, pull_request());
    check(
        RequestCode::QUERY_CONSUMER_OFFSET,
        QueryConsumerOffsetRequest {
            consumer_group: "cg".into(),
            topic: "T".into(),
            queue_id: 1,
            set_zero_if_not_found: Some(false),
        },
    );
    check(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        UpdateConsumerOffsetRequest {
            consumer_group: "cg".into(),
            topic: "T".into(),
            queue_id: 1,
            commit_offset: 10,
        },
    );
    check(
        RequestCode::SEARCH_OFFSET_BY_TIMESTAMP,
        SearchOffsetRequest {
            topic: "T".into(),
            queue_id: 0,
            timestamp: 5,
            boundary_type: Some(BoundaryType::Lower),
        },
    );
    check(
        RequestCode::GET_MAX_OFFSET,
        GetMaxOffsetRequest {
            topic: "T".into(),
            queue_id: 0,
            committed: Some(true),
        },
    );
    check(
        RequestCode::GET_MIN_OFFSET,
        GetMinOffsetRequest {
            topic: "T".into(),
            queue_id: 0,
        },
    );
    check(
        RequestCode::GET_EARLIEST_MSG_STORETIME,
        GetEarliestMsgStoretimeRequest {
            topic: "T".into(),
            queue_id: 0,
        },
    );
    check(RequestCode::LOCK_BATCH_MQ, LockBatchMqRequest {});
    check(RequestCode::UNLOCK_BATCH_MQ, UnlockBatchMqRequest {});
    check(
        RequestCode::CONSUMER_SEND_MSG_BACK,
        ConsumerSendMsgBackRequest {
            offset: 1,
            group: "cg".into(),
            delay_level: -1,
            origin_msg_id: None,
            origin_topic: Some("T".into()),
            unit_mode: false,
            max_reconsume_times: Some(16),
        },
    );
    check(
        RequestCode::CHECK_CLIENT_CONFIG,
        CheckClientConfigRequest {},
    );
    check(
        RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
        NotifyConsumerIdsChangedRequest {
            consumer_group: "cg".into(),
        },
    );
    check(
        RequestCode::RESET_CONSUMER_CLIENT_OFFSET,
        ResetOffsetRequest {
            topic: "T".into(),
            group: "cg".into(),
            timestamp: 1,
            is_force: true,
            queue_id: None,
            offset: None,
        },
    );
    check(
        RequestCode::GET_CONSUMER_STATUS_FROM_CLIENT,
        GetConsumerStatusRequest {
            topic: "T".into(),
            group: "cg".into(),
            client_addr: None,
        },
    );
    check(
        RequestCode::GET_CONSUMER_RUNNING_INFO,
        GetConsumerRunningInfoRequest {
            consumer_group: "cg".into(),
            client_id: "c".into(),
            jstack_enable: Some(true),
        },
    );
    check(
        RequestCode::CONSUME_MESSAGE_DIRECTLY,
        ConsumeMessageDirectlyRequest {
            consumer_group: "cg".into(),
            client_id: Some("c".into()),
            msg_id: Some("m".into()),
            broker_name: Some("broker-a".into()),
            topic: None,
            topic_sys_flag: None,
            group_sys_flag: None,
        },
    );
    check(RequestCode::SEND_MESSAGE_V2, send_v2());
    check(
        RequestCode::SEND_MESSAGE,
        SendMessageRequest::from(send_v2()),
    );
    check(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        CreateTopicRequest {
            topic: "T".into(),
            default_topic: "TBW102".into(),
            read_queue_nums: 4,
            write_queue_nums: 4,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: Some("+message.type=NORMAL".into()),
        },
    );
}

#[test]
fn response_headers_through_both_frame_encodings() {
    fn check<H: CommandHeader + PartialEq + Debug>(header: H) {
        for encoding in [HeaderEncoding::Json, HeaderEncoding::Binary] {
            let mut response = Command::response(ResponseCode::SUCCESS, 5);
            response.ext_fields = header.to_ext_fields();
            let decoded = through_frame(&response, encoding);
            assert!(decoded.is_response());
            assert_eq!(decoded.header::<H>().as_ref(), Ok(&header), "{encoding:?}");
        }
    }
    check(pull_response());
    check(QueryConsumerOffsetResponse { offset: 12 });
    check(SearchOffsetResponse { offset: -1 });
    check(GetMaxOffsetResponse { offset: 1 });
    check(GetMinOffsetResponse { offset: 0 });
    check(GetEarliestMsgStoretimeResponse {
        timestamp: 1_718_000_000_000,
    });
    check(HeartbeatResponse {
        is_support_heart_beat_v2: Some(true),
        is_sub_change: Some(true),
    });
    check(SendMessageResponse {
        msg_id: "0A00000500002A9F0000000000001234".into(),
        queue_id: 3,
        queue_offset: 17,
        transaction_id: None,
        batch_uniq_id: Some("b".into()),
    });
}

/// §1.5: a zero-length string decodes as absent, so an empty value does not survive the binary
/// header (it does survive JSON). Pinned so nobody relies on it.
#[test]
fn empty_strings_travel_as_absent_in_the_binary_header() {
    let header = SendMessageRequestV2 {
        properties: Some(String::new()),
        ..send_v2()
    };
    let request = Command::request(RequestCode::SEND_MESSAGE_V2, &header);

    let json = through_frame(&request, HeaderEncoding::Json);
    assert_eq!(json.header::<SendMessageRequestV2>().as_ref(), Ok(&header));

    let binary = through_frame(&request, HeaderEncoding::Binary);
    assert_eq!(
        binary.header::<SendMessageRequestV2>(),
        Ok(SendMessageRequestV2 {
            properties: None,
            ..send_v2()
        })
    );

    let header = PullMessageRequest {
        topic: String::new(),
        ..pull_request()
    };
    let binary = through_frame(
        &Command::request(RequestCode::PULL_MESSAGE, &header),
        HeaderEncoding::Binary,
    );
    assert_eq!(
        binary.header::<PullMessageRequest>(),
        Err(HeaderError::Missing { field: "topic" })
    );
}

// ---------------------------------------------------------------------------------------------
// The examples of remoting-protocol.md

/// §1.4: the JSON header of the example `QUERY_CONSUMER_OFFSET` request.
const DOC_JSON_HEADER: &str = concat!(
    r#"{"code":14,"extFields":{"consumerGroup":"g1","queueId":"0","topic":"t1"},"flag":0,"#,
    r#""language":"RUST","opaque":7,"serializeTypeCurrentRPC":"JSON","version":475}"#,
);

/// §1.5: the same request with a binary header, as the document prints it (comments dropped;
/// quoted parts are ASCII, the rest hex bytes).
const DOC_BINARY_FRAME: &str = r#"
    00 00 00 49  01 00 00 45
    00 0e  0c  01 db  00 00 00 07  00 00 00 00
    00 00 00 00
    00 00 00 30
    00 0d "consumerGroup" 00 00 00 02 "g1"
    00 05 "topic"         00 00 00 02 "t1"
    00 07 "queueId"       00 00 00 01 "0"
"#;

fn doc_binary_frame() -> Vec<u8> {
    let mut bytes = Vec::new();
    for token in DOC_BINARY_FRAME.split_whitespace() {
        match token.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            Some(ascii) => bytes.extend_from_slice(ascii.as_bytes()),
            None => bytes.extend(hex::decode(token).expect("the document's hex bytes")),
        }
    }
    bytes
}

fn doc_query_header() -> QueryConsumerOffsetRequest {
    QueryConsumerOffsetRequest {
        consumer_group: "g1".into(),
        topic: "t1".into(),
        queue_id: 0,
        set_zero_if_not_found: None,
    }
}

fn assert_doc_command(command: &Command) {
    assert_eq!(command.request_code(), RequestCode::QUERY_CONSUMER_OFFSET);
    assert_eq!(command.language, LanguageCode::RUST);
    assert_eq!(command.version, 475);
    assert_eq!(command.opaque, 7);
    assert_eq!(command.flag, 0);
    assert!(!command.is_response());
    assert_eq!(command.remark, None);
    assert!(command.body.is_empty());
    assert_eq!(
        command.header::<QueryConsumerOffsetRequest>(),
        Ok(doc_query_header())
    );
}

#[test]
fn doc_json_example_frame_decodes_and_reencodes_byte_for_byte() {
    let mut wire = BytesMut::new();
    wire.extend_from_slice(&[0x00, 0x00, 0x00, 0xa2, 0x00, 0x00, 0x00, 0x9e]);
    wire.extend_from_slice(DOC_JSON_HEADER.as_bytes());
    // "Total length 162" counts what follows the length field: 4 + 158. The frame is 166 bytes.
    assert_eq!(DOC_JSON_HEADER.len(), 158);
    assert_eq!(wire.len(), 4 + 162);
    let original = wire.clone();

    let command = FrameDecoder::default()
        .decode(&mut wire)
        .expect("valid")
        .expect("whole");
    assert!(wire.is_empty());
    assert_doc_command(&command);

    // Built from the typed header, the request encodes to the document's bytes exactly.
    let mut request = Command::request(RequestCode::QUERY_CONSUMER_OFFSET, &doc_query_header());
    request.language = LanguageCode::RUST;
    request.version = 475;
    request.opaque = 7;
    let mut reencoded = BytesMut::new();
    frame::encode(&request, HeaderEncoding::Json, &mut reencoded).expect("fits");
    assert_eq!(reencoded, original);
}

#[test]
fn doc_binary_example_frame_decodes() {
    let bytes = doc_binary_frame();
    // "Total 73" counts what follows the length field: 4 + 21 fixed + 48 map. The frame is 77.
    assert_eq!(bytes.len(), 4 + 73);
    let mut wire = BytesMut::from(&bytes[..]);
    let command = FrameDecoder::default()
        .decode(&mut wire)
        .expect("valid")
        .expect("whole");
    assert!(wire.is_empty());
    assert_doc_command(&command);

    // Our encoder writes the map in key order (the document lists topic before queueId), so
    // the bytes differ but the length and the decoded command do not.
    let mut reencoded = BytesMut::new();
    frame::encode(&command, HeaderEncoding::Binary, &mut reencoded).expect("fits");
    assert_eq!(reencoded.len(), bytes.len());
    assert_eq!(&reencoded[..8], &bytes[..8]);
    let again = FrameDecoder::default()
        .decode(&mut reencoded)
        .expect("valid")
        .expect("whole");
    assert_eq!(again, command);
}

/// §1.4's "typical Java response header", and the same with bare JSON numbers as non-Java
/// writers send them.
#[test]
fn doc_typical_response_header_decodes() {
    for text in [
        concat!(
            r#"{"code":0,"extFields":{"offset":"12"},"flag":1,"language":"JAVA","opaque":5,"#,
            r#""serializeTypeCurrentRPC":"JSON","version":475}"#,
        ),
        concat!(
            r#"{"code":0,"extFields":{"offset":12},"flag":1,"language":"JAVA","opaque":5,"#,
            r#""serializeTypeCurrentRPC":"JSON","version":475}"#,
        ),
    ] {
        let command = FrameDecoder::default()
            .decode(&mut json_frame(text))
            .expect("valid")
            .expect("whole");
        assert!(command.is_response());
        assert_eq!(command.opaque, 5);
        assert_eq!(
            command.header::<QueryConsumerOffsetResponse>(),
            Ok(QueryConsumerOffsetResponse { offset: 12 })
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Captures from the local broker (tests/data, see /work/shared/captures/README.md)

#[test]
fn captured_pull_response_headers_decode() {
    let cases: [(&[u8], ResponseCode, i64, i64); 4] = [
        (
            include_bytes!("../data/pull-found-32x1k.bin"),
            ResponseCode::SUCCESS,
            132,
            2500,
        ),
        (
            include_bytes!("../data/pull-found-zlib.bin"),
            ResponseCode::SUCCESS,
            2,
            2,
        ),
        (
            include_bytes!("../data/pull-retry-topic.bin"),
            ResponseCode::SUCCESS,
            1,
            1,
        ),
        (
            include_bytes!("../data/pull-offset-overflow.bin"),
            ResponseCode::PULL_OFFSET_MOVED,
            2500,
            2500,
        ),
    ];
    for (capture, code, next_begin_offset, max_offset) in cases {
        let [response] = <[Command; 1]>::try_from(frames(capture)).expect("one frame per capture");
        assert_eq!(response.response_code(), code);
        assert_eq!(
            response.header::<PullMessageResponse>(),
            Ok(PullMessageResponse {
                suggest_which_broker_id: 0,
                next_begin_offset,
                min_offset: 0,
                max_offset,
                offset_delta: None,
                topic_sys_flag: Some(0),
                group_sys_flag: Some(0),
                forbidden_type: None,
            })
        );
    }
}

#[test]
fn captured_notify_and_heartbeat_headers_decode() {
    let [notify, heartbeat] = <[Command; 2]>::try_from(frames(include_bytes!(
        "../data/heartbeat-stream-with-notify.bin"
    )))
    .expect("two frames");
    assert_eq!(
        notify.request_code(),
        RequestCode::NOTIFY_CONSUMER_IDS_CHANGED
    );
    assert!(notify.is_oneway());
    assert_eq!(
        notify.header::<NotifyConsumerIdsChangedRequest>(),
        Ok(NotifyConsumerIdsChangedRequest {
            consumer_group: "g-capture2".into()
        })
    );
    assert!(heartbeat.is_response());
    assert_eq!(
        heartbeat.header::<HeartbeatResponse>(),
        Ok(HeartbeatResponse {
            is_support_heart_beat_v2: Some(true),
            is_sub_change: Some(true)
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Properties

/// Any string, including empty and non-ASCII ones.
fn any_text() -> BoxedStrategy<String> {
    any::<String>().boxed()
}

/// A string the binary header can carry (§1.5: empty means absent).
fn wire_text() -> BoxedStrategy<String> {
    ".{1,24}".boxed()
}

prop_compose! {
    fn pull_request_with(s: fn() -> BoxedStrategy<String>)(
        (consumer_group, topic, subscription, expression_type, broker_name) in
            (s(), s(), option::of(s()), option::of(s()), option::of(s())),
        (queue_id, queue_offset, max_msg_nums, sys_flag, commit_offset) in
            (any::<i32>(), any::<i64>(), any::<i32>(), any::<i32>(), any::<i64>()),
        (suspend_timeout_millis, sub_version, max_msg_bytes) in
            (any::<i64>(), any::<i64>(), option::of(any::<i32>())),
    ) -> PullMessageRequest {
        PullMessageRequest {
            consumer_group,
            topic,
            queue_id,
            queue_offset,
            max_msg_nums,
            sys_flag,
            commit_offset,
            suspend_timeout_millis,
            subscription,
            sub_version,
            expression_type,
            max_msg_bytes,
            broker_name,
        }
    }
}

prop_compose! {
    fn send_v2_with(s: fn() -> BoxedStrategy<String>)(
        (producer_group, topic, default_topic, properties, broker_name) in
            (s(), s(), s(), option::of(s()), option::of(s())),
        (default_topic_queue_nums, queue_id, sys_flag, born_timestamp, flag) in
            (any::<i32>(), any::<i32>(), any::<i32>(), any::<i64>(), any::<i32>()),
        (reconsume_times, unit_mode, max_reconsume_times, batch) in (
            option::of(any::<i32>()),
            option::of(any::<bool>()),
            option::of(any::<i32>()),
            option::of(any::<bool>()),
        ),
    ) -> SendMessageRequestV2 {
        SendMessageRequestV2 {
            producer_group,
            topic,
            default_topic,
            default_topic_queue_nums,
            queue_id,
            sys_flag,
            born_timestamp,
            flag,
            properties,
            reconsume_times,
            unit_mode,
            max_reconsume_times,
            batch,
            broker_name,
        }
    }
}

prop_compose! {
    fn arb_pull_response()(
        (suggest_which_broker_id, next_begin_offset, min_offset, max_offset) in
            (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
        (offset_delta, topic_sys_flag, group_sys_flag, forbidden_type) in (
            option::of(any::<i64>()),
            option::of(any::<i32>()),
            option::of(any::<i32>()),
            option::of(any::<i32>()),
        ),
    ) -> PullMessageResponse {
        PullMessageResponse {
            suggest_which_broker_id,
            next_begin_offset,
            min_offset,
            max_offset,
            offset_delta,
            topic_sys_flag,
            group_sys_flag,
            forbidden_type,
        }
    }
}

proptest! {
    #[test]
    fn pull_request_round_trips_through_ext_fields(header in pull_request_with(any_text)) {
        let ext = header.to_ext_fields();
        prop_assert_eq!(PullMessageRequest::decode_from(&ext), Ok(header));
    }

    #[test]
    fn pull_request_round_trips_through_frames(
        header in pull_request_with(wire_text),
        opaque in any::<i32>(),
    ) {
        for encoding in [HeaderEncoding::Json, HeaderEncoding::Binary] {
            let mut request = Command::request(RequestCode::PULL_MESSAGE, &header);
            request.opaque = opaque;
            let decoded = through_frame(&request, encoding);
            prop_assert_eq!(decoded.opaque, opaque);
            prop_assert_eq!(decoded.header::<PullMessageRequest>(), Ok(header.clone()));
        }
    }

    #[test]
    fn pull_response_round_trips_through_frames(header in arb_pull_response()) {
        let ext = header.to_ext_fields();
        prop_assert_eq!(PullMessageResponse::decode_from(&ext), Ok(header.clone()));
        for encoding in [HeaderEncoding::Json, HeaderEncoding::Binary] {
            let mut response = Command::response(ResponseCode::PULL_NOT_FOUND, 1);
            response.ext_fields = header.to_ext_fields();
            let decoded = through_frame(&response, encoding);
            prop_assert_eq!(decoded.header::<PullMessageResponse>(), Ok(header.clone()));
        }
    }

    #[test]
    fn send_v2_round_trips_and_converts(header in send_v2_with(any_text)) {
        let ext = header.to_ext_fields();
        prop_assert_eq!(SendMessageRequestV2::decode_from(&ext), Ok(header.clone()));
        let v1 = SendMessageRequest::from(header.clone());
        prop_assert_eq!(SendMessageRequest::decode_from(&v1.to_ext_fields()), Ok(v1.clone()));
        assert_v1_v2_keys_agree(&header);
    }

    #[test]
    fn send_v2_round_trips_through_frames(header in send_v2_with(wire_text)) {
        for encoding in [HeaderEncoding::Json, HeaderEncoding::Binary] {
            let request = Command::request(RequestCode::SEND_MESSAGE_V2, &header);
            let decoded = through_frame(&request, encoding);
            prop_assert_eq!(decoded.header::<SendMessageRequestV2>(), Ok(header.clone()));
        }
    }
}
