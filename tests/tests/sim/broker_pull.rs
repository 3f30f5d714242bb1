//! Pulling from a simulated broker: `SUCCESS` with up to `min(maxMsgNums, 32)` stored records
//! that the codec decodes and the four offset header fields; `PULL_NOT_FOUND` at the end of the
//! queue (without the suspend bit); `PULL_OFFSET_MOVED` to the max offset past the end and to
//! the min offset below the start; tag filtering by hash code (registered subscription, or the
//! request's with the subscription bit), `PULL_RETRY_IMMEDIATELY` when nothing matches;
//! `SUBSCRIPTION_NOT_EXIST` before any heartbeat; the commit-offset bit storing `commitOffset`.

use bytes::Bytes;
use proto::headers::{PullMessageResponse, pull_sys_flag};
use proto::message::{DecodeOptions, decode_messages};
use proto::{Command, MessageQueue, ResponseCode};
use rocketmq_tests::sim::harness::{Harness, heartbeat_request, pull_header, pull_request};

const C: u64 = 1;

fn setup(expression: &str) -> (Harness, MessageQueue) {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 2);
    h.connect(C, "broker-a:10911");
    h.call(C, heartbeat_request("c1", "g", &[("T", expression)], 1));
    h.take_requests(C);
    (h, MessageQueue::new("T", "broker-a", 1))
}

fn offsets(response: &Command) -> PullMessageResponse {
    response.header().expect("pull response header")
}

#[test]
fn found_returns_decodable_records() {
    let (mut h, q) = setup("*");
    for i in 0..3 {
        h.produce("T", "broker-a", 1, &format!("m{i}"), Some("TagA"));
    }
    let response = h.call(C, pull_request(&pull_header("g", &q, 0)));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    assert_eq!(response.remark.as_deref(), Some("FOUND"));
    let header = offsets(&response);
    assert_eq!(
        (
            header.next_begin_offset,
            header.min_offset,
            header.max_offset,
            header.suggest_which_broker_id
        ),
        (3, 0, 3, 0)
    );
    let batch = decode_messages(&response.body, &DecodeOptions::default());
    assert!(batch.error.is_none(), "{:?}", batch.error);
    assert_eq!(batch.messages.len(), 3);
    let stored: Vec<_> = h.cluster.messages(&q).collect();
    for (i, (message, (offset, info))) in batch.messages.iter().zip(stored).enumerate() {
        assert_eq!(message.queue_offset(), i as i64);
        assert_eq!(offset, i as i64);
        assert_eq!(message.topic(), "T");
        assert_eq!(message.queue_id(), 1);
        assert_eq!(message.body(), format!("m{i}").as_bytes());
        assert_eq!(message.tags(), Some("TagA"));
        assert_eq!(message.commit_log_offset(), info.commit_log_offset);
        assert_eq!(message.unique_key(), info.unique_key());
        assert_eq!(message.offset_msg_id(), info.offset_msg_id);
        assert_eq!(message.store_timestamp(), info.store_timestamp);
        assert_eq!(message.reconsume_times(), 0);
    }
    // Commit-log offsets grow by record length, across queues of the broker.
    let second = batch.messages[1].commit_log_offset() - batch.messages[0].commit_log_offset();
    assert_eq!(
        second,
        h.cluster.messages(&q).next().expect("m0").1.record().len() as i64
    );

    // At the end: nothing (no suspend bit, so answered at once).
    let mut at_end = pull_header("g", &q, 3);
    at_end.sys_flag = 0;
    let response = h.call(C, pull_request(&at_end));
    assert_eq!(response.response_code(), ResponseCode::PULL_NOT_FOUND);
    assert_eq!(response.remark.as_deref(), Some("OFFSET_OVERFLOW_ONE"));
    assert_eq!(offsets(&response).next_begin_offset, 3);
    assert!(response.body.is_empty());
}

#[test]
fn batches_are_capped() {
    let (mut h, q) = setup("*");
    for i in 0..40 {
        h.cluster.produce(
            h.now,
            "T",
            "broker-a",
            1,
            Bytes::from(format!("m{i}")),
            None,
            Some("k1 k2"),
        );
    }
    let mut header = pull_header("g", &q, 0);
    header.max_msg_nums = 1024;
    let response = h.call(C, pull_request(&header));
    let batch = decode_messages(&response.body, &DecodeOptions::default());
    assert_eq!(batch.messages.len(), 32);
    assert_eq!(offsets(&response).next_begin_offset, 32);
    assert_eq!(batch.messages[0].keys(), Some("k1 k2"));

    header.queue_offset = 32;
    header.max_msg_nums = 5;
    let response = h.call(C, pull_request(&header));
    let batch = decode_messages(&response.body, &DecodeOptions::default());
    assert_eq!(batch.messages.len(), 5);
    assert_eq!(offsets(&response).next_begin_offset, 37);
}

