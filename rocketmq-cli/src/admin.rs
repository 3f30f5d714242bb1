//! One-shot admin requests to the name server and the brokers of a [`Cluster`].

use std::time::Duration;

use proto::body::TopicRouteData;
use proto::ext::ExtFields;
use proto::headers::GetRouteInfoRequest;
use proto::{Command, RequestCode, ResponseCode};

use crate::blocking::{BlockingClient, ClientError};

/// How long one admin request may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The cluster an admin command talks to: its name server, and the credentials requests are
/// signed with when it has ACL.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The name server's address (`host:port`).
    pub namesrv: String,
    /// ACL credentials (`None`: requests go unsigned). Their `Debug` hides the secret.
    pub credentials: Option<driver::Credentials>,
    /// The tenant namespace topics and groups are named in (`namespace%name` on the wire).
    pub namespace: Option<String>,
    /// TLS for every connection (`None`: plain TCP).
    pub tls: Option<driver::Tls>,
}

impl Cluster {
    /// The cluster behind `namesrv`, without ACL.
    pub fn new(namesrv: impl Into<String>) -> Self {
        Self {
            namesrv: namesrv.into(),
            credentials: None,
            namespace: None,
            tls: None,
        }
    }

    /// The same, over TLS as `tls` says.
    #[must_use]
    pub fn with_tls(mut self, tls: Option<driver::Tls>) -> Self {
        self.tls = tls;
        self
    }

    /// The same, naming topics and groups in `namespace`.
    #[must_use]
    pub fn with_namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// `resource` (a topic or group) as the brokers know it.
    pub fn wire_name(&self, resource: &str) -> Result<String, AdminError> {
        match &self.namespace {
            None => Ok(resource.to_owned()),
            Some(name) => driver::Namespace::new(name.as_str())
                .map(|ns| ns.wrap(resource).into_owned())
                .map_err(|e| AdminError::Body(e.0)),
        }
    }

    /// `wire` (a topic or group as the brokers know it) as the user names it: without this
    /// cluster's namespace (`NamespaceUtil.withoutNamespace`), unchanged without one.
    pub fn app_name(&self, wire: &str) -> String {
        match self
            .namespace
            .as_deref()
            .map(driver::Namespace::new)
            .and_then(Result::ok)
        {
            Some(ns) => ns.unwrap(wire).into_owned(),
            None => wire.to_owned(),
        }
    }

    /// The same, signing requests with `credentials`.
    #[must_use]
    pub fn with_credentials(mut self, credentials: Option<driver::Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// A connection to `addr` (the name server or a broker) signing as this cluster's user.
    pub fn connect(&self, addr: &str) -> Result<BlockingClient, ClientError> {
        let client = match &self.tls {
            None => BlockingClient::connect(addr, TIMEOUT)?,
            Some(tls) => BlockingClient::connect_tls(addr, TIMEOUT, tls)?,
        };
        Ok(client.signed(self.credentials.clone()))
    }
}

/// Why an admin request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// Talking to the peer failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The peer answered with an error code.
    #[error("{}{}{code}: {remark}", access_denied_prefix(*code, remark), peer_prefix(peer.as_deref()))]
    Refused {
        /// The response code.
        code: ResponseCode,
        /// The peer's reason.
        remark: String,
        /// Which broker refused, when several were asked.
        peer: Option<String>,
    },
    /// The peer's body did not decode.
    #[error("bad response body: {0}")]
    Body(String),
    /// What was asked about does not exist (a group without members or offsets, a topic
    /// without a route, a message id nobody stores): the message says which.
    #[error("{0}")]
    NotFound(String),
    /// The peer cannot do what was asked, for a known reason of its own: the message says
    /// which.
    #[error("{0}")]
    Limitation(String),
}

impl AdminError {
    /// The same error, naming `peer` (a broker name) as the one that refused.
    #[must_use]
    pub fn at(self, peer: &str) -> Self {
        match self {
            Self::Refused { code, remark, .. } => Self::Refused {
                code,
                remark,
                peer: Some(peer.to_owned()),
            },
            other => other,
        }
    }
}

