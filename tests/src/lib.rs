//! Shared helpers for the scenario tests: finding the local cluster, creating topics, and
//! one-shot requests. Tests that need the real broker call [`namesrv`], which fails the test
//! with instructions when the cluster is not running; nothing here skips.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use proto::body::TopicRouteData;
use proto::headers::{CreateTopicRequest, GetRouteInfoRequest};
use proto::{Command, RequestCode, ResponseCode};
use rmq_cli::blocking::BlockingClient;
pub mod fault_proxy;
pub mod hostile;
pub mod sim;

/// Timeout of one request in these tests.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The local name server's address, from `NAMESRV_ADDR`. Panics (failing the test) with the
/// command that starts the cluster when the variable is unset or nothing answers there.
pub fn namesrv() -> String {
    let addr = std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| {
        panic!(
            "NAMESRV_ADDR is not set: this test needs the real local cluster. \
             Start it with `scripts/broker start` and export NAMESRV_ADDR=127.0.0.1:9876 \
             (scripts/test does both)"
        )
    });
    if let Err(e) = BlockingClient::connect(&addr, Duration::from_secs(3)) {
        panic!(
            "no name server answers at NAMESRV_ADDR={addr} ({e}); start it with `scripts/broker start`"
        );
    }
    addr
}

/// The broker implementation of the local cluster, for the few expectations where brokers
/// differ (each difference is in the README's compatibility matrix, with the test that shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrokerImpl {
    /// Apache RocketMQ 4.9 (Java), the reference.
    Java4,
    /// Apache RocketMQ 5.x (Java).
    Java5,
    /// `rocketmq-broker-rust`.
    Rust,
}

impl BrokerImpl {
    /// Whether this is one of Apache's Java brokers.
    pub fn is_java(self) -> bool {
        matches!(self, Self::Java4 | Self::Java5)
    }
}

/// The implementation the running local cluster was started with (`scripts/broker impl`).
/// Panics when no cluster was started, like [`namesrv`].
pub fn broker_impl() -> BrokerImpl {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/broker");
    let output = std::process::Command::new(script)
        .arg("impl")
        .output()
        .unwrap_or_else(|e| panic!("run {script} impl: {e}"));
    match String::from_utf8_lossy(&output.stdout).trim() {
        "java4" => BrokerImpl::Java4,
        "java5" => BrokerImpl::Java5,
        "rust" => BrokerImpl::Rust,
        other => panic!(
            "`scripts/broker impl` printed {other:?} ({}): start the cluster with `scripts/broker start`",
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    }
}

/// A name no earlier run used: `prefix` plus the wall-clock time in microseconds.
pub fn unique(prefix: &str) -> String {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default();
    format!("{prefix}-{micros}")
}

/// Sends one request and returns the response, panicking on transport failure.
pub fn call(addr: &str, request: Command) -> Command {
    let mut client =
        BlockingClient::connect(addr, TIMEOUT).unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    client
        .call(request, TIMEOUT)
        .unwrap_or_else(|e| panic!("request to {addr}: {e}"))
}

/// The route of `topic`, or `None` while the name server does not know it.
pub fn route(namesrv: &str, topic: &str) -> Option<TopicRouteData> {
    try_route(namesrv, topic).unwrap_or_else(|e| panic!("{e}"))
}

/// The route of `topic` (`None` while the name server does not know it), or why the name
/// server could not be asked: for watchers that must outlive a failed request.
pub fn try_route(namesrv: &str, topic: &str) -> Result<Option<TopicRouteData>, String> {
    let header = GetRouteInfoRequest {
        topic: topic.to_owned(),
        accept_standard_json_only: Some(true),
    };
    let mut client = BlockingClient::connect(namesrv, TIMEOUT)
        .map_err(|e| format!("connect to {namesrv}: {e}"))?;
    let response = client
        .call(
            Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header),
            TIMEOUT,
        )
        .map_err(|e| format!("request to {namesrv}: {e}"))?;
    if response.response_code() != ResponseCode::SUCCESS {
        return Ok(None);
    }
    TopicRouteData::decode(&response.body)
        .map(Some)
        .map_err(|e| format!("the name server's route data does not decode: {e}"))
}

