//! Stored-message records decode to the values read byte by byte off real pull responses from the
//! local broker: 32 messages of 1 KiB (with their CRCs), a zlib-compressed body flagged `0x301`
//! next to a plain one, a `%RETRY%` delivery carrying `RETRY_TOPIC` and `ORIGIN_MESSAGE_ID`, and
//! an OFFSET_MOVED response without a body. Also the hand-built worked example of
//! `remoting-protocol.md` §5.7, byte for byte, in both directions.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use rocketmq_proto::message::{
    self, Compression, DecodeOptions, MagicCode, Message, StoredMessage, property,
};
use rocketmq_proto::{Command, FrameDecoder, ResponseCode};

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

/// The one pull response of a capture, decoded with CRC checking on.
fn pull(capture: &[u8]) -> (Command, Vec<Message>) {
    let mut frames = frames(capture);
    assert_eq!(frames.len(), 1);
    let response = frames.remove(0);
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let batch = message::decode_messages(
        &response.body,
        &DecodeOptions::default().with_verify_crc(true),
    );
    assert_eq!(batch.error, None);
    (response, batch.messages)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("test addresses are valid")
}

fn masked_crc(bytes: &[u8]) -> i32 {
    (crc32fast::hash(bytes) & 0x7FFF_FFFF) as i32
}

#[test]
fn thirty_two_one_kib_messages() {
    let (response, messages) = pull(include_bytes!("../data/pull-found-32x1k.bin"));
    assert_eq!(response.body.len(), 39_815);
    assert_eq!(messages.len(), 32);
    assert_eq!(response.ext_fields.get("nextBeginOffset"), Some("132"));

    // The producer had many sends in flight: key 987 was stored before 963.
    let key_numbers = [
        803, 811, 819, 827, 835, 843, 851, 859, 867, 875, 883, 891, 899, 907, 915, 923, 931, 939,
        947, 955, 987, 963, 971, 979, 995, 1003, 1011, 1019, 1027, 1035, 1043, 1051,
    ];
    let mut previous_end = None;
    for (i, (msg, number)) in messages.iter().zip(key_numbers).enumerate() {
        assert_eq!(msg.topic(), "perf5");
        assert_eq!(msg.queue_id(), 3);
        assert_eq!(msg.queue_offset(), 100 + i as i64);
        assert_eq!(msg.magic_code(), MagicCode::V1);
        assert_eq!(
            (msg.sys_flag(), msg.flag(), msg.reconsume_times()),
            (0, 0, 0)
        );
        assert_eq!(msg.prepared_transaction_offset(), 0);
        assert_eq!(msg.born_host(), addr("127.0.0.1:49536"));
        assert_eq!(msg.store_host(), addr("127.0.0.1:20911"));
        assert_eq!(msg.tags(), Some("TagA"));
        let key = format!("k{number}");
        assert_eq!(msg.keys(), Some(key.as_str()));
        assert_eq!(msg.key_list().collect::<Vec<_>>(), [key.as_str()]);
        assert_eq!(msg.property(property::CLUSTER), Some("DefaultCluster"));
        assert_eq!(msg.property(property::MSG_REGION), Some("DefaultRegion"));
        assert_eq!(msg.property(property::TRACE_ON), Some("true"));
        // The broker writes the properties in no fixed order; six of them every time.
        assert_eq!(msg.properties().count(), 6);

        let prefix = format!("fill-{number}-");
        assert_eq!(msg.body().len(), 1024);
        assert_eq!(msg.stored_body_len(), 1024);
        assert!(msg.body().starts_with(prefix.as_bytes()));
        assert!(msg.body()[prefix.len()..].iter().all(|&b| b == b'x'));
        assert_eq!(msg.body_crc(), masked_crc(msg.body()));
        assert_eq!(msg.stored_compression(), None);

        let uniq = msg.unique_key().expect("the producer set UNIQ_KEY");
        assert_eq!(uniq.len(), 32);
        assert!(uniq.starts_with("C000020224B7AC4C820C922A4"));
        assert_eq!(msg.msg_id(), uniq);
        assert_eq!(
            msg.offset_msg_id(),
            format!("7F000001000051AF{:016X}", msg.commit_log_offset())
        );
        assert!(msg.store_timestamp() >= msg.born_timestamp());
        // Other queues' records sit between these in the commit log.
        if let Some(end) = previous_end {
            assert!(msg.commit_log_offset() > end);
        }
        previous_end = Some(msg.commit_log_offset() + 1244);
    }

    let first = &messages[0];
    assert_eq!(first.commit_log_offset(), 1_001_310);
    assert_eq!(first.offset_msg_id(), "7F000001000051AF00000000000F475E");
    assert_eq!(first.unique_key(), Some("C000020224B7AC4C820C922A4ABC0325"));
    assert_eq!(first.born_timestamp(), 1_795_943_444_991);
    assert_eq!(first.store_timestamp(), 1_795_943_445_181);
    assert_eq!(first.body_crc(), 54_233_535);
    let last = &messages[31];
    assert_eq!(
        (last.queue_offset(), last.commit_log_offset()),
        (131, 1_312_365)
    );
    assert_eq!(last.offset_msg_id(), "7F000001000051AF000000000014066D");
    // Born timestamps are not monotonic in queue order either (queue offsets 120 and 121).
    assert_eq!(messages[20].born_timestamp(), 1_795_943_445_122);
    assert_eq!(messages[21].born_timestamp(), 1_795_943_445_104);
}

