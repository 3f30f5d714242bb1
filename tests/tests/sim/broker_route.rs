//! The simulated name server's routes: every broker that has a topic is in its route with its
//! queue counts and master address; unknown topics are `TOPIC_NOT_EXIST`; a heartbeat creates
//! the group's retry topic (1 queue) on that broker at once; a broker that is down leaves the
//! routes and refuses connections; old client versions get fastjson's route JSON.

use proto::body::{PERM_READ, PERM_WRITE, TopicRouteData};
use proto::{MessageQueue, RequestCode, ResponseCode};
use rocketmq_tests::sim::harness::{Harness, heartbeat_request, route_request};

const NS: u64 = 1;
const A: u64 = 2;

#[test]
fn route_lists_every_broker_of_the_topic() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 4);
    let ns = h.cluster.namesrv_addr().to_owned();
    h.connect(NS, &ns);

    let response = h.call(NS, route_request("T"));
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    assert!(response.is_response());
    let route = TopicRouteData::decode(&response.body).expect("standard route JSON");
    assert_eq!(route.queue_datas.len(), 2);
    for (data, name) in route.queue_datas.iter().zip(["broker-a", "broker-b"]) {
        assert_eq!(data.broker_name, name);
        assert_eq!((data.read_queue_nums, data.write_queue_nums), (4, 4));
        assert_eq!(data.perm, PERM_READ | PERM_WRITE);
    }
    assert_eq!(route.master_addr("broker-a"), Some("broker-a:10911"));
    assert_eq!(route.master_addr("broker-b"), Some("broker-b:10911"));
    assert_eq!(route.subscribe_queues("T").len(), 8);
    let text = String::from_utf8(response.body.to_vec()).expect("UTF-8");
    assert!(text.contains(r#""0":"broker-a:10911""#), "{text}");

    let missing = h.call(NS, route_request("nope"));
    assert_eq!(missing.response_code(), ResponseCode::TOPIC_NOT_EXIST);
    assert!(
        missing
            .remark
            .as_deref()
            .unwrap_or_default()
            .contains("nope")
    );
}

#[test]
fn old_clients_get_fastjson_keys() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 1);
    let ns = h.cluster.namesrv_addr().to_owned();
    h.connect(NS, &ns);
    let mut request = route_request("T");
    request.version = 317; // V4_5_4, like the Go client
    let response = h.call(NS, request);
    let text = String::from_utf8(response.body.to_vec()).expect("UTF-8");
    assert!(text.contains(r#"{0:"broker-a:10911"}"#), "{text}");
    let route = TopicRouteData::decode(&response.body).expect("the codec reads fastjson too");
    assert_eq!(route.master_addr("broker-a"), Some("broker-a:10911"));
}

#[test]
fn heartbeat_creates_the_retry_topic_on_that_broker() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 2);
    let ns = h.cluster.namesrv_addr().to_owned();
    h.connect(NS, &ns);
    let retry = "%RETRY%g";
    assert_eq!(
        h.call(NS, route_request(retry)).response_code(),
        ResponseCode::TOPIC_NOT_EXIST
    );

    h.connect(A, "broker-a:10911");
    let response = h.call(A, heartbeat_request("c1", "g", &[("T", "*")], 1));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);

    let response = h.call(NS, route_request(retry));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let route = TopicRouteData::decode(&response.body).expect("route");
    assert_eq!(
        route.subscribe_queues(retry),
        vec![MessageQueue::new(retry, "broker-a", 0)]
    );
}

#[test]
fn a_broker_that_is_down_leaves_routes_and_refuses_connections() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 2);
    h.connect(A, "broker-a:10911");
    h.cluster.set_broker_down("broker-a", true);
    assert_eq!(
        h.take_closed(),
        Vec::<u64>::new(),
        "collected only on the next step"
    );
    h.collect();
    assert_eq!(h.take_closed(), vec![A]);
    assert!(!h.cluster.connect(3, "broker-a:10911"));
    assert!(!h.cluster.connect(3, "nowhere:1"));

    let route = h.cluster.route("T").expect("broker-b still serves T");
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].broker_name, "broker-b");

    h.cluster.set_broker_down("broker-a", false);
    assert!(h.cluster.connect(3, "broker-a:10911"));
    assert_eq!(h.cluster.route("T").expect("route").queue_datas.len(), 2);
}

#[test]
fn name_server_refuses_broker_requests() {
    let mut h = Harness::new(|c| c);
    let ns = h.cluster.namesrv_addr().to_owned();
    h.connect(NS, &ns);
    let response = h.call(NS, heartbeat_request("c1", "g", &[], 1));
    assert_eq!(
        response.response_code(),
        ResponseCode::REQUEST_CODE_NOT_SUPPORTED
    );
    assert_eq!(
        response.remark.as_deref(),
        Some(" request type 34 not supported")
    );
    let cluster = h.call(
        NS,
        proto::Command::request_with_fields(
            RequestCode::GET_BROKER_CLUSTER_INFO,
            proto::ExtFields::new(),
        ),
    );
    assert_eq!(cluster.response_code(), ResponseCode::SUCCESS);
    let info: serde_json::Value = serde_json::from_slice(&cluster.body).expect("JSON");
    assert_eq!(
        info["brokerAddrTable"]["broker-b"]["brokerAddrs"]["0"],
        "broker-b:10911"
    );
}
