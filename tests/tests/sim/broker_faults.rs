//! Injected faults on a simulated cluster: `SystemBusy` answers the next requests to a broker
//! `SYSTEM_BUSY` without processing them (oneway ones are dropped); `OffsetMoved` makes the next
//! pull of one queue answer `PULL_OFFSET_MOVED` with the given offset (also when it wakes a held
//! pull); `DropResponses` swallows responses anywhere; `RespondWith` answers one request code
//! with a chosen code.

use std::time::Duration;

use proto::headers::PullMessageResponse;
use proto::{MessageQueue, RequestCode, ResponseCode};
use rocketmq_tests::sim::Fault;
use rocketmq_tests::sim::harness::{
    Harness, heartbeat_request, pull_header, pull_request, query_offset_request, route_request,
    update_offset_request,
};

const NS: u64 = 1;
const C: u64 = 2;

fn setup() -> (Harness, MessageQueue) {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 1);
    let ns = h.cluster.namesrv_addr().to_owned();
    h.connect(NS, &ns);
    h.connect(C, "broker-a:10911");
    h.call(C, heartbeat_request("c1", "g", &[("T", "*")], 1));
    h.take_requests(C);
    (h, MessageQueue::new("T", "broker-a", 0))
}

#[test]
fn system_busy_rejects_without_processing() {
    let (mut h, q) = setup();
    h.cluster.inject(Fault::SystemBusy {
        broker: "broker-a".into(),
        count: 2,
    });
    let response = h.call(C, update_offset_request("g", &q, 5));
    assert_eq!(response.response_code(), ResponseCode::SYSTEM_BUSY);
    assert!(
        response
            .remark
            .as_deref()
            .unwrap_or_default()
            .starts_with("[REJECTREQUEST]")
    );
    h.send(C, update_offset_request("g", &q, 6).oneway());
    assert!(h.take_all(C).is_empty());
    assert_eq!(
        h.cluster.committed_offset("g", &q),
        None,
        "neither was applied"
    );
    let response = h.call(C, update_offset_request("g", &q, 7));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    assert_eq!(h.cluster.committed_offset("g", &q), Some(7));
}

#[test]
fn offset_moved_hits_the_next_pull_of_the_queue() {
    let (mut h, q) = setup();
    for i in 0..3 {
        h.produce("T", "broker-a", 0, &format!("m{i}"), None);
    }
    h.cluster.inject(Fault::OffsetMoved {
        broker: "broker-a".into(),
        topic: "T".into(),
        queue_id: 0,
        next_begin_offset: 2,
    });
    let response = h.call(C, pull_request(&pull_header("g", &q, 0)));
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
    let header: PullMessageResponse = response.header().expect("header");
    assert_eq!((header.next_begin_offset, header.max_offset), (2, 3));
    let response = h.call(C, pull_request(&pull_header("g", &q, 0)));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS, "one-shot");

    // A held pull's re-run counts as its next pull.
    let opaque = h.send(C, pull_request(&pull_header("g", &q, 3)));
    h.cluster.inject(Fault::OffsetMoved {
        broker: "broker-a".into(),
        topic: "T".into(),
        queue_id: 0,
        next_begin_offset: 1,
    });
    h.advance(Duration::from_secs(20));
    let response = h.take_response(C, opaque).expect("answered on timeout");
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
}

#[test]
fn dropped_responses_never_arrive() {
    let (mut h, q) = setup();
    h.cluster.inject(Fault::DropResponses { count: 2 });
    let first = h.send(NS, route_request("T"));
    let second = h.send(C, update_offset_request("g", &q, 9));
    assert!(h.take_response(NS, first).is_none());
    assert!(h.take_response(C, second).is_none());
    assert_eq!(h.cluster.dropped_responses(), 2);
    assert_eq!(
        h.cluster.committed_offset("g", &q),
        Some(9),
        "processed all the same"
    );
    let response = h.call(C, query_offset_request("g", &q));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
}

#[test]
fn respond_with_cans_one_request_code() {
    let (mut h, q) = setup();
    h.cluster.inject(Fault::RespondWith {
        broker: "broker-a".into(),
        request: RequestCode::PULL_MESSAGE,
        response: ResponseCode::FLOW_CONTROL,
        count: 1,
    });
    let response = h.call(C, query_offset_request("g", &q));
    assert_eq!(
        response.response_code(),
        ResponseCode::QUERY_NOT_FOUND,
        "other codes pass"
    );
    let response = h.call(C, pull_request(&pull_header("g", &q, 0)));
    assert_eq!(response.response_code(), ResponseCode::FLOW_CONTROL);
    let opaque = h.send(C, pull_request(&pull_header("g", &q, 0)));
    assert!(h.take_response(C, opaque).is_none(), "held as usual again");
}
