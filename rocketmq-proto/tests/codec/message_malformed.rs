//! Malformed stored records become errors naming the bad record's byte position, never panics,
//! and the records before a bad one are still returned: every truncation point, bad magic,
//! negative lengths, TOTALSIZE disagreeing with the fields, CRC mismatches (when checked), bogus
//! or oversized compressed bodies for each algorithm, unknown compression types, bad ports and
//! topics, and broken inner batches. Random and mutated input never panics, and whatever
//! decodes answers every accessor.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rocketmq_proto::message::{
    self, Compression, DecodeOptions, MagicCode, Message, MessageError, MessageErrorKind,
    OutgoingMessage, StoredMessage, sys_flag,
};

fn stored(topic: &str, body: &[u8]) -> StoredMessage {
    StoredMessage {
        queue_offset: 7,
        topic: topic.into(),
        body: Bytes::copy_from_slice(body),
        properties: message::encode_properties([("TAGS", "A"), ("KEYS", "k1 k2")]),
        born_host: "10.0.0.5:54321".parse().unwrap(),
        store_host: "192.168.0.1:10911".parse().unwrap(),
        ..StoredMessage::default()
    }
}

fn encode(messages: &[StoredMessage]) -> BytesMut {
    let mut out = BytesMut::new();
    for m in messages {
        message::encode_stored(m, &mut out).unwrap();
    }
    out
}

/// A valid record of each shape: v1/v2, IPv4/IPv6 hosts, plain/compressed body.
fn shapes() -> Vec<StoredMessage> {
    let plain = stored("TopicTest", b"hello");
    let v2 = StoredMessage {
        magic: MagicCode::V2,
        topic: "t".repeat(200),
        ..plain.clone()
    };
    let v6 = StoredMessage {
        born_host: "[2001:db8::1]:1".parse().unwrap(),
        store_host: "[::1]:10911".parse().unwrap(),
        ..plain.clone()
    };
    let mut shapes = vec![plain.clone(), v2, v6];
    for c in [Compression::Zlib, Compression::Lz4, Compression::Zstd] {
        shapes.push(StoredMessage {
            sys_flag: c.sys_flag(),
            body: message::compress_body(&b"squeeze me ".repeat(30), c, 5).unwrap(),
            ..plain.clone()
        });
    }
    shapes
}

fn decode(body: &[u8]) -> message::DecodedBatch {
    message::decode_messages(&Bytes::copy_from_slice(body), &DecodeOptions::default())
}

fn only_error(body: &[u8]) -> MessageError {
    let batch = decode(body);
    assert!(batch.messages.is_empty(), "no message before the bad one");
    batch.error.expect("the body is malformed")
}

fn patch(record: &mut BytesMut, at: usize, bytes: &[u8]) {
    record[at..at + bytes.len()].copy_from_slice(bytes);
}

/// Calls every accessor, as a consumer would.
fn touch(msg: &Message) {
    let _ = (
        msg.topic(),
        msg.queue_id(),
        msg.queue_offset(),
        msg.commit_log_offset(),
    );
    let _ = (
        msg.sys_flag(),
        msg.flag(),
        msg.body_crc(),
        msg.born_timestamp(),
        msg.born_host(),
    );
    let _ = (
        msg.store_timestamp(),
        msg.store_host(),
        msg.reconsume_times(),
    );
    let _ = (
        msg.prepared_transaction_offset(),
        msg.body(),
        msg.stored_body_len(),
    );
    let _ = (
        msg.stored_compression(),
        msg.magic_code(),
        msg.properties().count(),
    );
    let _ = (
        msg.tags(),
        msg.keys(),
        msg.key_list().count(),
        msg.unique_key(),
    );
    let _ = (msg.msg_id(), msg.offset_msg_id(), format!("{msg:?}"));
    let mut copy = msg.clone();
    copy.set_property("X", "y");
    copy.set_topic("renamed");
    let _ = (
        copy.topic(),
        copy.property("X"),
        copy.body(),
        copy.queue_offset(),
    );
}

