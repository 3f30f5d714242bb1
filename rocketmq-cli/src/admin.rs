//! One-shot admin requests to the name server.

use std::time::Duration;

use proto::body::TopicRouteData;
use proto::ext::ExtFields;
use proto::headers::GetRouteInfoRequest;
use proto::{Command, RequestCode, ResponseCode};

use crate::blocking::{BlockingClient, ClientError};

/// How long one admin request may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Why an admin request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// Talking to the peer failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The peer answered with an error code.
    #[error("{code}: {remark}")]
    Refused {
        /// The response code.
        code: ResponseCode,
        /// The peer's reason.
        remark: String,
    },
    /// The peer's body did not decode.
    #[error("bad response body: {0}")]
    Body(String),
}

fn expect_success(response: Command) -> Result<Command, AdminError> {
    if response.response_code() == ResponseCode::SUCCESS {
        Ok(response)
    } else {
        Err(AdminError::Refused {
            code: response.response_code(),
            remark: response.remark.unwrap_or_default(),
        })
    }
}

/// `GET_BROKER_CLUSTER_INFO`: the cluster's brokers, as the name server's JSON text.
pub fn cluster_info(namesrv: &str) -> Result<serde_json::Value, AdminError> {
    let mut client = BlockingClient::connect(namesrv, TIMEOUT)?;
    let request =
        Command::request_with_fields(RequestCode::GET_BROKER_CLUSTER_INFO, ExtFields::new());
    let response = expect_success(client.call(request, TIMEOUT)?)?;
    proto::json::parse(&response.body).map_err(|e| AdminError::Body(e.to_string()))
}

/// `GET_ROUTEINFO_BY_TOPIC`: the route of `topic`.
pub fn route(namesrv: &str, topic: &str) -> Result<TopicRouteData, AdminError> {
    let mut client = BlockingClient::connect(namesrv, TIMEOUT)?;
    let header = GetRouteInfoRequest {
        topic: topic.to_owned(),
        accept_standard_json_only: Some(true),
    };
    let response = expect_success(client.call(
        Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header),
        TIMEOUT,
    )?)?;
    TopicRouteData::decode(&response.body).map_err(|e| AdminError::Body(e.to_string()))
}

/// `UPDATE_AND_CREATE_TOPIC` on every master of the cluster, then waits (up to 30 s) until the
/// name server routes the topic (a new topic takes a few seconds to appear there).
pub fn create_topic(namesrv: &str, topic: &str, queues: i32) -> Result<TopicRouteData, AdminError> {
    let info = cluster_info(namesrv)?;
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
    for addr in &masters {
        let header = proto::headers::CreateTopicRequest::new(topic, queues);
        let mut client = BlockingClient::connect(addr, TIMEOUT)?;
        expect_success(client.call(
            Command::request(RequestCode::UPDATE_AND_CREATE_TOPIC, &header),
            TIMEOUT,
        )?)?;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match route(namesrv, topic) {
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