#[test]
fn offsets_outside_the_queue_move() {
    let (mut h, q) = setup("*");
    for i in 0..10 {
        h.produce("T", "broker-a", 1, &format!("m{i}"), None);
    }
    let response = h.call(C, pull_request(&pull_header("g", &q, 25)));
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
    assert_eq!(response.remark.as_deref(), Some("OFFSET_OVERFLOW_BADLY"));
    assert_eq!(offsets(&response).next_begin_offset, 10);

    h.cluster.truncate_queue(&q, 4);
    assert_eq!(h.cluster.min_offset(&q), 4);
    let response = h.call(C, pull_request(&pull_header("g", &q, 1)));
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
    assert_eq!(response.remark.as_deref(), Some("OFFSET_TOO_SMALL"));
    let header = offsets(&response);
    assert_eq!((header.next_begin_offset, header.min_offset), (4, 4));

    // An empty queue: offset 0 is "nothing yet", anything else moves to 0.
    let empty = MessageQueue::new("T", "broker-a", 0);
    let mut header = pull_header("g", &empty, 0);
    header.sys_flag = 0;
    let response = h.call(C, pull_request(&header));
    assert_eq!(response.response_code(), ResponseCode::PULL_NOT_FOUND);
    header.queue_offset = 7;
    let response = h.call(C, pull_request(&header));
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
    assert_eq!(offsets(&response).next_begin_offset, 0);
}

#[test]
fn tags_filter_by_hash_code() {
    let (mut h, q) = setup("TagA || TagC");
    h.produce("T", "broker-a", 1, "a", Some("TagA"));
    h.produce("T", "broker-a", 1, "b", Some("TagB"));
    h.produce("T", "broker-a", 1, "none", None);
    h.produce("T", "broker-a", 1, "c", Some("TagC"));
    h.produce("T", "broker-a", 1, "b2", Some("TagB"));

    let response = h.call(C, pull_request(&pull_header("g", &q, 0)));
    let batch = decode_messages(&response.body, &DecodeOptions::default());
    let bodies: Vec<_> = batch.messages.iter().map(|m| m.body_bytes()).collect();
    assert_eq!(bodies, [&b"a"[..], &b"c"[..]]);
    // Past the trailing non-matching message too.
    assert_eq!(offsets(&response).next_begin_offset, 5);

    // Nothing matching from offset 4: retry immediately, past what was scanned.
    h.produce("T", "broker-a", 1, "b3", Some("TagB"));
    let response = h.call(C, pull_request(&pull_header("g", &q, 4)));
    assert_eq!(
        response.response_code(),
        ResponseCode::PULL_RETRY_IMMEDIATELY
    );
    assert_eq!(offsets(&response).next_begin_offset, 6);

    // The request's own subscription wins with the subscription bit.
    let mut header = pull_header("g", &q, 0);
    header.sys_flag = pull_sys_flag::SUBSCRIPTION;
    header.subscription = Some("TagB".into());
    header.sub_version = 0;
    let response = h.call(C, pull_request(&header));
    let batch = decode_messages(&response.body, &DecodeOptions::default());
    let tags: Vec<_> = batch.messages.iter().map(|m| m.tags()).collect();
    assert_eq!(tags, [Some("TagB"); 3]);

    header.expression_type = Some("SQL92".into());
    header.subscription = Some("a > 1".into());
    let response = h.call(C, pull_request(&header));
    assert_eq!(response.response_code(), ResponseCode::SYSTEM_ERROR);
}

#[test]
fn subscriptions_must_be_registered_and_current() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 2);
    h.connect(C, "broker-a:10911");
    let q = MessageQueue::new("T", "broker-a", 0);
    let response = h.call(C, pull_request(&pull_header("g", &q, 0)));
    assert_eq!(
        response.response_code(),
        ResponseCode::SUBSCRIPTION_NOT_EXIST
    );

    h.call(C, heartbeat_request("c1", "g", &[("Other", "*")], 5));
    let response = h.call(C, pull_request(&pull_header("g", &q, 0)));
    assert_eq!(
        response.response_code(),
        ResponseCode::SUBSCRIPTION_NOT_EXIST
    );

    h.call(C, heartbeat_request("c1", "g", &[("T", "*")], 5));
    let mut header = pull_header("g", &q, 0);
    header.sys_flag = 0;
    header.sub_version = 6;
    let response = h.call(C, pull_request(&header));
    assert_eq!(
        response.response_code(),
        ResponseCode::SUBSCRIPTION_NOT_LATEST
    );
    header.sub_version = 5;
    let response = h.call(C, pull_request(&header));
    assert_eq!(response.response_code(), ResponseCode::PULL_NOT_FOUND);

    header.queue_id = 2;
    let response = h.call(C, pull_request(&header));
    assert_eq!(response.response_code(), ResponseCode::SYSTEM_ERROR);
    header.topic = "Missing".into();
    let response = h.call(C, pull_request(&header));
    assert_eq!(response.response_code(), ResponseCode::TOPIC_NOT_EXIST);
}

#[test]
fn commit_offset_bit_commits() {
    let (mut h, q) = setup("*");
    h.produce("T", "broker-a", 1, "m", None);
    let mut header = pull_header("g", &q, 1);
    header.sys_flag = pull_sys_flag::COMMIT_OFFSET;
    header.commit_offset = 1;
    let response = h.call(C, pull_request(&header));
    assert_eq!(response.response_code(), ResponseCode::PULL_NOT_FOUND);
    assert_eq!(h.cluster.committed_offset("g", &q), Some(1));
    assert_eq!(
        h.cluster
            .committed_offset("g", &MessageQueue::new("T", "broker-b", 1)),
        None
    );
}
