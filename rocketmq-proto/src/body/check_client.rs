//! [`CheckClientRequestBody`]: the body of `CHECK_CLIENT_CONFIG` (46).
//!
//! Java: `CheckClientRequestBody.java` (`remoting/protocol/body/`); sent once at start for every
//! non-TAG subscription by `MQClientInstance.checkClientInBroker` (`remoting-protocol.md` §3.11).

use serde::{Deserialize, Serialize};

use super::{BodyError, SubscriptionData, decode_json, encode_json, nullable};

/// Asks a broker whether it accepts a subscription (in practice: whether it can filter SQL92).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CheckClientRequestBody {
    /// The client id.
    #[serde(deserialize_with = "nullable")]
    pub client_id: String,
    /// The consumer group.
    #[serde(deserialize_with = "nullable")]
    pub group: String,
    /// The subscription to check.
    #[serde(deserialize_with = "nullable")]
    pub subscription_data: SubscriptionData,
    /// 5.x namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl CheckClientRequestBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "CheckClientRequestBody";

    /// Reads the body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}
