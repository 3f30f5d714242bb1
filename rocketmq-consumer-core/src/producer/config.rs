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
    /// How long one send may take, retries and waits for a route included (`sendMsgTimeout`,
    /// 3 s). Within it a send rides out a broker that is away: while the name servers know no
    /// route for the topic it asks them again every `route_retry_interval`, and a broker it
    /// cannot connect to is tried again after the `reconnect_backoff`. Make it longer than a
    /// broker's restart (a minute covers a 4.9 broker's on most machines) and a send started
    /// during the restart is stored once the broker is back, instead of failing.
    pub send_timeout: Duration,
    /// How long one request of a send (a route lookup or an attempt) waits for its answer
    /// before the next attempt (3 s, as Java's per-call timeout with the default
    /// `sendMsgTimeout`). Never longer than what is left of the send timeout, so with the
    /// defaults an unanswered attempt ends the send; with a longer send timeout a broker that
    /// stopped answering costs one request timeout, not the whole send.
    pub request_timeout: Duration,
    /// How soon a topic the name servers knew no usable route for (no route, or no writable
    /// queue with a master) is asked for again (200 ms). Sends meanwhile wait for that lookup
    /// rather than asking each, so a burst of sends to a topic whose broker is restarting asks
    /// the name server at most this often, and the first send after the broker registers
    /// again finds it within this interval.
    pub route_retry_interval: Duration,
    /// Extra attempts after a failed one (`retryTimesWhenSendFailed`, 2). A connection that
    /// could not be opened is no attempt: nothing was sent, so trying again cannot store the
    /// message twice, and such a send goes on until its send timeout.
    pub retries: u32,
    /// How long a fetched route is used before it is fetched again (Java refreshes every
    /// `pollNameServerInterval`, 30 s). A failure that suggests the route moved drops it sooner, and so
    /// does a lost connection to one of its brokers: the next send asks again.
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
            request_timeout: Duration::from_secs(3),
            route_retry_interval: Duration::from_millis(200),
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
        if self.request_timeout.is_zero() {
            return fail("the request timeout must be positive");
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
