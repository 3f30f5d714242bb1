//! The producer's sans-IO part: which queue a message goes to, the request that carries it,
//! what the broker's answer means, and whether a failed attempt is worth another.
//!
//! Nothing here sends, waits or reads a clock: the async producer in `rocketmq-driver` owns the
//! connections and the timers, and asks this module every question of policy:
//!
//! 1. [`ProducerMessage`]s are turned into a [`Prepared`] send once ([`Prepared::single`],
//!    [`Prepared::batch`]): checked, given their `UNIQ_KEY`s, encoded. Every attempt reuses it,
//!    so a retried message keeps its id (as Java's `MessageClientIDSetter` ids do).
//! 2. [`Routes`] caches each topic's [`PublishRoute`] and picks the [`Target`] of an attempt:
//!    round robin (skipping the broker that just failed, as Java's
//!    `TopicPublishInfo.selectOneMessageQueue(lastBrokerName)`), or by sharding key (Java's
//!    `SelectMessageQueueByHash`: the key's `String.hashCode` modulo the writable queues), so the
//!    same key lands on the same queue as long as the route does not change, whichever client
//!    (Java or this one) sends it.
//! 3. [`Prepared::request`] builds the `SEND_MESSAGE_V2` / `SEND_BATCH_MESSAGE` command for a
//!    target; [`Prepared::interpret`] reads the broker's answer into a [`SendResult`] or a
//!    [`SendError`].
//! 4. [`Attempts::after`] says whether a failure is retried and whether the route is fetched
//!    again first (`DefaultMQProducerImpl.sendDefaultImpl`).

mod attempts;
mod message;
mod outcome;
mod plan;
mod prepared;
mod routes;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use attempts::{Attempts, Retry};
pub use message::ProducerMessage;
pub use outcome::{SendError, SendResult, SendStatus};
pub use plan::{SendPlan, Step};
pub use prepared::{Prepared, UniqueIds};
pub use proto::body::java_string_hash;
pub use routes::{
    PublishRoute, Routes, Target, default_route_from_response, route_from_response, route_request,
    shard_index,
};

pub use crate::config::ConfigError;

/// The property a sharding key travels in (5.x `MessageConst.PROPERTY_SHARDING_KEY`), so
/// consumers can see which key put a message on its queue.
pub const SHARDING_KEY: &str = "__SHARDINGKEY";

/// The topic whose settings an auto-created topic copies (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const DEFAULT_TOPIC: &str = "TBW102";

/// Queues of a topic the broker creates on first send (`DefaultMQProducer.defaultTopicQueueNums`).
const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;

/// A producer's configuration. Build it with [`ProducerConfig::new`] and adjust the public
/// fields; [`ProducerConfig::validate`] runs when the producer is built.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProducerConfig {
    /// The producer group (only named in requests: a plain producer needs no registration).
    pub group: String,
    /// Name server addresses (`host:port`), asked in turn for routes until one answers.
    pub name_servers: Vec<String>,
    /// How long one send may take, retries included (`sendMsgTimeout`, 3 s).
    pub send_timeout: Duration,
    /// Extra attempts after a failed one (`retryTimesWhenSendFailed`, 2).
    pub retries: u32,
    /// How long a fetched route is used before it is fetched again (Java refreshes every
    /// `pollNameServerInterval`, 30 s). A failure that suggests the route moved drops it sooner.
    pub route_ttl: Duration,
    /// The largest body (sum of bodies for a batch) sent (`maxMessageSize`, 4 MiB).
    pub max_message_size: usize,
    /// Calls in a row that time out on one connection, with no answer between them, before it
    /// is closed and the next call opens a new one (3), as the consumer's
    /// `close_after_timeouts`: a broker that keeps the socket open but stopped answering (a
    /// hung process, a connection dead without a FIN) is not waited on for ever.
    pub close_after_timeouts: u32,
    /// Credentials for a cluster with ACL: every route lookup and send is signed with them
    /// (`None`, the default: nothing is signed).
    pub credentials: Option<proto::acl::Credentials>,
    /// The signature's HMAC (SHA1, the only one Apache's brokers check).
    pub signature_algorithm: proto::acl::SignatureAlgorithm,
    /// The tenant namespace (Java's `ClientConfig.namespace`): topics and the group are sent
    /// as `namespace%name`; [`SendResult::queue`] names the topic without it.
    pub namespace: Option<String>,
}

impl ProducerConfig {
    /// A configuration for `group` with Java's defaults.
    pub fn new(group: impl Into<String>, name_servers: Vec<String>) -> Self {
        Self {
            group: group.into(),
            name_servers,
            send_timeout: Duration::from_secs(3),
            retries: 2,
            route_ttl: Duration::from_secs(30),
            max_message_size: 4 * 1024 * 1024,
            close_after_timeouts: 3,
            credentials: None,
            signature_algorithm: proto::acl::SignatureAlgorithm::HmacSha1,
            namespace: None,
        }
    }

    /// Checks the values Java would refuse.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fail = |what: &str| Err(ConfigError(what.to_owned()));
        if self.group.is_empty() || self.group.len() > 255 {
            return fail("the producer group name must be 1 to 255 characters");
        }
        if self.name_servers.is_empty() {
            return fail("at least one name server address is needed");
        }
        if self.send_timeout.is_zero() {
            return fail("the send timeout must be positive");
        }
        if self.max_message_size == 0 {
            return fail("the maximum message size must be positive");
        }
        if self.close_after_timeouts == 0 {
            return fail("close_after_timeouts must be positive");
        }
        if let Some(namespace) = &self.namespace {
            crate::namespace::Namespace::new(namespace.as_str())?;
        }
        Ok(())
    }
}