/// The master address of broker `name`, from the route of any topic it serves.
pub fn master_of(route: &TopicRouteData, name: &str) -> String {
    route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == name)
        .and_then(|b| b.broker_addrs.get(&0).cloned())
        .unwrap_or_else(|| panic!("route has no master for {name}: {route:?}"))
}

/// Creates `topic` with `queues` queues on the broker at `broker_addr`, then waits (up to 30 s)
/// until the name server routes it.
pub fn create_topic(namesrv: &str, broker_addr: &str, topic: &str, queues: i32) -> TopicRouteData {
    let header = CreateTopicRequest::new(topic, queues);
    let response = call(
        broker_addr,
        Command::request(RequestCode::UPDATE_AND_CREATE_TOPIC, &header),
    );
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "create topic: {response:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(route) = route(namesrv, topic) {
            return route;
        }
        assert!(
            Instant::now() < deadline,
            "topic {topic} never appeared in the name server's routes"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The address of the first broker the name server knows (from `GET_BROKER_CLUSTER_INFO`).
pub fn any_broker(namesrv: &str) -> String {
    let info =
        rmq_cli::admin::cluster_info(&rmq_cli::admin::Cluster::new(namesrv)).expect("cluster info");
    let table = info
        .get("brokerAddrTable")
        .and_then(|t| t.as_object())
        .unwrap_or_else(|| panic!("no brokerAddrTable in {info}"));
    table
        .values()
        .filter_map(|broker| broker.get("brokerAddrs")?.get("0")?.as_str())
        .min()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no broker master registered: {info}"))
}

/// The send header for one message of `topic` to queue `queue_id`.
pub fn send_header(
    topic: &str,
    queue_id: i32,
    sys_flag: i32,
    properties: String,
) -> proto::headers::SendMessageRequestV2 {
    proto::headers::SendMessageRequestV2 {
        producer_group: "codec-test-producer".to_owned(),
        topic: topic.to_owned(),
        default_topic: "TBW102".to_owned(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag,
        born_timestamp: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default(),
        flag: 0,
        properties: Some(properties),
        ..Default::default()
    }
}

/// Registers `client_id` as a push consumer of `group` subscribed to `topic` with `expression`
/// over `client`'s connection. The broker keeps the member only while that connection lives, and
/// refuses pulls for a group it has no heartbeat for (SUBSCRIPTION_NOT_EXIST).
pub fn heartbeat(
    client: &mut BlockingClient,
    client_id: &str,
    group: &str,
    topic: &str,
    expression: &str,
) {
    use proto::body::{ConsumerData, HeartbeatData, SubscriptionData};
    let data = HeartbeatData {
        client_id: client_id.to_owned(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.to_owned(),
            subscription_data_set: vec![SubscriptionData::new(topic, expression, 1)],
            ..Default::default()
        }],
        ..Default::default()
    };
    let request = Command::request(
        RequestCode::HEART_BEAT,
        &proto::headers::HeartbeatRequest {},
    )
    .with_body(data.encode());
    let response = client.call(request, TIMEOUT).expect("heartbeat");
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "heartbeat: {response:?}"
    );
}
pub mod scenario;
pub mod world;

/// The broadcasting offset file of `group` under `dir`, where a consumer without an instance
/// name keeps it: `<dir>/<ip>@DEFAULT/<group>/offsets.json`, with the one client directory
/// there (the ip is the consumer's, found by listing). Panics (failing the test) when there is
/// not exactly one.
pub fn broadcast_offset_file(dir: &std::path::Path, group: &str) -> std::path::PathBuf {
    let clients: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list the offset directory {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.ends_with("@DEFAULT"))
        })
        .collect();
    match clients.as_slice() {
        [client] => client.join(group).join("offsets.json"),
        _ => panic!(
            "expected one <ip>@DEFAULT directory under {}, found {clients:?}",
            dir.display()
        ),
    }
}
