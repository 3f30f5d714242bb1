//! What a consumer tells brokers about its membership, the same for the push and the pop
//! consumer: `HEART_BEAT` with its `HeartbeatData` body (Java's
//! `MQClientInstance.sendHeartbeatToAllBroker`), and `UNREGISTER_CLIENT` when it leaves
//! (`MQClientAPIImpl.unregisterClient`).

use proto::headers::{HeartbeatRequest, UnregisterClientRequest};
use proto::{Command, RequestCode};

/// A `HEART_BEAT` carrying `body` (a `HeartbeatData`, encoded once for every broker).
pub(crate) fn heartbeat(body: &[u8]) -> Command {
    Command::request(RequestCode::HEART_BEAT, &HeartbeatRequest {}).with_body(body.to_vec())
}

/// `UNREGISTER_CLIENT` of consumer `client_id` from `group`.
pub(crate) fn unregister(client_id: &str, group: &str) -> Command {
    let header = UnregisterClientRequest {
        client_id: client_id.to_owned(),
        producer_group: None,
        consumer_group: Some(group.to_owned()),
    };
    Command::request(RequestCode::UNREGISTER_CLIENT, &header)
}