#[test]
fn zlib_body_next_to_a_plain_one() {
    let (_, messages) = pull(include_bytes!("../data/pull-found-zlib.bin"));
    assert_eq!(messages.len(), 2);

    let plain = &messages[0];
    assert_eq!(plain.topic(), "TopicTest");
    assert_eq!(
        (
            plain.queue_id(),
            plain.queue_offset(),
            plain.commit_log_offset()
        ),
        (1, 0, 0)
    );
    assert_eq!(plain.sys_flag(), 0);
    assert_eq!(plain.body(), b"hello from python");
    assert_eq!(plain.body_crc(), 1_460_751_722);
    assert_eq!(plain.tags(), Some("TagA"));
    assert_eq!(plain.keys(), Some("k1 k2"));
    assert_eq!(plain.key_list().collect::<Vec<_>>(), ["k1", "k2"]);
    assert_eq!(plain.property(property::WAIT), Some("true"));
    assert_eq!(plain.msg_id(), "7F0000010001B4AAC9D1000000000001");
    assert_eq!(plain.born_host(), addr("127.0.0.1:48168"));
    assert_eq!(plain.store_host(), addr("127.0.0.1:10911"));
    assert_eq!(plain.offset_msg_id(), "7F00000100002A9F0000000000000000");

    let zipped = &messages[1];
    assert_eq!(zipped.sys_flag(), 0x301);
    assert_eq!(zipped.stored_compression(), Some(Compression::Zlib));
    assert_eq!(zipped.stored_body_len(), 47);
    assert_eq!(zipped.body().len(), 5_500);
    assert_eq!(zipped.body(), "compressed ".repeat(500).as_bytes());
    // The CRC covers the 47 stored (compressed) bytes, and it verified during decoding.
    assert_eq!(zipped.body_crc(), 1_939_643_678);
    assert_ne!(zipped.body_crc(), masked_crc(zipped.body()));
    // It starts where the first record (252 bytes) ends.
    assert_eq!(
        (zipped.queue_offset(), zipped.commit_log_offset()),
        (1, 252)
    );
    assert_eq!(zipped.offset_msg_id(), "7F00000100002A9F00000000000000FC");
    assert_eq!(zipped.tags(), Some("TagZ"));
    assert_eq!(zipped.keys(), None);
    assert_eq!(zipped.key_list().count(), 0);
    assert_eq!(zipped.msg_id(), "C00002027E77AC4C820C921D080A0000");
    assert_eq!(zipped.born_host(), addr("127.0.0.1:48170"));
}

