//! Writing records with `encode_stored` and decoding them gives back every field: v1 and v2
//! magic, IPv4 and IPv6 hosts, bodies compressed with each algorithm, empty bodies and empty
//! properties, more records than one decoding chunk holds, and 5.x inner batches unwrapped as
//! Java's `PullAPIWrapper` does. Batch bodies written by `encode_batch` split back with
//! `decode_batch`.

use std::net::{IpAddr, SocketAddr};

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rocketmq_proto::message::{
    self, Compression, DecodeOptions, MagicCode, Message, OutgoingMessage, StoredMessage, property,
    sys_flag,
};

/// A stored message and what its body decompresses to.
#[derive(Clone, Debug)]
struct Case {
    stored: StoredMessage,
    body: Bytes,
    pairs: Vec<(String, String)>,
}

fn host() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::from(ip), port)),
        (any::<[u8; 16]>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::from(ip), port)),
    ]
}

fn compression() -> impl Strategy<Value = Option<Compression>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(Compression::Zlib)),
        1 => Just(Some(Compression::Lz4)),
        1 => Just(Some(Compression::Zstd)),
    ]
}

fn pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec(("[A-Z_]{1,12}", "[^\u{1}\u{2}]{1,24}"), 0..6)
}

fn case() -> impl Strategy<Value = Case> {
    let fields = (
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
    );
    let magic = prop_oneof![Just(MagicCode::V1), Just(MagicCode::V2)];
    (
        fields,
        magic,
        host(),
        host(),
        compression(),
        prop::collection::vec(any::<u8>(), 0..600),
        "\\PC{0,40}",
        pairs(),
    )
        .prop_filter("v1 topics fit a signed byte", |(_, magic, .., topic, _)| {
            topic.len() <= magic.max_topic_len()
        })
        .prop_map(
            |(
                (
                    queue_id,
                    flag,
                    queue_offset,
                    commit_log_offset,
                    flags,
                    born,
                    stored,
                    reconsume,
                    prepared,
                ),
                magic,
                born_host,
                store_host,
                compression,
                body,
                topic,
                pairs,
            )| {
                // Random bits everywhere except where they would change the layout or ask for
                // decompression or unwrapping; those come from the case itself.
                let reserved = sys_flag::COMPRESSED
                    | sys_flag::COMPRESSION_TYPE_MASK
                    | sys_flag::BORN_HOST_V6
                    | sys_flag::STORE_HOST_V6
                    | sys_flag::NEED_UNWRAP
                    | sys_flag::INNER_BATCH;
                let mut sys_flag = flags & !reserved;
                let body = Bytes::from(body);
                let stored_body = match compression {
                    Some(c) => {
                        sys_flag |= c.sys_flag();
                        message::compress_body(&body, c, message::DEFAULT_COMPRESS_LEVEL)
                            .expect("compression of memory never fails")
                    }
                    None => body.clone(),
                };
                let stored = StoredMessage {
                    magic,
                    queue_id,
                    flag,
                    queue_offset,
                    commit_log_offset,
                    sys_flag,
                    born_timestamp: born,
                    born_host,
                    store_timestamp: stored,
                    store_host,
                    reconsume_times: reconsume,
                    prepared_transaction_offset: prepared,
                    body: stored_body,
                    topic,
                    properties: message::encode_properties(pairs.iter().map(|(k, v)| (k, v))),
                };
                Case {
                    stored,
                    body,
                    pairs,
                }
            },
        )
}

fn encode_all(cases: &[Case]) -> Bytes {
    let mut out = BytesMut::new();
    for case in cases {
        message::encode_stored(&case.stored, &mut out).expect("generated cases fit every field");
    }
    out.freeze()
}