fn peer_prefix(peer: Option<&str>) -> String {
    peer.map(|p| format!("{p} answered ")).unwrap_or_default()
}

/// Names an ACL refusal as one, so the one line `rmq` prints says what went wrong.
fn access_denied_prefix(code: ResponseCode, remark: &str) -> &'static str {
    if driver::is_access_refusal(code, Some(remark)) {
        "access denied (check --access-key/--secret-key and the user's permissions): "
    } else {
        ""
    }
}

/// `response` when it is a `SUCCESS`, else [`AdminError::Refused`] with its code and remark.
pub(crate) fn expect_success(response: Command) -> Result<Command, AdminError> {
    if response.response_code() == ResponseCode::SUCCESS {
        Ok(response)
    } else {
        Err(AdminError::Refused {
            code: response.response_code(),
            remark: response.remark.unwrap_or_default(),
            peer: None,
        })
    }
}

/// `GET_BROKER_CLUSTER_INFO`: the cluster's brokers, as the name server's JSON text.
pub fn cluster_info(cluster: &Cluster) -> Result<serde_json::Value, AdminError> {
    let mut client = cluster.connect(&cluster.namesrv)?;
    let request =
        Command::request_with_fields(RequestCode::GET_BROKER_CLUSTER_INFO, ExtFields::new());
    let response = expect_success(client.call(request, TIMEOUT)?)?;
    proto::json::parse(&response.body).map_err(|e| AdminError::Body(e.to_string()))
}

/// `GET_ROUTEINFO_BY_TOPIC`: the route of `topic`.
pub fn route(cluster: &Cluster, topic: &str) -> Result<TopicRouteData, AdminError> {
    let mut client = cluster.connect(&cluster.namesrv)?;
    let header = GetRouteInfoRequest {
        topic: cluster.wire_name(topic)?,
        accept_standard_json_only: Some(true),
    };
    let response = expect_success(client.call(
        Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header),
        TIMEOUT,
    )?)?;
    TopicRouteData::decode(&response.body).map_err(|e| AdminError::Body(e.to_string()))
}

/// One broker group of a route to ask: its name and the address to ask it at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerTarget {
    /// The broker group's name.
    pub name: String,
    /// The master's address, or with `master_only` false any replica's when the master is
    /// down (Java's `BrokerData.selectBrokerAddr`).
    pub addr: String,
}

/// The broker groups of `route`, one address each: the master, or when `master_only` is false
/// and the master is gone, another replica (as Java's admin reads from `selectBrokerAddr`).
/// Groups with no usable address are left out.
pub fn brokers_of(route: &TopicRouteData, master_only: bool) -> Vec<BrokerTarget> {
    route
        .broker_datas
        .iter()
        .filter_map(|broker| {
            let addr = if master_only {
                broker.master_addr()
            } else {
                broker.master_or_any_addr()
            }?;
            Some(BrokerTarget {
                name: broker.broker_name.clone(),
                addr: addr.to_owned(),
            })
        })
        .collect()
}