#[test]
fn retry_delivery_restores_its_topic() {
    let (_, mut messages) = pull(include_bytes!("../data/pull-retry-topic.bin"));
    assert_eq!(messages.len(), 1);
    let msg = &mut messages[0];
    assert_eq!(msg.topic(), "%RETRY%g-caps");
    assert_eq!(msg.reconsume_times(), 1);
    assert_eq!((msg.queue_id(), msg.queue_offset()), (0, 0));
    assert_eq!(msg.commit_log_offset(), 6_076);
    assert_eq!(msg.offset_msg_id(), "7F000001000051AF00000000000017BC");
    assert_eq!(msg.body(), b"m0");
    assert_eq!(msg.tags(), Some("a"));
    assert_eq!(msg.property(property::RETRY_TOPIC), Some("caps-test"));
    assert_eq!(
        msg.property(property::ORIGIN_MESSAGE_ID),
        Some("7F000001000051AF0000000000001234")
    );
    assert_eq!(msg.property(property::REAL_TOPIC), Some("%RETRY%g-caps"));
    assert_eq!(msg.property(property::REAL_QID), Some("0"));
    assert_eq!(msg.property(property::WAIT), Some("false"));
    assert_eq!(msg.msg_id(), "C00002020B8FAC4C820C921FFBF40014");
    // Delay level 1 is one second; the broker stored it 1.4 s after the send-back.
    assert_eq!(msg.store_timestamp() - msg.born_timestamp(), 1_425);

    let properties_before: Vec<(String, String)> = msg
        .properties()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let retry_topic = msg
        .property(property::RETRY_TOPIC)
        .expect("present")
        .to_owned();
    msg.set_topic(retry_topic);
    assert_eq!(msg.topic(), "caps-test");
    let properties_after: Vec<(String, String)> = msg
        .properties()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(properties_after, properties_before);
    assert_eq!(msg.body(), b"m0");
    assert_eq!(msg.reconsume_times(), 1);
    assert_eq!(msg.offset_msg_id(), "7F000001000051AF00000000000017BC");
}

#[test]
fn offset_moved_has_no_records() {
    let responses = frames(include_bytes!("../data/pull-offset-overflow.bin"));
    assert_eq!(responses.len(), 1);
    let response = &responses[0];
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
    assert!(response.body.is_empty());
    let batch = message::decode_messages(&response.body, &DecodeOptions::default());
    assert!(batch.messages.is_empty());
    assert_eq!(batch.error, None);
}

/// §5.7 of `remoting-protocol.md`, typed in from the document.
const WORKED_EXAMPLE: &str = concat!(
    "00000070 daa320a7 58932aac 00000001 00000000",
    "0000000000000005 0000000000001000",
    "00000000 0000019000c79c00",
    "0a000005 0000d431",
    "0000019000c79c7b",
    "c0a80001 00002a9f",
    "00000000 0000000000000000",
    "00000002 6869",
    "01 54",
    "0012 54414753 01 41 02 554e49515f4b4559 01 58 02",
);

fn worked_example() -> Bytes {
    let hex: String = WORKED_EXAMPLE.split_whitespace().collect();
    Bytes::from(hex::decode(hex).expect("the example is hex"))
}

#[test]
fn worked_example_decodes() {
    let record = worked_example();
    assert_eq!(record.len(), 112);
    let msg = message::decode_message(&record, &DecodeOptions::default().with_verify_crc(true))
        .expect("the worked example is valid");
    assert_eq!(msg.topic(), "T");
    assert_eq!(msg.body(), b"hi");
    assert_eq!(msg.body_crc(), masked_crc(b"hi"));
    assert_eq!(
        (msg.queue_id(), msg.queue_offset(), msg.commit_log_offset()),
        (1, 5, 4096)
    );
    assert_eq!(msg.sys_flag(), 0);
    assert_eq!(msg.born_host(), addr("10.0.0.5:54321"));
    assert_eq!(msg.born_timestamp(), 1_718_000_000_000);
    assert_eq!(msg.store_host(), addr("192.168.0.1:10911"));
    assert_eq!(msg.store_timestamp(), 1_718_000_000_123);
    assert_eq!(msg.tags(), Some("A"));
    assert_eq!(msg.raw_properties(), b"TAGS\x01A\x02UNIQ_KEY\x01X\x02");
    assert_eq!(msg.offset_msg_id(), "C0A8000100002A9F0000000000001000");
    assert_eq!(msg.msg_id(), "X");

    let batch = message::decode_messages(&record, &DecodeOptions::default());
    assert_eq!(batch.error, None);
    assert_eq!(batch.messages.len(), 1);
}

#[test]
fn worked_example_encodes() {
    let stored = StoredMessage {
        queue_id: 1,
        queue_offset: 5,
        commit_log_offset: 4096,
        born_timestamp: 1_718_000_000_000,
        born_host: addr("10.0.0.5:54321"),
        store_timestamp: 1_718_000_000_123,
        store_host: addr("192.168.0.1:10911"),
        body: Bytes::from_static(b"hi"),
        topic: "T".into(),
        properties: message::encode_properties([("TAGS", "A"), ("UNIQ_KEY", "X")]),
        ..StoredMessage::default()
    };
    assert_eq!(stored.encoded_len(), 112);
    let mut out = BytesMut::new();
    message::encode_stored(&stored, &mut out).expect("the example fits every field");
    assert_eq!(out.freeze(), worked_example());
}
