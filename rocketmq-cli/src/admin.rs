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
