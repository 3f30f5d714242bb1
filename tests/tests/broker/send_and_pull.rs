//! Messages written with our send encodings come back from the real broker's pull decoded by
//! our stored-message decoder: plain and zlib/LZ4/ZSTD-compressed single sends (JSON headers)
//! and a batch, pulled with binary headers, with bodies, tags, keys, queue offsets, CRCs and
//! offset message ids intact.

use bytes::Bytes;
use proto::headers::{PullMessageRequest, PullMessageResponse, SendMessageResponse, pull_sys_flag};
use proto::message::{
    Compression, DecodeOptions, OutgoingMessage, compress_body, decode_messages, encode_batch,
};
use proto::{Command, HeaderEncoding, RequestCode, ResponseCode};
use rmq_cli::blocking::BlockingClient;
use rocketmq_tests::{
    TIMEOUT, any_broker, create_topic, heartbeat, master_of, namesrv, send_header, unique,
};

struct Sent {
    body: Bytes,
    tags: String,
    keys: String,
    offset_msg_id: Option<String>,
}

#[test]
fn sent_messages_pull_back_intact() {
    let ns = namesrv();
    let seed_broker = any_broker(&ns);
    let topic = unique("codec-send-pull");
    let route = create_topic(&ns, &seed_broker, &topic, 1);
    let broker_name = route.queue_datas[0].broker_name.clone();
    let broker = master_of(&route, &broker_name);

    let mut client = BlockingClient::connect(&broker, TIMEOUT).expect("connect to the broker");
    let mut sent = Vec::new();
    let compressible: Bytes = "compressible payload ".repeat(400).into_bytes().into();
    let singles = [
        (None, Bytes::from_static(b"plain body")),
        (Some(Compression::Zlib), compressible.clone()),
        (Some(Compression::Lz4), compressible.clone()),
        (Some(Compression::Zstd), compressible.clone()),
    ];
    for (i, (compression, body)) in singles.into_iter().enumerate() {
        let mut message = OutgoingMessage::new(topic.clone(), body.clone());
        message.set_tags(format!("tag{i}"));
        message.set_keys(format!("key-{i} other-{i}"));
        let (wire_body, sys_flag) = match compression {
            Some(c) => (compress_body(&body, c, 5).expect("compress"), c.sys_flag()),
            None => (body.clone(), 0),
        };
        let header = send_header(&topic, 0, sys_flag, message.encoded_properties());
        let request = Command::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(wire_body);
        let response = client.call(request, TIMEOUT).expect("send");
        assert_eq!(
            response.response_code(),
            ResponseCode::SUCCESS,
            "send {i}: {response:?}"
        );
        let stored: SendMessageResponse = response.header().expect("send response header");
        sent.push(Sent {
            body,
            tags: format!("tag{i}"),
            keys: format!("key-{i} other-{i}"),
            offset_msg_id: Some(stored.msg_id),
        });
    }

    let mut batch = Vec::new();
    for i in 0..3 {
        let body = Bytes::from(format!("batch body {i}"));
        let mut message = OutgoingMessage::new(topic.clone(), body.clone());
        message.set_tags("batch");
        message.set_keys(format!("batch-{i}"));
        message.set_property("UNIQ_KEY", format!("{topic}-batch-{i}"));
        batch.push(message);
        sent.push(Sent {
            body,
            tags: "batch".into(),
            keys: format!("batch-{i}"),
            offset_msg_id: None,
        });
    }
    let mut header = send_header(&topic, 0, 0, String::new());
    header.batch = Some(true);
    header.properties = None;
    let request = Command::request(RequestCode::SEND_BATCH_MESSAGE, &header)
        .with_body(encode_batch(&batch).expect("encode batch"));
    let response = client.call(request, TIMEOUT).expect("send batch");
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "batch: {response:?}"
    );

    let group = unique("codec-pull-group");
    heartbeat(&mut client, "127.0.0.1@codec-test", &group, &topic, "*");

    // Pull with binary headers: the broker must accept either header encoding.
    client.set_encoding(HeaderEncoding::Binary);
    let mut messages = Vec::new();
    let mut offset = 0;
    for _ in 0..20 {
        if messages.len() >= sent.len() {
            break;
        }
        let pull = PullMessageRequest {
            consumer_group: group.clone(),
            topic: topic.clone(),
            queue_id: 0,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: pull_sys_flag::SUSPEND,
            commit_offset: 0,
            suspend_timeout_millis: 1000,
            subscription: None,
            sub_version: 0,
            expression_type: None,
            max_msg_bytes: None,
            broker_name: None,
        };
        let response = client
            .call(Command::request(RequestCode::PULL_MESSAGE, &pull), TIMEOUT)
            .expect("pull");
        let header: PullMessageResponse = response.header().expect("pull response header");
        if response.response_code() == ResponseCode::SUCCESS {
            let batch = decode_messages(
                &response.body,
                &DecodeOptions::default().with_verify_crc(true),
            );
            assert!(
                batch.error.is_none(),
                "pulled records decode: {:?}",
                batch.error
            );
            messages.extend(batch.messages);
        } else {
            assert_eq!(
                response.response_code(),
                ResponseCode::PULL_NOT_FOUND,
                "{response:?}"
            );
        }
        offset = header.next_begin_offset;
    }

    assert_eq!(messages.len(), sent.len(), "every sent message pulled back");
    for (i, (msg, expected)) in messages.iter().zip(&sent).enumerate() {
        assert_eq!(msg.topic(), topic);
        assert_eq!(msg.queue_id(), 0);
        assert_eq!(msg.queue_offset(), i as i64, "consecutive queue offsets");
        assert_eq!(
            msg.body(),
            &expected.body,
            "message {i} body (decompressed)"
        );
        assert_eq!(msg.tags(), Some(expected.tags.as_str()));
        assert_eq!(msg.keys(), Some(expected.keys.as_str()));
        if let Some(id) = &expected.offset_msg_id {
            assert_eq!(
                &msg.offset_msg_id(),
                id,
                "offset msg id = store host + commit-log offset"
            );
        }
        assert!(!msg.msg_id().is_empty());
    }
    assert!(
        messages[1].stored_body_len() < compressible.len(),
        "stored compressed"
    );
}