#[test]
fn every_truncation_point_is_an_error() {
    for shape in shapes() {
        let record = encode(std::slice::from_ref(&shape)).freeze();
        for cut in 1..record.len() {
            let error = only_error(&record[..cut]);
            assert_eq!(error.position, 0);
            assert!(
                matches!(error.kind, MessageErrorKind::Truncated { .. }),
                "cut at {cut}: {error}"
            );
            let single = message::decode_message(&record.slice(..cut), &DecodeOptions::default());
            assert_eq!(single.unwrap_err().kind, error.kind);
        }
    }
}

#[test]
fn truncating_the_second_record_keeps_the_first() {
    let first = encode(&[stored("a", b"one")]).len();
    let body = encode(&[stored("a", b"one"), stored("b", b"two")]).freeze();
    for cut in first + 1..body.len() {
        let batch = decode(&body[..cut]);
        assert_eq!(batch.messages.len(), 1);
        assert_eq!(batch.messages[0].body(), b"one");
        assert_eq!(batch.error.expect("truncated").position, first);
    }
}

#[test]
fn records_before_the_bad_one_are_returned() {
    let good = [stored("a", b"1"), stored("b", b"22"), stored("c", b"333")];
    let mut body = encode(&good);
    let bad_at = body.len();
    let mut bad = encode(&[stored("d", b"4444")]);
    patch(&mut bad, 4, &0x1234_5678_i32.to_be_bytes());
    body.extend_from_slice(&bad);
    body.extend_from_slice(&encode(&[stored("e", b"after")]));

    let batch = decode(&body);
    let topics: Vec<&str> = batch.messages.iter().map(Message::topic).collect();
    assert_eq!(topics, ["a", "b", "c"]);
    let error = batch.error.expect("the fourth record is bad");
    assert_eq!(error.position, bad_at);
    assert_eq!(error.kind, MessageErrorKind::BadMagic(0x1234_5678));
    assert_eq!(
        error.to_string(),
        format!("bad stored message at byte {bad_at} of the body: bad magic code 0x12345678")
    );
    assert!(batch.messages.iter().all(|m| !m.body().is_empty()));
}

#[test]
fn bad_magic() {
    let mut record = encode(&[stored("t", b"x")]);
    // The commit-log end-of-file marker never belongs in a pull body.
    patch(&mut record, 4, &0xCBD4_3194_u32.to_be_bytes());
    assert_eq!(
        only_error(&record).kind,
        MessageErrorKind::BadMagic(0xCBD4_3194_u32 as i32)
    );
}

