//! [`ConsumerListBody`]: the answer to `GET_CONSUMER_LIST_BY_GROUP` (38).
//!
//! Java: `GetConsumerListByGroupResponseBody.java` (`remoting/protocol/header/`;
//! `remoting-protocol.md` §3.4).

use serde::{Deserialize, Serialize};

use super::{BodyError, decode_json, encode_json, nullable};

/// The client ids of a consumer group's live members, as one broker knows them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumerListBody {
    /// Client ids, in the broker's order (rebalancing sorts them itself).
    #[serde(deserialize_with = "nullable")]
    pub consumer_id_list: Vec<String>,
}

impl ConsumerListBody {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "GetConsumerListByGroupResponseBody";

    /// Reads the body; an empty body is [`BodyError::Empty`], which Java treats as a failure.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}
