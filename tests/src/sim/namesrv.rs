//! [`NameServer`]: the simulated name server. It has no state of its own: routes are computed
//! from the brokers' topic tables at each request, so a topic (or a retry topic created by a
//! heartbeat) is routed the moment a broker has it, and a broker that is down drops out of
//! every route (the real name server unregisters a broker whose channel closes).
//!
//! A broker with a slave stays in a route while either node is up, listing the nodes that are
//! (`brokerAddrs` `{0: master, 1: slave}`, or only one of them), with the queues of its
//! master's topic table: 4.9's `RouteInfoManager` takes queue data from masters only
//! (`registerBroker` with `brokerId == MASTER_ID`) and drops a broker name's queue data only
//! when its last node unregisters, so a master that is down leaves its queues as it last
//! registered them.

use std::collections::BTreeMap;

use proto::body::{BrokerData, QueueData, TopicRouteData};
use proto::headers::GetRouteInfoRequest;
use proto::{Command, RequestCode, ResponseCode};

use super::ConnKey;
use super::SimConfig;
use super::broker::{SimBroker, decode, error, not_supported, success};
use super::outbox::Outbox;
use super::slave::Slave;

/// The default name server port (`NamesrvStartup`).
pub(crate) const NAMESRV_PORT: u16 = 9876;
/// Version `V4_9_4`, from which name servers answer standard JSON.
const V4_9_4: i32 = 397;

/// The name server.
#[derive(Debug)]
pub(crate) struct NameServer {
    pub(crate) addr: String,
}

impl NameServer {
    pub(crate) fn new() -> Self {
        Self {
            addr: format!("namesrv:{NAMESRV_PORT}"),
        }
    }

    /// Answers one request from `conn`.
    pub(crate) fn handle(
        &self,
        brokers: &BTreeMap<String, SimBroker>,
        slaves: &BTreeMap<String, Slave>,
        config: &SimConfig,
        out: &mut Outbox,
        conn: ConnKey,
        request: Command,
    ) {
        let response = match request.request_code() {
            RequestCode::GET_ROUTEINFO_BY_TOPIC => route_info(brokers, slaves, config, &request),
            RequestCode::GET_BROKER_CLUSTER_INFO => cluster_info(brokers, slaves, config),
            other => not_supported(other),
        };
        out.respond(conn, &request, response);
    }
}

/// `GET_ROUTEINFO_BY_TOPIC` (`ClientRequestProcessor.getRouteInfoByTopic`): standard JSON when
/// the request's version is at least `V4_9_4` or it asks for it, fastjson's form otherwise.
fn route_info(
    brokers: &BTreeMap<String, SimBroker>,
    slaves: &BTreeMap<String, Slave>,
    config: &SimConfig,
    request: &Command,
) -> Command {
    let header: GetRouteInfoRequest = match decode(request) {
        Ok(header) => header,
        Err(response) => return response,
    };
    let Some(route) = route(brokers, slaves, config, &header.topic) else {
        return error(
            ResponseCode::TOPIC_NOT_EXIST,
            format!(
                "No topic route info in name server for the topic: {}",
                header.topic
            ),
        );
    };
    let standard = request.version >= V4_9_4 || header.accept_standard_json_only == Some(true);
    let body = if standard {
        route.encode()
    } else {
        route.encode_fastjson()
    };
    success().with_body(body)
}

/// The route of `topic` over the brokers with a node up whose master has it, by broker name.
pub(crate) fn route(
    brokers: &BTreeMap<String, SimBroker>,
    slaves: &BTreeMap<String, Slave>,
    config: &SimConfig,
    topic: &str,
) -> Option<TopicRouteData> {
    let mut route = TopicRouteData::default();
    for (master, data) in live(brokers, slaves, config) {
        let Some(topic_config) = master.store.topic(topic) else {
            continue;
        };
        route.queue_datas.push(QueueData {
            broker_name: master.name.clone(),
            read_queue_nums: topic_config.read_queue_nums,
            write_queue_nums: topic_config.write_queue_nums,
            perm: topic_config.perm,
            topic_sys_flag: 0,
        });
        route.broker_datas.push(data);
    }
    (!route.queue_datas.is_empty()).then_some(route)
}

/// Each broker with a node up: its master, and its `BrokerData` listing the nodes up.
fn live<'a>(
    brokers: &'a BTreeMap<String, SimBroker>,
    slaves: &'a BTreeMap<String, Slave>,
    config: &'a SimConfig,
) -> impl Iterator<Item = (&'a SimBroker, BrokerData)> + 'a {
    brokers.values().filter_map(|master| {
        let slave = slaves.get(&master.name).map(|s| &s.node);
        let broker_addrs: BTreeMap<i64, String> = [Some(master), slave]
            .into_iter()
            .flatten()
            .filter(|node| !node.down)
            .map(|node| (node.role.broker_id(), node.addr.clone()))
            .collect();
        if broker_addrs.is_empty() {
            return None;
        }
        let data = BrokerData {
            cluster: config.cluster_name.clone(),
            broker_name: master.name.clone(),
            broker_addrs,
            zone_name: None,
            enable_acting_master: false,
        };
        Some((master, data))
    })
}

/// `GET_BROKER_CLUSTER_INFO`: the brokers with a node up, in one cluster (standard JSON).
fn cluster_info(
    brokers: &BTreeMap<String, SimBroker>,
    slaves: &BTreeMap<String, Slave>,
    config: &SimConfig,
) -> Command {
    let live: Vec<(&SimBroker, BrokerData)> = live(brokers, slaves, config).collect();
    let addr_table: serde_json::Map<String, serde_json::Value> = live
        .iter()
        .map(|(b, data)| {
            let value = serde_json::to_value(data)
                .expect("BrokerData serializes: string keys and plain values");
            (b.name.clone(), value)
        })
        .collect();
    let names: Vec<&str> = live.iter().map(|(b, _)| b.name.as_str()).collect();
    let body = serde_json::json!({
        "brokerAddrTable": addr_table,
        "clusterAddrTable": { config.cluster_name.clone(): names },
    });
    success().with_body(body.to_string())
}
