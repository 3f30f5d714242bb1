//! [`ProducerConfig`]: every knob of the producer, with Java's defaults and why.

use std::time::Duration;

use crate::error::ConfigError;

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
    /// Requests in a row that time out on one connection, with no answer between them, before
    /// it is closed and the next request opens a new one (3), as the consumer's
    /// `close_after_timeouts`: a broker that keeps the socket open but stopped answering (a
    /// hung process, a connection dead without a FIN) is not waited on for ever.
    pub close_after_timeouts: u32,
    /// A connection still opening after this long has failed (Java's `connectTimeoutMillis`,
    /// 3 s), as the consumer's.
    pub connect_timeout: Duration,
    /// After a connection to an address fails, requests for it fail at once for this long
    /// instead of opening a new connection each (1 s, the consumer's `reconnect_backoff`): a
    /// send then moves on to another broker at once, and a broker that is down is not dialled
    /// by every send.
    pub reconnect_backoff: Duration,
    /// Credentials for a cluster with ACL: every route lookup and send is signed with them
    /// (`None`, the default: nothing is signed).
    pub credentials: Option<proto::acl::Credentials>,
    /// The signature's HMAC (SHA1, the only one Apache's brokers check).
    pub signature_algorithm: proto::acl::SignatureAlgorithm,
    /// The tenant namespace (Java's `ClientConfig.namespace`): topics and the group are sent
    /// as `namespace%name`; [`SendResult::queue`](super::SendResult::queue) names the topic without it.
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
            connect_timeout: Duration::from_secs(3),
            reconnect_backoff: Duration::from_secs(1),
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
        if self.connect_timeout.is_zero() {
            return fail("the connect timeout must be positive");
        }
        if let Some(namespace) = &self.namespace {
            crate::namespace::Namespace::new(namespace.as_str())?;
        }
        Ok(())
    }
}
