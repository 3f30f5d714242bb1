//! Long polling on a simulated broker: a pull with the suspend bit that finds nothing gets no
//! response; it is answered (same opaque) as soon as a matching message arrives, or on the
//! first 5 s check after its `suspendTimeoutMillis` with `PULL_NOT_FOUND`; a non-matching
//! message does not wake it at once but the next check re-runs it; closing the connection or
//! restarting the broker drops it; the commit-offset bit applies when it is parked.

use std::time::Duration;

use proto::headers::{PullMessageResponse, pull_sys_flag};
use proto::message::{DecodeOptions, decode_messages};
use proto::{MessageQueue, ResponseCode};
use rocketmq_tests::sim::harness::{Harness, heartbeat_request, pull_header, pull_request};

const C: u64 = 1;

fn setup(expression: &str) -> (Harness, MessageQueue) {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 1);
    h.connect(C, "broker-b:10911");
    h.call(C, heartbeat_request("c1", "g", &[("T", expression)], 1));
    h.take_requests(C);
    (h, MessageQueue::new("T", "broker-b", 0))
}

#[test]
fn held_pull_is_answered_by_a_new_message() {
    let (mut h, q) = setup("*");
    let opaque = h.send(C, pull_request(&pull_header("g", &q, 0)));
    assert!(h.take_response(C, opaque).is_none(), "held, not answered");
    assert_eq!(h.cluster.held_pulls("broker-b"), 1);
    assert!(
        h.cluster.poll_timeout().is_some(),
        "the hold check is armed"
    );

    h.advance(Duration::from_secs(3));
    assert!(h.take_response(C, opaque).is_none());
    h.produce("T", "broker-b", 0, "late", None);
    let response = h.take_response(C, opaque).expect("woken by the message");
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let batch = decode_messages(&response.body, &DecodeOptions::default());
    assert_eq!(batch.messages.len(), 1);
    assert_eq!(batch.messages[0].body(), b"late");
    let header: PullMessageResponse = response.header().expect("header");
    assert_eq!(header.next_begin_offset, 1);
    assert_eq!(h.cluster.held_pulls("broker-b"), 0);
    assert_eq!(
        h.cluster.poll_timeout(),
        Some(h.epoch + Duration::from_secs(120)),
        "no hold check left, only the member's heartbeat deadline"
    );
}

#[test]
fn held_pull_times_out_on_a_check() {
    let (mut h, q) = setup("*");
    let opaque = h.send(C, pull_request(&pull_header("g", &q, 0)));
    h.advance(Duration::from_millis(14_999));
    assert!(h.take_response(C, opaque).is_none());
    h.advance(Duration::from_secs(6));
    let response = h
        .take_response(C, opaque)
        .expect("timed out within one check");
    assert_eq!(response.response_code(), ResponseCode::PULL_NOT_FOUND);
    let header: PullMessageResponse = response.header().expect("header");
    assert_eq!(header.next_begin_offset, 0);
    // The check runs every 5 s from the hold: the answer came at 15 s.
    assert_eq!(h.cluster.held_pulls("broker-b"), 0);
}

#[test]
fn a_message_that_does_not_match_waits_for_the_check() {
    let (mut h, q) = setup("TagA");
    let opaque = h.send(C, pull_request(&pull_header("g", &q, 0)));
    h.produce("T", "broker-b", 0, "other", Some("TagB"));
    assert!(
        h.take_response(C, opaque).is_none(),
        "TagB does not wake a TagA pull"
    );
    h.advance(Duration::from_secs(5));
    let response = h.take_response(C, opaque).expect("the check re-runs it");
    assert_eq!(
        response.response_code(),
        ResponseCode::PULL_RETRY_IMMEDIATELY
    );
    let header: PullMessageResponse = response.header().expect("header");
    assert_eq!(header.next_begin_offset, 1);
}

#[test]
fn closing_or_restarting_drops_held_pulls() {
    let (mut h, q) = setup("*");
    let mut header = pull_header("g", &q, 0);
    header.sys_flag |= pull_sys_flag::COMMIT_OFFSET;
    header.commit_offset = 0;
    h.send(C, pull_request(&header));
    assert_eq!(h.cluster.committed_offset("g", &q), Some(0));
    h.cluster.disconnect(h.now, C);
    assert_eq!(h.cluster.held_pulls("broker-b"), 0);

    h.connect(C, "broker-b:10911");
    h.call(C, heartbeat_request("c1", "g", &[("T", "*")], 1));
    let opaque = h.send(C, pull_request(&pull_header("g", &q, 0)));
    h.cluster.restart_broker(h.now, "broker-b");
    h.collect();
    assert_eq!(h.take_closed(), vec![C]);
    assert_eq!(h.cluster.held_pulls("broker-b"), 0);
    h.produce("T", "broker-b", 0, "after", None);
    assert!(h.take_response(C, opaque).is_none());
    assert_eq!(
        h.cluster.committed_offset("g", &q),
        Some(0),
        "offsets survive"
    );
}