#[test]
fn negative_lengths() {
    let record = encode(&[stored("t", b"body")]);
    let negative = |at: usize, bytes: &[u8], field: &str| {
        let mut bad = record.clone();
        patch(&mut bad, at, bytes);
        match only_error(&bad).kind {
            MessageErrorKind::NegativeLength { field: f, .. } => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    };
    negative(0, &(-1_i32).to_be_bytes(), "TOTALSIZE");
    negative(84, &i32::MIN.to_be_bytes(), "BODYLENGTH");
    // v1 reads the topic length as a signed byte, as Java's `ByteBuffer.get()` does.
    negative(88 + 4, &[0x80], "TOPICLENGTH");
    negative(88 + 4 + 1 + 1, &(-2_i16).to_be_bytes(), "PROPERTIESLENGTH");

    let v2 = StoredMessage {
        magic: MagicCode::V2,
        ..stored("t", b"body")
    };
    let mut bad = encode(&[v2]);
    patch(&mut bad, 88 + 4, &(-1_i16).to_be_bytes());
    assert!(matches!(
        only_error(&bad).kind,
        MessageErrorKind::NegativeLength {
            field: "TOPICLENGTH",
            length: -1
        }
    ));
}

#[test]
fn total_size_disagreeing_with_the_fields() {
    let record = encode(&[stored("t", b"body")]);
    let len = record.len() as i32;
    for claimed in [len - 1, len + 1, 0, 91] {
        let mut bad = record.clone();
        patch(&mut bad, 0, &claimed.to_be_bytes());
        assert_eq!(
            only_error(&bad).kind,
            MessageErrorKind::TotalSizeMismatch {
                total_size: claimed,
                parsed: len as usize
            }
        );
    }
    // A claimed size too small to step to the next record is caught on the first one.
    let mut two = encode(&[stored("t", b"body"), stored("u", b"next")]);
    patch(&mut two, 0, &(len - 4).to_be_bytes());
    assert_eq!(only_error(&two).position, 0);
}

#[test]
fn crc_mismatch_only_when_checked() {
    let mut record = encode(&[stored("t", b"body")]);
    let good_crc = i32::from_be_bytes(record[8..12].try_into().unwrap());
    patch(&mut record, 8, &(good_crc ^ 1).to_be_bytes());
    let record = record.freeze();

    let unchecked = message::decode_messages(&record, &DecodeOptions::default());
    assert_eq!(unchecked.error, None);
    assert_eq!(unchecked.messages[0].body_crc(), good_crc ^ 1);

    let checked =
        message::decode_messages(&record, &DecodeOptions::default().with_verify_crc(true));
    assert!(checked.messages.is_empty());
    assert_eq!(
        checked.error.unwrap().kind,
        MessageErrorKind::CrcMismatch {
            expected: good_crc ^ 1,
            actual: good_crc
        }
    );
}

#[test]
fn bogus_compressed_bodies_are_errors_not_pass_throughs() {
    for c in [Compression::Zlib, Compression::Lz4, Compression::Zstd] {
        let bogus = StoredMessage {
            sys_flag: c.sys_flag(),
            ..stored("t", b"this was never compressed")
        };
        match only_error(&encode(&[bogus])).kind {
            MessageErrorKind::Decompress { algorithm, reason } => {
                assert_eq!(algorithm, c);
                assert!(!reason.is_empty());
            }
            other => panic!("{c}: {other:?}"),
        }
        // A compressed stream cut short is as bad as garbage.
        let whole = message::compress_body(&b"abc".repeat(100), c, 5).unwrap();
        let cut = StoredMessage {
            sys_flag: c.sys_flag(),
            body: whole.slice(..whole.len() - 1),
            ..stored("t", b"")
        };
        assert!(
            matches!(
                only_error(&encode(&[cut])).kind,
                MessageErrorKind::Decompress { .. }
            ),
            "{c}"
        );
    }
}

#[test]
fn decompression_bombs_are_capped() {
    for c in [Compression::Zlib, Compression::Lz4, Compression::Zstd] {
        let bomb = StoredMessage {
            sys_flag: c.sys_flag(),
            body: message::compress_body(&vec![0; 1 << 20], c, 5).unwrap(),
            ..stored("t", b"")
        };
        let body = encode(&[bomb]).freeze();
        let capped = DecodeOptions::default().with_max_body_len(64 * 1024);
        let batch = message::decode_messages(&body, &capped);
        assert_eq!(
            batch.error.unwrap().kind,
            MessageErrorKind::DecompressedTooLarge {
                algorithm: c,
                limit: 64 * 1024
            }
        );
        let default = message::decode_messages(&body, &DecodeOptions::default());
        assert_eq!(default.messages[0].body().len(), 1 << 20);
    }
}

#[test]
fn unknown_compression_types() {
    for value in 4..=7 {
        let record = StoredMessage {
            sys_flag: sys_flag::COMPRESSED | (value << sys_flag::COMPRESSION_TYPE_SHIFT),
            ..stored("t", b"x")
        };
        assert_eq!(
            only_error(&encode(&[record])).kind,
            MessageErrorKind::UnknownCompression(value as u8)
        );
    }
    // Without bit 0 the type bits are ignored, as in Java.
    let unflagged = StoredMessage {
        sys_flag: 7 << sys_flag::COMPRESSION_TYPE_SHIFT,
        ..stored("t", b"x")
    };
    assert_eq!(decode(&encode(&[unflagged])).error, None);
}

#[test]
fn bad_ports_and_topics() {
    let record = encode(&[stored("t", b"x")]);
    for (at, field) in [(52, "BORNHOST"), (68, "STOREHOST")] {
        for port in [-1, 65_536] {
            let mut bad = record.clone();
            patch(&mut bad, at, &i32::to_be_bytes(port));
            assert_eq!(
                only_error(&bad).kind,
                MessageErrorKind::BadPort { field, port }
            );
        }
    }
    let mut bad_utf8 = record.clone();
    patch(&mut bad_utf8, 88 + 1 + 1, &[0xFF]);
    assert_eq!(
        only_error(&bad_utf8).kind,
        MessageErrorKind::BadUtf8 { field: "TOPIC" }
    );
}

#[test]
fn trailing_bytes_after_a_single_record() {
    let mut record = encode(&[stored("t", b"x")]);
    record.extend_from_slice(&[0, 0, 0]);
    let error = message::decode_message(&record.freeze(), &DecodeOptions::default()).unwrap_err();
    assert_eq!(error.kind, MessageErrorKind::TrailingBytes { count: 3 });
}

#[test]
fn broken_inner_batches_report_the_outer_record_whole() {
    let inner: Vec<OutgoingMessage> = (0..3)
        .map(|i| OutgoingMessage::new("b", format!("m{i}")))
        .collect();
    let batch_body = message::encode_batch(&inner).unwrap();
    let first_len = i32::from_be_bytes(batch_body[..4].try_into().unwrap()) as usize;
    let mut broken = BytesMut::from(&batch_body[..]);
    // The second inner message claims one byte more than it holds.
    let second_len = i32::from_be_bytes(broken[first_len..first_len + 4].try_into().unwrap());
    patch(&mut broken, first_len, &(second_len + 1).to_be_bytes());
    let outer = StoredMessage {
        sys_flag: sys_flag::NEED_UNWRAP | sys_flag::INNER_BATCH,
        body: broken.freeze(),
        ..stored("b", b"")
    };
    let before = encode(&[stored("b", b"before")]);
    let mut body = before.clone();
    body.extend_from_slice(&encode(&[outer]));
    let batch = decode(&body);
    assert_eq!(
        batch.messages.len(),
        1,
        "only the record before; no partial inner batch"
    );
    assert_eq!(batch.messages[0].body(), b"before");
    let error = batch.error.unwrap();
    assert_eq!(error.position, before.len());
    match error.kind {
        MessageErrorKind::InnerBatch { offset, kind } => {
            assert_eq!(offset, first_len);
            assert!(matches!(*kind, MessageErrorKind::TotalSizeMismatch { .. }));
        }
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let body = Bytes::from(bytes);
        let batch = message::decode_messages(&body, &DecodeOptions::default().with_verify_crc(true));
        batch.messages.iter().for_each(touch);
        let _ = message::decode_message(&body, &DecodeOptions::default());
        let _ = message::decode_batch(&body);
    }

    #[test]
    fn mutated_records_never_panic(
        shape in 0..6_usize,
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut record = encode(&[shapes()[shape].clone(), stored("next", b"n")]).to_vec();
        for (at, value) in flips {
            let i = at.index(record.len());
            record[i] = value;
        }
        let len = cut.index(record.len() + 1);
        record.truncate(len.max(1));
        let body = Bytes::from(record);
        for options in [
            DecodeOptions::default(),
            DecodeOptions::default().with_verify_crc(true).with_unwrap_inner_batches(false),
        ] {
            let batch = message::decode_messages(&body, &options);
            batch.messages.iter().for_each(touch);
            if let Some(error) = &batch.error {
                prop_assert!(error.position < body.len());
            }
            if let Ok(msg) = message::decode_message(&body, &options) {
                touch(&msg);
            }
        }
    }

    #[test]
    fn mutated_inner_batches_never_panic(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let inner: Vec<OutgoingMessage> =
            (0..3).map(|i| OutgoingMessage::new("b", format!("m{i}"))).collect();
        let mut batch_body = message::encode_batch(&inner).unwrap().to_vec();
        for (at, value) in flips {
            let i = at.index(batch_body.len());
            batch_body[i] = value;
        }
        let outer = StoredMessage {
            sys_flag: sys_flag::NEED_UNWRAP | sys_flag::INNER_BATCH,
            body: Bytes::from(batch_body),
            ..stored("b", b"")
        };
        let body = encode(&[outer]).freeze();
        let batch = message::decode_messages(&body, &DecodeOptions::default());
        batch.messages.iter().for_each(touch);
    }
}
