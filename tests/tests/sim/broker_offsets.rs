//! Offsets on a simulated broker: `UPDATE_CONSUMER_OFFSET` (plain or oneway, which gets no
//! answer) then `QUERY_CONSUMER_OFFSET` reads it back; nothing committed is `QUERY_NOT_FOUND`
//! unless the young-queue flag mimics the broker's "offset 0"; `GET_MAX_OFFSET`,
//! `GET_MIN_OFFSET` and `SEARCH_OFFSET_BY_TIMESTAMP` (first offset stored at or after the time,
//! else the max) over the store times of the virtual clock.

use std::time::Duration;

use proto::headers::{
    BoundaryType, GetMaxOffsetRequest, GetMaxOffsetResponse, GetMinOffsetRequest,
    GetMinOffsetResponse, QueryConsumerOffsetResponse, SearchOffsetRequest, SearchOffsetResponse,
};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};
use rocketmq_tests::sim::harness::{Harness, query_offset_request, update_offset_request};

const C: u64 = 1;

#[test]
fn committed_offsets_round_trip() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 2);
    h.connect(C, "broker-a:10911");
    let q = MessageQueue::new("T", "broker-a", 1);

    let response = h.call(C, query_offset_request("g", &q));
    assert_eq!(response.response_code(), ResponseCode::QUERY_NOT_FOUND);

    let response = h.call(C, update_offset_request("g", &q, 42));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let response = h.call(C, query_offset_request("g", &q));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let header: QueryConsumerOffsetResponse = response.header().expect("offset header");
    assert_eq!(header.offset, 42);
    assert_eq!(h.cluster.committed_offset("g", &q), Some(42));
    assert_eq!(h.cluster.committed_offset("other", &q), None);

    // Oneway: applied, never answered.
    let opaque = h.send(C, update_offset_request("g", &q, 43).oneway());
    assert!(h.take_all(C).is_empty(), "no answer to opaque {opaque}");
    assert_eq!(h.cluster.committed_offset("g", &q), Some(43));
}

#[test]
fn young_queue_flag_answers_zero() {
    let mut h = Harness::new(|mut c| {
        c.young_queue_offset_zero = true;
        c
    });
    h.cluster.create_topic("T", 1);
    h.connect(C, "broker-a:10911");
    let q = MessageQueue::new("T", "broker-a", 0);
    let response = h.call(C, query_offset_request("g", &q));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let header: QueryConsumerOffsetResponse = response.header().expect("offset header");
    assert_eq!(header.offset, 0);

    h.produce("T", "broker-a", 0, "m", None);
    h.cluster.truncate_queue(&q, 1);
    let response = h.call(C, query_offset_request("g", &q));
    assert_eq!(response.response_code(), ResponseCode::QUERY_NOT_FOUND);
}

fn offset_of(response: &Command) -> i64 {
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    response
        .ext_fields
        .get("offset")
        .and_then(|o| o.parse().ok())
        .expect("offset field")
}

#[test]
fn queue_offsets_and_search_by_time() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 1);
    h.connect(C, "broker-a:10911");
    let q = MessageQueue::new("T", "broker-a", 0);
    let t0 = h.cluster.wall_millis(h.now);
    for i in 0..5 {
        h.produce("T", "broker-a", 0, &format!("m{i}"), None);
        h.advance(Duration::from_secs(10));
    }
    let max = GetMaxOffsetRequest {
        topic: "T".into(),
        queue_id: 0,
        committed: Some(true),
    };
    let response = h.call(C, Command::request(RequestCode::GET_MAX_OFFSET, &max));
    let _: GetMaxOffsetResponse = response.header().expect("max header");
    assert_eq!(offset_of(&response), 5);
    assert_eq!(h.cluster.max_offset(&q), 5);

    h.cluster.truncate_queue(&q, 2);
    let min = GetMinOffsetRequest {
        topic: "T".into(),
        queue_id: 0,
    };
    let response = h.call(C, Command::request(RequestCode::GET_MIN_OFFSET, &min));
    let _: GetMinOffsetResponse = response.header().expect("min header");
    assert_eq!(offset_of(&response), 2);

    let search = |timestamp: i64, boundary: Option<BoundaryType>| SearchOffsetRequest {
        topic: "T".into(),
        queue_id: 0,
        timestamp,
        boundary_type: boundary,
    };
    let mut ask = |request: SearchOffsetRequest| {
        let response = h.call(
            C,
            Command::request(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &request),
        );
        let _: SearchOffsetResponse = response.header().expect("search header");
        offset_of(&response)
    };
    // m3 was stored at t0 + 30 s.
    assert_eq!(ask(search(t0 + 25_000, None)), 3);
    assert_eq!(ask(search(t0 + 30_000, None)), 3);
    assert_eq!(ask(search(t0 + 30_000, Some(BoundaryType::Upper))), 3);
    assert_eq!(ask(search(t0 + 35_000, Some(BoundaryType::Upper))), 3);
    assert_eq!(ask(search(t0 + 99_000, None)), 5, "later than all: the max");
    assert_eq!(ask(search(t0, None)), 2, "earlier than all live: the min");

    let unknown = GetMaxOffsetRequest {
        topic: "Nope".into(),
        queue_id: 3,
        committed: None,
    };
    let response = h.call(C, Command::request(RequestCode::GET_MAX_OFFSET, &unknown));
    assert_eq!(offset_of(&response), 0);
}