fn assert_same(msg: &Message, case: &Case) {
    let s = &case.stored;
    let mut expected_flag = s.sys_flag;
    if s.born_host.is_ipv6() {
        expected_flag |= sys_flag::BORN_HOST_V6;
    }
    if s.store_host.is_ipv6() {
        expected_flag |= sys_flag::STORE_HOST_V6;
    }
    assert_eq!(msg.magic_code(), s.magic);
    assert_eq!(msg.topic(), s.topic);
    assert_eq!(msg.queue_id(), s.queue_id);
    assert_eq!(msg.flag(), s.flag);
    assert_eq!(msg.queue_offset(), s.queue_offset);
    assert_eq!(msg.commit_log_offset(), s.commit_log_offset);
    assert_eq!(msg.sys_flag(), expected_flag);
    assert_eq!(msg.born_timestamp(), s.born_timestamp);
    assert_eq!(msg.born_host(), s.born_host);
    assert_eq!(msg.store_timestamp(), s.store_timestamp);
    assert_eq!(msg.store_host(), s.store_host);
    assert_eq!(msg.reconsume_times(), s.reconsume_times);
    assert_eq!(
        msg.prepared_transaction_offset(),
        s.prepared_transaction_offset
    );
    assert_eq!(msg.body(), &case.body);
    assert_eq!(msg.stored_body_len(), s.body.len());
    assert_eq!(
        msg.body_crc(),
        (crc32fast::hash(&s.body) & 0x7FFF_FFFF) as i32
    );
    assert_eq!(
        msg.stored_compression(),
        Compression::from_sys_flag(s.sys_flag).unwrap()
    );
    assert_eq!(msg.raw_properties(), s.properties.as_bytes());
    let pairs: Vec<(&str, &str)> = msg.properties().collect();
    let expected: Vec<(&str, &str)> = case
        .pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(pairs, expected);
    let store_ip = match s.store_host.ip() {
        IpAddr::V4(ip) => ip.octets().to_vec(),
        IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    let expected_id = format!(
        "{}{:08X}{:016X}",
        hex::encode_upper(store_ip),
        s.store_host.port(),
        s.commit_log_offset
    );
    assert_eq!(msg.offset_msg_id(), expected_id);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stored_records_round_trip(cases in prop::collection::vec(case(), 1..8)) {
        let body = encode_all(&cases);
        let batch = message::decode_messages(&body, &DecodeOptions::default().with_verify_crc(true));
        prop_assert_eq!(batch.error, None);
        prop_assert_eq!(batch.messages.len(), cases.len());
        for (msg, case) in batch.messages.iter().zip(&cases) {
            assert_same(msg, case);
        }
    }

    #[test]
    fn one_record_round_trips_alone(case in case()) {
        let record = encode_all(std::slice::from_ref(&case));
        prop_assert_eq!(record.len(), case.stored.encoded_len());
        let msg = message::decode_message(&record, &DecodeOptions::default().with_verify_crc(true))
            .expect("an encoded record decodes");
        assert_same(&msg, &case);
        // Cloning and Debug read the same record.
        let copy = msg.clone();
        assert_same(&copy, &case);
        let debug = format!("{msg:?}");
        prop_assert!(debug.contains("queue_offset"));
    }

    #[test]
    fn batches_round_trip(
        entries in prop::collection::vec((any::<i32>(), prop::collection::vec(any::<u8>(), 0..200), pairs()), 1..6)
    ) {
        let messages: Vec<OutgoingMessage> = entries
            .iter()
            .map(|(flag, body, pairs)| {
                let mut m = OutgoingMessage::new("T", body.clone());
                m.flag = *flag;
                for (k, v) in pairs {
                    if k != property::DELAY && k != property::WAIT {
                        m.set_property(k.clone(), v.clone());
                    }
                }
                m
            })
            .collect();
        let body = message::encode_batch(&messages).expect("valid batch");
        let decoded = message::decode_batch(&body).expect("an encoded batch splits");
        prop_assert_eq!(decoded.len(), messages.len());
        for (entry, sent) in decoded.iter().zip(&messages) {
            prop_assert_eq!(entry.flag, sent.flag);
            prop_assert_eq!(entry.body_crc, 0);
            prop_assert_eq!(&entry.body, &sent.body);
            let pairs: Vec<(&str, &str)> = entry.property_pairs().collect();
            let expected: Vec<(&str, &str)> =
                sent.properties.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            prop_assert_eq!(pairs, expected);
        }
    }
}

#[test]
fn more_records_than_a_chunk_with_compressed_ones_among_them() {
    let cases: Vec<Case> = (0..100_i64)
        .map(|i| {
            let body = Bytes::from(format!("body {i} ").repeat(20));
            let compression = match i % 7 {
                0 => Some(Compression::Zlib),
                3 => Some(Compression::Lz4),
                5 => Some(Compression::Zstd),
                _ => None,
            };
            let stored_body = match compression {
                Some(c) => message::compress_body(&body, c, 5).unwrap(),
                None => body.clone(),
            };
            let pairs = vec![("KEYS".to_owned(), format!("k{i}"))];
            Case {
                stored: StoredMessage {
                    queue_offset: i,
                    sys_flag: compression.map_or(0, Compression::sys_flag),
                    body: stored_body,
                    topic: "chunks".into(),
                    properties: message::encode_properties(pairs.iter().map(|(k, v)| (k, v))),
                    ..StoredMessage::default()
                },
                body,
                pairs,
            }
        })
        .collect();
    let batch = message::decode_messages(&encode_all(&cases), &DecodeOptions::default());
    assert_eq!(batch.error, None);
    assert_eq!(batch.messages.len(), 100);
    for (msg, case) in batch.messages.iter().zip(&cases) {
        assert_same(msg, case);
    }
}

fn inner_batch_record(outer_properties: &str) -> (StoredMessage, Vec<OutgoingMessage>) {
    let inner: Vec<OutgoingMessage> = (0..3)
        .map(|i| {
            let mut m = OutgoingMessage::new("batched", format!("inner {i}"));
            m.flag = 10 + i;
            m.set_tags(format!("t{i}"));
            m.set_property(property::UNIQ_KEY, format!("U{i}"));
            m
        })
        .collect();
    let stored = StoredMessage {
        queue_id: 2,
        queue_offset: 40,
        commit_log_offset: 9_000,
        sys_flag: sys_flag::NEED_UNWRAP | sys_flag::INNER_BATCH,
        born_timestamp: 1,
        store_timestamp: 2,
        reconsume_times: 3,
        prepared_transaction_offset: 77,
        body: message::encode_batch(&inner).unwrap(),
        topic: "batched".into(),
        properties: outer_properties.to_owned(),
        store_host: "10.1.2.3:10911".parse().unwrap(),
        born_host: "[::1]:4000".parse().unwrap(),
        ..StoredMessage::default()
    };
    (stored, inner)
}

#[test]
fn inner_batches_unwrap_like_java() {
    let (stored, inner) = inner_batch_record("INNER_NUM\u{1}3\u{2}UNIQ_KEY\u{1}OUTER\u{2}");
    let before = StoredMessage {
        queue_offset: 39,
        topic: "batched".into(),
        body: Bytes::from_static(b"plain"),
        ..StoredMessage::default()
    };
    let mut body = BytesMut::new();
    message::encode_stored(&before, &mut body).unwrap();
    message::encode_stored(&stored, &mut body).unwrap();
    let body = body.freeze();

    let batch = message::decode_messages(&body, &DecodeOptions::default());
    assert_eq!(batch.error, None);
    assert_eq!(batch.messages.len(), 4);
    assert_eq!(batch.messages[0].body(), b"plain");
    for (i, (msg, sent)) in batch.messages[1..].iter().zip(&inner).enumerate() {
        assert_eq!(msg.topic(), "batched");
        assert_eq!(msg.queue_id(), 2);
        assert_eq!(msg.queue_offset(), 40 + i as i64);
        assert_eq!(msg.commit_log_offset(), 9_000);
        assert_eq!(msg.sys_flag(), stored.sys_flag | sys_flag::BORN_HOST_V6);
        assert_eq!((msg.born_timestamp(), msg.store_timestamp()), (1, 2));
        assert_eq!(msg.reconsume_times(), 3);
        assert_eq!(msg.born_host(), stored.born_host);
        assert_eq!(msg.store_host(), stored.store_host);
        // Java's unwrapping never copies the prepared transaction offset.
        assert_eq!(msg.prepared_transaction_offset(), 0);
        assert_eq!(msg.flag(), sent.flag);
        assert_eq!(msg.body(), &sent.body);
        assert_eq!(msg.stored_body_len(), sent.body.len());
        assert_eq!(msg.body_crc(), 0);
        assert_eq!(msg.tags(), Some(format!("t{i}").as_str()));
        assert_eq!(msg.msg_id(), format!("U{i}"));
        assert_eq!(msg.property(property::INNER_NUM), None);
        assert_eq!(msg.offset_msg_id(), "0A01020300002A9F0000000000002328");
    }

    let wrapped = message::decode_messages(
        &body,
        &DecodeOptions::default().with_unwrap_inner_batches(false),
    );
    assert_eq!(wrapped.error, None);
    assert_eq!(wrapped.messages.len(), 2);
    assert_eq!(wrapped.messages[1].property(property::INNER_NUM), Some("3"));
    assert_eq!(wrapped.messages[1].body(), &stored.body);
}

#[test]
fn set_topic_and_properties_keep_every_other_field() {
    let (stored, _) = inner_batch_record("A\u{1}1\u{2}B\u{1}2\u{2}A\u{1}3\u{2}");
    let stored = StoredMessage {
        sys_flag: Compression::Zstd.sys_flag(),
        body: message::compress_body(b"payload", Compression::Zstd, 3).unwrap(),
        ..stored
    };
    let mut record = BytesMut::new();
    message::encode_stored(&stored, &mut record).unwrap();
    let original = message::decode_message(&record.freeze(), &DecodeOptions::default()).unwrap();
    assert_eq!(original.property("A"), Some("3"));

    let mut msg = original.clone();
    msg.set_topic("elsewhere");
    msg.set_property("A", "new");
    msg.set_property(property::CONSUME_START_TIME, "123");
    assert!(msg.remove_property("B"));
    assert!(!msg.remove_property("B"));
    assert_eq!(msg.topic(), "elsewhere");
    assert!(msg.topic_is("elsewhere") && !msg.topic_is("batched") && !msg.topic_is("else"));
    assert!(original.topic_is("batched"));
    assert_eq!(
        msg.properties().collect::<Vec<_>>(),
        [("A", "new"), (property::CONSUME_START_TIME, "123")]
    );
    assert_eq!(msg.body(), b"payload");
    assert_eq!(msg.stored_body_len(), original.stored_body_len());
    assert_eq!(msg.stored_compression(), Some(Compression::Zstd));
    assert_eq!(msg.offset_msg_id(), original.offset_msg_id());
    assert_eq!(msg.queue_offset(), original.queue_offset());
    assert_eq!(msg.prepared_transaction_offset(), 77);
    assert_eq!(msg.born_host(), original.born_host());
    assert_eq!(msg.magic_code(), original.magic_code());
    // The original is untouched.
    assert_eq!(original.topic(), "batched");
    assert_eq!(original.property("B"), Some("2"));
}
