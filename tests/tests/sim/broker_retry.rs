//! Failed messages on a simulated broker (`remoting-protocol.md` §7.2): `CONSUMER_SEND_MSG_BACK`
//! loads the message by commit-log offset and re-sends it to `%RETRY%<group>` queue 0 with
//! `reconsumeTimes + 1`, `RETRY_TOPIC`, `ORIGIN_MESSAGE_ID`, `REAL_TOPIC` / `REAL_QID`, visible
//! only after its delay level (0 means `3 + reconsumeTimes`: 10 s first); once
//! `reconsumeTimes >= maxReconsumeTimes`, or with a negative delay level, it goes to
//! `%DLQ%<group>` at once; a normal send to the retry topic past the budget goes to the
//! dead-letter queue too; an unknown commit-log offset is `SYSTEM_ERROR`.

use std::time::Duration;

use proto::headers::{PullMessageResponse, SendMessageRequestV2, SendMessageResponse};
use proto::message::{DecodeOptions, Message, decode_messages, encode_properties, property};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};
use rocketmq_tests::sim::harness::{
    Harness, heartbeat_request, pull_header, pull_request, send_back_request,
};

const C: u64 = 1;

fn pull_one(h: &mut Harness, queue: &MessageQueue, offset: i64) -> Option<Message> {
    let mut header = pull_header("g", queue, offset);
    header.sys_flag = 0;
    let response = h.call(C, pull_request(&header));
    if response.response_code() != ResponseCode::SUCCESS {
        return None;
    }
    let _: PullMessageResponse = response.header().expect("header");
    let mut batch = decode_messages(&response.body, &DecodeOptions::default()).messages;
    assert_eq!(batch.len(), 1);
    batch.pop()
}

#[test]
fn send_back_retries_after_the_delay_then_dead_letters() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 1);
    h.connect(C, "broker-a:10911");
    h.call(C, heartbeat_request("c1", "g", &[("T", "*")], 1));
    let source = MessageQueue::new("T", "broker-a", 0);
    let retry = MessageQueue::new("%RETRY%g", "broker-a", 0);
    let dlq = MessageQueue::new("%DLQ%g", "broker-a", 0);
    h.produce("T", "broker-a", 0, "payload", Some("TagA"));
    let original = pull_one(&mut h, &source, 0).expect("the original");
    let unique = original.unique_key().expect("UNIQ_KEY").to_owned();

    let response = h.call(
        C,
        send_back_request("g", original.commit_log_offset(), 0, 2),
    );
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    assert_eq!(h.cluster.max_offset(&retry), 0, "delayed: level 3 = 10 s");
    assert_eq!(h.cluster.scheduled_messages("broker-a"), 1);
    h.advance(Duration::from_millis(9_999));
    assert!(pull_one(&mut h, &retry, 0).is_none());
    h.advance(Duration::from_millis(1));
    let first_retry = pull_one(&mut h, &retry, 0).expect("due after 10 s");
    assert_eq!(first_retry.topic(), "%RETRY%g");
    assert_eq!(first_retry.reconsume_times(), 1);
    assert_eq!(first_retry.body(), b"payload");
    assert_eq!(first_retry.tags(), Some("TagA"));
    assert_eq!(first_retry.unique_key(), Some(unique.as_str()));
    assert_eq!(first_retry.property(property::RETRY_TOPIC), Some("T"));
    assert_eq!(
        first_retry.property(property::ORIGIN_MESSAGE_ID),
        Some(original.offset_msg_id().as_str())
    );
    assert_eq!(first_retry.property(property::REAL_TOPIC), Some("%RETRY%g"));
    assert_eq!(first_retry.property(property::REAL_QID), Some("0"));
    assert_eq!(first_retry.property(property::DELAY), None);
    assert_eq!(first_retry.born_timestamp(), original.born_timestamp());

    // Second failure: level 3 + 1 = 30 s.
    h.call(
        C,
        send_back_request("g", first_retry.commit_log_offset(), 0, 2),
    );
    h.advance(Duration::from_secs(29));
    assert!(pull_one(&mut h, &retry, 1).is_none());
    h.advance(Duration::from_secs(1));
    let second_retry = pull_one(&mut h, &retry, 1).expect("due after 30 s");
    assert_eq!(second_retry.reconsume_times(), 2);
    assert_eq!(second_retry.property(property::RETRY_TOPIC), Some("T"));
    assert_eq!(
        second_retry.property(property::ORIGIN_MESSAGE_ID),
        Some(original.offset_msg_id().as_str()),
        "the first id is kept"
    );

    // reconsumeTimes 2 >= max 2: the dead-letter queue, at once.
    h.call(
        C,
        send_back_request("g", second_retry.commit_log_offset(), 0, 2),
    );
    assert_eq!(h.cluster.max_offset(&dlq), 1);
    let dead: Vec<_> = h.cluster.messages(&dlq).collect();
    assert_eq!(dead[0].1.reconsume_times, 3);
    assert_eq!(dead[0].1.unique_key(), Some(unique.as_str()));
    assert!(h.cluster.route("%DLQ%g").is_some());
}

