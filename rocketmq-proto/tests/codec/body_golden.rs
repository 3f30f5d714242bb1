//! JSON bodies captured from the real Rust broker and name server (rocketmq-broker 1.0.0) decode
//! to the values read off the wire: a standard-JSON route with explicit nulls and the Rust-only
//! `topicQueueMappingInfo` member, a route miss without a body, a consumer list, a lock grant,
//! and a heartbeat response that carries no body at all.

use bytes::BytesMut;
use rocketmq_proto::body::{
    BodyError, ConsumerListBody, LockBatchResponseBody, PERM_READ, PERM_WRITE, TopicRouteData,
};
use rocketmq_proto::{Command, FrameDecoder, MessageQueue, ResponseCode};

/// The single frame of a capture.
fn frame(capture: &[u8]) -> Command {
    let mut buf = BytesMut::from(capture);
    let command = FrameDecoder::default()
        .decode(&mut buf)
        .expect("captured frames are valid")
        .expect("the capture holds a whole frame");
    assert!(buf.is_empty(), "the capture holds exactly one frame");
    command
}

#[test]
fn route_for_an_eight_queue_topic() {
    let response = frame(include_bytes!("../data/route-standard-json.bin"));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let route = TopicRouteData::decode(&response.body).expect("the captured route decodes");

    assert_eq!(route.order_topic_conf, None, "explicit null");
    assert!(!route.is_order_topic());
    assert!(route.filter_server_table.is_empty());
    assert!(
        !route.has_static_queue_mapping(),
        "topicQueueMappingInfo is null"
    );

    assert_eq!(route.queue_datas.len(), 1);
    let queues = &route.queue_datas[0];
    assert_eq!(queues.broker_name, "broker-a");
    assert_eq!(queues.read_queue_nums, 8);
    assert_eq!(queues.write_queue_nums, 8);
    assert_eq!(queues.perm, 6);
    assert_eq!(queues.perm, PERM_READ | PERM_WRITE);
    assert_eq!(queues.topic_sys_flag, 0);

    assert_eq!(route.broker_datas.len(), 1);
    let broker = &route.broker_datas[0];
    assert_eq!(broker.cluster, "DefaultCluster");
    assert_eq!(broker.broker_name, "broker-a");
    assert_eq!(broker.broker_addrs.len(), 1);
    assert_eq!(broker.master_addr(), Some("127.0.0.1:20911"));
    assert_eq!(broker.zone_name, None, "explicit null");
    assert!(!broker.enable_acting_master);
    assert_eq!(route.master_addr("broker-a"), Some("127.0.0.1:20911"));

    let expected: Vec<MessageQueue> = (0..8)
        .map(|id| MessageQueue::new("perf", "broker-a", id))
        .collect();
    assert_eq!(route.subscribe_queues("perf"), expected);
    assert_eq!(route.publish_queues("perf"), expected);

    // What we write back decodes to the same route, in both encodings.
    assert_eq!(TopicRouteData::decode(&route.encode()).unwrap(), route);
    assert_eq!(
        TopicRouteData::decode(&route.encode_fastjson()).unwrap(),
        route
    );
}

#[test]
fn route_miss_has_no_body() {
    let response = frame(include_bytes!("../data/route-not-found.bin"));
    assert_eq!(response.response_code(), ResponseCode::TOPIC_NOT_EXIST);
    assert_eq!(
        response.remark.as_deref(),
        Some("Topic route was not found")
    );
    assert!(response.body.is_empty());
    assert!(matches!(
        TopicRouteData::decode(&response.body),
        Err(BodyError::Empty {
            body: "TopicRouteData"
        })
    ));
}

#[test]
fn consumer_list() {
    let response = frame(include_bytes!("../data/consumer-list.bin"));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let list = ConsumerListBody::decode(&response.body).unwrap();
    assert_eq!(list.consumer_id_list, vec!["127.0.0.1@capture".to_owned()]);
    assert_eq!(
        list.encode(),
        response.body.as_ref(),
        "byte-identical re-encoding"
    );
}

#[test]
fn lock_grant() {
    let response = frame(include_bytes!("../data/lock-batch-response.bin"));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let granted = LockBatchResponseBody::decode(&response.body).unwrap();
    // The Rust broker writes the queue's members as topic, brokerName, queueId; order is free.
    assert_eq!(
        granted.lock_ok_mq_set.into_iter().collect::<Vec<_>>(),
        vec![MessageQueue::new("perf5", "broker-a", 0)]
    );
}

#[test]
fn heartbeat_response_has_no_body() {
    let response = frame(include_bytes!("../data/heartbeat-response.bin"));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    assert!(response.body.is_empty());
    assert_eq!(
        response.ext_fields.get("IS_SUPPORT_HEART_BEAT_V2"),
        Some("true")
    );
}