/// `UPDATE_AND_CREATE_TOPIC` on every master of the cluster, then waits (up to 30 s) until the
/// name server routes the topic (a new topic takes a few seconds to appear there).
pub fn create_topic(
    cluster: &Cluster,
    topic: &str,
    queues: i32,
) -> Result<TopicRouteData, AdminError> {
    let info = cluster_info(cluster)?;
    let masters: Vec<String> = info
        .get("brokerAddrTable")
        .and_then(|t| t.as_object())
        .map(|table| {
            table
                .values()
                .filter_map(|b| b.get("brokerAddrs")?.get("0")?.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if masters.is_empty() {
        return Err(AdminError::Body(
            "the name server knows no broker master".into(),
        ));
    }
    let wire = cluster.wire_name(topic)?;
    for addr in &masters {
        let header = proto::headers::CreateTopicRequest::new(&wire, queues);
        let mut client = cluster.connect(addr)?;
        expect_success(client.call(
            Command::request(RequestCode::UPDATE_AND_CREATE_TOPIC, &header),
            TIMEOUT,
        )?)?;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match route(cluster, topic) {
            Ok(route) => return Ok(route),
            Err(AdminError::Refused {
                code: ResponseCode::TOPIC_NOT_EXIST,
                ..
            }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(e),
        }
    }
}

/// One queue's offsets for a group, as `rmq offsets` prints them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueOffsets {
    /// The broker group.
    pub broker_name: String,
    /// The queue.
    pub queue_id: i32,
    /// The smallest offset still stored.
    pub min_offset: i64,
    /// The next offset to be written.
    pub max_offset: i64,
    /// The group's committed offset; `None` when the group never committed one.
    pub committed_offset: Option<i64>,
    /// `max_offset` minus the committed offset (or minus `min_offset` when none).
    pub lag: i64,
}

/// The broker offset range, the group's committed offset and the lag of every queue of `topic`.
pub fn offsets(
    cluster: &Cluster,
    group: &str,
    topic: &str,
) -> Result<Vec<QueueOffsets>, AdminError> {
    use proto::headers::{
        GetMaxOffsetRequest, GetMaxOffsetResponse, GetMinOffsetRequest, GetMinOffsetResponse,
        QueryConsumerOffsetRequest, QueryConsumerOffsetResponse,
    };
    let route = route(cluster, topic)?;
    let (topic, group) = (cluster.wire_name(topic)?, cluster.wire_name(group)?);
    let (topic, group) = (topic.as_str(), group.as_str());
    let mut clients: std::collections::BTreeMap<String, BlockingClient> = Default::default();
    let mut out = Vec::new();
    for queue in route.subscribe_queues(topic) {
        let addr = route
            .master_addr(queue.broker_name())
            .ok_or_else(|| AdminError::Body(format!("no master for {}", queue.broker_name())))?
            .to_owned();
        let client = match clients.entry(addr.clone()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(cluster.connect(&addr)?),
        };
        let (topic, queue_id) = (queue.topic().to_owned(), queue.queue_id());
        let min: GetMinOffsetResponse = header_of(expect_success(client.call(
            Command::request(
                RequestCode::GET_MIN_OFFSET,
                &GetMinOffsetRequest {
                    topic: topic.clone(),
                    queue_id,
                },
            ),
            TIMEOUT,
        )?)?)?;
        let max: GetMaxOffsetResponse = header_of(expect_success(client.call(
            Command::request(
                RequestCode::GET_MAX_OFFSET,
                &GetMaxOffsetRequest {
                    topic: topic.clone(),
                    queue_id,
                    committed: Some(true),
                },
            ),
            TIMEOUT,
        )?)?)?;
        let query = QueryConsumerOffsetRequest {
            consumer_group: group.to_owned(),
            topic,
            queue_id,
            set_zero_if_not_found: Some(false),
        };
        let response = client.call(
            Command::request(RequestCode::QUERY_CONSUMER_OFFSET, &query),
            TIMEOUT,
        )?;
        let committed_offset = if response.response_code() == ResponseCode::QUERY_NOT_FOUND {
            None
        } else {
            let committed: QueryConsumerOffsetResponse = header_of(expect_success(response)?)?;
            Some(committed.offset)
        };
        out.push(QueueOffsets {
            broker_name: queue.broker_name().to_owned(),
            queue_id,
            min_offset: min.offset,
            max_offset: max.offset,
            committed_offset,
            lag: (max.offset - committed_offset.unwrap_or(min.offset)).max(0),
        });
    }
    Ok(out)
}

/// The typed header of `response`.
pub(crate) fn header_of<H: proto::CommandHeader>(response: Command) -> Result<H, AdminError> {
    response
        .header()
        .map_err(|e| AdminError::Body(e.to_string()))
}