#[test]
fn negative_delay_level_dead_letters_and_levels_are_explicit() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 1);
    h.connect(C, "broker-a:10911");
    h.produce("T", "broker-a", 0, "a", None);
    h.produce("T", "broker-a", 0, "b", None);
    let source = MessageQueue::new("T", "broker-a", 0);
    let offsets: Vec<i64> = h
        .cluster
        .messages(&source)
        .map(|(_, m)| m.commit_log_offset)
        .collect();

    h.call(C, send_back_request("g", offsets[0], -1, 16));
    assert_eq!(
        h.cluster
            .max_offset(&MessageQueue::new("%DLQ%g", "broker-a", 0)),
        1
    );

    // Level 1 = 1 s.
    h.call(C, send_back_request("g", offsets[1], 1, 16));
    h.advance(Duration::from_secs(1));
    let retry = MessageQueue::new("%RETRY%g", "broker-a", 0);
    assert_eq!(h.cluster.max_offset(&retry), 1);

    let response = h.call(C, send_back_request("g", 123_456, 0, 16));
    assert_eq!(response.response_code(), ResponseCode::SYSTEM_ERROR);
    assert_eq!(
        response.remark.as_deref(),
        Some("look message by offset failed, 123456")
    );
}

fn retry_send(reconsume_times: i32, max: i32) -> Command {
    let header = SendMessageRequestV2 {
        producer_group: "CLIENT_INNER_PRODUCER".into(),
        topic: "%RETRY%g".into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: 1,
        flag: 0,
        properties: Some(encode_properties([
            (property::RETRY_TOPIC, "T"),
            (property::DELAY, "3"),
        ])),
        reconsume_times: Some(reconsume_times),
        unit_mode: Some(false),
        max_reconsume_times: Some(max),
        batch: Some(false),
        broker_name: None,
    };
    Command::request(RequestCode::SEND_MESSAGE_V2, &header).with_body("again")
}

#[test]
fn normal_sends_to_the_retry_topic_respect_the_budget() {
    let mut h = Harness::new(|c| c);
    h.connect(C, "broker-b:10911");
    let retry = MessageQueue::new("%RETRY%g", "broker-b", 0);
    let dlq = MessageQueue::new("%DLQ%g", "broker-b", 0);

    let response = h.call(C, retry_send(3, 3));
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    let _: SendMessageResponse = response.header().expect("send response header");
    assert_eq!(h.cluster.max_offset(&retry), 0, "DELAY 3: 10 s later");
    h.advance(Duration::from_secs(10));
    assert_eq!(h.cluster.max_offset(&retry), 1);

    // Strictly more than the budget: dead letter, no delay.
    let response = h.call(C, retry_send(4, 3));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    assert_eq!(h.cluster.max_offset(&dlq), 1);
    let (_, dead) = h.cluster.messages(&dlq).next().expect("dead letter");
    assert_eq!(dead.reconsume_times, 4);
    assert_eq!(dead.body.as_ref(), b"again");
}
