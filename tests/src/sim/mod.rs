//! A deterministic, sans-IO simulated RocketMQ cluster: one name server and N brokers (each a
//! master, id 0, and optionally a slave, id 1, [`SimConfig::slaves`]) that answer real
//! [`proto::Command`]s the way the Java (4.9) and Rust brokers do for everything a consumer
//! does (`remoting-protocol.md` §3, §4, §7).
//!
//! # Driving it
//!
//! No sockets, threads or clock: the test world owns connections and time.
//!
//! - [`SimCluster::connect`] opens a client connection (a [`ConnKey`] the world picks) to an
//!   address ([`SimCluster::namesrv_addr`], [`SimCluster::broker_addr`],
//!   [`SimCluster::slave_addr`]);
//!   [`SimCluster::disconnect`] reports that the client closed it.
//! - [`SimCluster::handle_command`] delivers a request from the client (responses to the
//!   cluster's own oneway notifications are ignored).
//! - After every input, drain [`SimCluster::poll_output`] (responses, and
//!   `NOTIFY_CONSUMER_IDS_CHANGED` requests) and [`SimCluster::poll_closed`] (connections the
//!   cluster closed: broker restarts, members that stopped heartbeating).
//! - Call [`SimCluster::handle_timeout`] at [`SimCluster::poll_timeout`]: held long polls,
//!   delayed (retry) messages, member expiry and slaves' copying run on it. Every input first
//!   fires whatever is due, so early or late calls are harmless.
//!
//! Time is an [`Instant`] on the world's virtual clock; [`SimConfig::epoch`] and
//! [`SimConfig::epoch_millis`] map it to the wall-clock milliseconds the protocol carries.
//! A `now` earlier than one already seen is treated as the latest seen: the cluster's time
//! never goes back.
//!
//! # Determinism
//!
//! Ordered maps only, and every random choice (the order of a consumer list, the queue of a
//! send with a negative queue id, unique message keys) from [`SimConfig::seed`]: the same
//! inputs give the same outputs.
//!
//! # Protocol decisions
//!
//! Where the Java broker lines differ, the simulator follows 4.9 unless noted:
//!
//! - Pull: queue id out of range is `SYSTEM_ERROR`; `OFFSET_OVERFLOW_BADLY` moves to the
//!   maximum offset (5.x; 4.9 moved to 0 when the minimum was 0); `LITE_PULL_MESSAGE` (361) is
//!   served like `PULL_MESSAGE` (5.x).
//! - `QUERY_CONSUMER_OFFSET` without a committed offset answers `QUERY_NOT_FOUND` unless
//!   [`SimConfig::young_queue_offset_zero`].
//! - A send to `%RETRY%<group>` goes to the dead-letter queue also while the group holds
//!   unexpired locks (5.x); dead-letter topics are read-write (5.x).
//! - Heartbeat responses carry no 5.x extFields. A heartbeat creates `%RETRY%<group>` (1 queue)
//!   on the broker it reaches, so the retry topic is routed on every broker the client
//!   heartbeats; a broker that is down leaves every route.
//! - `NOTIFY_CONSUMER_IDS_CHANGED` goes to every connection of the group's members, the
//!   registering one included, before the heartbeat's response; only a new connection or an
//!   added / removed topic counts as a change (a `subVersion` bump does not).
//! - `GET_CONSUMER_LIST_BY_GROUP` lists ids in a seeded random order: clients must sort.
//! - Only `PULL_NOT_FOUND` is parked; a read that scanned only non-matching messages answers
//!   `PULL_RETRY_IMMEDIATELY` at once, as the store reports `NO_MATCHED_MESSAGE`.
//! - Locks outlive the client's connection (they expire), not a broker restart.
//! - Transactional (prepared) sends are refused with `NO_PERMISSION`.
//! - A member that has not heartbeaten for [`SimConfig::channel_expired_timeout`] has its
//!   connection closed (`ConsumerManager.scanNotActiveChannel`), exactly at the deadline
//!   rather than on Java's 10 s scan.
//! - A slave copies its master asynchronously and serves reads; it refuses writes, answers
//!   pulls without correcting offsets, and keeps its own members, locks and offsets, which
//!   its master's replace every 10 s (see `slave.rs` and `pull.rs`). A route lists a broker
//!   while either node is up, with the nodes that are up; its queues are those its master
//!   last registered (4.9's name server keeps a broker's queue data while any of its nodes
//!   is registered, and only the master registers queue data).

mod broker;
mod clock;
mod env;
mod fault;
mod group;
pub mod harness;
mod hold;
mod lock;
mod message;
mod namesrv;
mod outbox;
mod pop;
mod pull;
mod retry;
mod rng;
mod slave;
mod store;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::body::{SubscriptionData, TopicRouteData};
use proto::message::property;
use proto::{Command, LanguageCode, MessageQueue, ResponseCode, acl};

use broker::SimBroker;
use clock::Clock;
use env::Env;
use namesrv::NameServer;
use outbox::Outbox;
use slave::Slave;
use store::TopicConfig;

pub use broker::Role;
pub use fault::Fault;
pub use message::StoredMessageInfo;
pub use pop::pop_retry_topic;
pub use retry::{DLQ_PREFIX, RETRY_PREFIX, dlq_topic, retry_topic};
pub use rng::{SimRng, splitmix64};

/// One client connection, opened by the test world. Keys are the world's to choose; a key
/// may be reused after the connection closed.
pub type ConnKey = u64;

/// The broker's default delay levels (`messageDelayLevel`): 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m
/// 7m 8m 9m 10m 20m 30m 1h 2h.
pub fn default_delay_levels() -> Vec<Duration> {
    const SECONDS: [u64; 18] = [
        1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
    ];
    SECONDS.iter().map(|s| Duration::from_secs(*s)).collect()
}

/// How the simulated cluster is built and behaves.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Broker names, e.g. `broker-a`, `broker-b`; each is a master at `<name>:10911`.
    pub brokers: Vec<String>,
    /// The seed of every random choice.
    pub seed: u64,
    /// Period of the long-poll check (`PullRequestHoldService`, 5 s): a held pull is answered
    /// on the first check after its `suspendTimeoutMillis`, or at once when a matching message
    /// arrives.
    pub long_poll_check: Duration,
    /// Broker lock lifetime without renewal (`REBALANCE_LOCK_MAX_LIVE_TIME`, 60 s).
    pub lock_lifetime: Duration,
    /// The virtual clock's origin.
    pub epoch: Instant,
    /// Wall-clock milliseconds since the Unix epoch at [`SimConfig::epoch`].
    pub epoch_millis: i64,
    /// The cluster name in routes and the `CLUSTER` property.
    pub cluster_name: String,
    /// A member registration without heartbeat for this long gets its connection closed
    /// (`channelExpiredTimeout`, 120 s); `None` never.
    pub channel_expired_timeout: Option<Duration>,
    /// Answer `QUERY_CONSUMER_OFFSET` with `SUCCESS 0` instead of `QUERY_NOT_FOUND` when
    /// nothing is committed and the queue still starts at offset 0, as real brokers do for a
    /// young queue (`remoting-protocol.md` §3.6). Off by default.
    pub young_queue_offset_zero: bool,
    /// The group's `retryMaxTimes` (16), used when a request does not say.
    pub retry_max_times: i32,
    /// Delay per level, level 1 first ([`default_delay_levels`]).
    pub delay_levels: Vec<Duration>,
    /// Messages per pull at most (`maxTransferCountOnMessageInMemory`, 32).
    pub max_transfer_count: usize,
    /// How often committed offsets are written to disk (`flushConsumerOffsetInterval`, 5 s):
    /// a crash loses the commits since the last write. `None`: every commit survives.
    pub offset_flush_interval: Option<Duration>,
    /// The brokers (of [`SimConfig::brokers`]) that have a slave, at `<name>-s:10911` (see
    /// `slave.rs`). None by default.
    pub slaves: Vec<String>,
    /// How long after its master stored a message a slave holds it (`HAService` under
    /// `ASYNC_MASTER`: a master lost within this of a write takes the write down with it).
    pub replication_lag: Duration,
    /// How often a slave takes its master's offsets and topics (`SlaveSynchronize`, 10 s).
    pub slave_sync_interval: Duration,
    /// How many commit-log bytes behind its end a pull may start reading and still be served
    /// from memory (`TOTAL_PHYSICAL_MEMORY_SIZE * accessMessageInMemoryMaxRatio / 100`, 40 %
    /// of RAM); a broker with a slave suggests the slave to a pull reading from farther back.
    /// `None` (the default): no backlog a test builds is that large.
    pub in_memory_bytes: Option<i64>,
    /// Whether the remaining members hear (`NOTIFY_CONSUMER_IDS_CHANGED`) that one left, by
    /// `UNREGISTER_CLIENT` or by its connection closing, as from Apache's brokers (the
    /// default). `rocketmq-broker-rust` announces joins only: `false` plays it.
    pub notify_departures: bool,
}

impl SimConfig {
    /// Two brokers, `broker-a` and `broker-b`, seed 0, and the Java broker's defaults, on a
    /// clock starting at `epoch` (2023-11-14T22:13:20Z in wall-clock terms).
    pub fn new(epoch: Instant) -> Self {
        Self {
            brokers: vec!["broker-a".to_owned(), "broker-b".to_owned()],
            seed: 0,
            long_poll_check: Duration::from_secs(5),
            lock_lifetime: Duration::from_secs(60),
            epoch,
            epoch_millis: 1_700_000_000_000,
            cluster_name: "DefaultCluster".to_owned(),
            channel_expired_timeout: Some(Duration::from_secs(120)),
            young_queue_offset_zero: false,
            retry_max_times: 16,
            delay_levels: default_delay_levels(),
            max_transfer_count: 32,
            offset_flush_interval: Some(Duration::from_secs(5)),
            slaves: Vec::new(),
            replication_lag: Duration::from_millis(50),
            slave_sync_interval: Duration::from_secs(10),
            in_memory_bytes: None,
            notify_departures: true,
        }
    }
}

/// One registered consumer-group member, as a broker knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemberInfo {
    /// The connection it registered on.
    pub conn: ConnKey,
    /// Its client id.
    pub client_id: String,
    /// The language of its last heartbeat.
    pub language: LanguageCode,
    /// The version of its last heartbeat.
    pub version: i32,
    /// When its last heartbeat arrived.
    pub last_heartbeat: Instant,
}

/// What a connection is connected to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Endpoint {
    NameServer,
    /// A broker node: its broker name and role.
    Broker(String, Role),
}

/// The simulated cluster. See the [module documentation](self).
#[derive(Debug)]
pub struct SimCluster {
    config: SimConfig,
    clock: Clock,
    rng: SimRng,
    namesrv: NameServer,
    /// The masters, by broker name.
    brokers: BTreeMap<String, SimBroker>,
    /// The slaves, by broker name.
    slaves: BTreeMap<String, Slave>,
    conns: BTreeMap<ConnKey, Endpoint>,
    out: Outbox,
    /// The latest time seen.
    time: Option<Instant>,
    unique_prefix: u64,
    unique_counter: u64,
    /// Responses clients sent to broker-initiated requests, in arrival order.
    client_responses: Vec<(ConnKey, Command)>,
    /// ACL: the one user brokers accept, `(access key, secret key)`; `None`: no checks.
    acl: Option<(String, String)>,
    /// Requests brokers refused for a missing or wrong signature.
    refused_unsigned: u64,
    /// Connections that carry nothing either way any more, and never close (see
    /// [`SimCluster::black_hole_connections`]).
    black_holed: BTreeSet<ConnKey>,
}

impl SimCluster {
    /// A cluster with `config.brokers` (and `config.slaves`), no topics and no connections.
    pub fn new(config: SimConfig) -> Self {
        let mut rng = SimRng::new(config.seed);
        let mut brokers = BTreeMap::new();
        let mut slaves = BTreeMap::new();
        for (i, name) in config.brokers.iter().enumerate() {
            let [.., x, y] = u16::try_from(i + 1).unwrap_or(u16::MAX).to_be_bytes();
            let host = |net| {
                SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::new(10, net, x, y),
                    broker::BROKER_PORT,
                ))
            };
            let has_slave = config.slaves.contains(name);
            let addr = format!("{name}:{}", broker::BROKER_PORT);
            let master = SimBroker::new(name, Role::Master, has_slave, addr, host(0));
            brokers.insert(name.clone(), master);
            if has_slave {
                let addr = slave_addr(name);
                let node = SimBroker::new(name, Role::Slave, true, addr, host(3));
                slaves.insert(name.clone(), Slave::new(node, config.epoch));
            }
        }
        Self {
            clock: Clock::new(config.epoch, config.epoch_millis),
            unique_prefix: rng.next_u64(),
            rng,
            namesrv: NameServer::new(),
            brokers,
            slaves,
            conns: BTreeMap::new(),
            out: Outbox::default(),
            time: None,
            unique_counter: 0,
            client_responses: Vec::new(),
            acl: None,
            refused_unsigned: 0,
            black_holed: BTreeSet::new(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The name server's address, `namesrv:9876`.
    pub fn namesrv_addr(&self) -> &str {
        &self.namesrv.addr
    }

    /// The address of `broker`'s master, `<broker>:10911`.
    pub fn broker_addr(&self, broker: &str) -> String {
        format!("{broker}:{}", broker::BROKER_PORT)
    }

    /// The address of `broker`'s slave, `<broker>-s:10911`, when it has one.
    pub fn slave_addr(&self, broker: &str) -> Option<String> {
        self.slaves.contains_key(broker).then(|| slave_addr(broker))
    }

    /// The broker name and role of the node at `addr`, if any.
    pub fn node_at(&self, addr: &str) -> Option<(&str, Role)> {
        self.brokers
            .values()
            .chain(self.slaves.values().map(|s| &s.node))
            .find(|node| node.addr == addr)
            .map(|node| (node.name.as_str(), node.role))
    }

    /// The broker names, sorted.
    pub fn broker_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.brokers.keys().map(String::as_str)
    }

    /// Wall-clock milliseconds at `now`, as the brokers stamp messages.
    pub fn wall_millis(&self, now: Instant) -> i64 {
        self.clock.millis(now)
    }

    /// Creates `topic` (read-write, `queues_per_broker` queues) on every broker (slaves too,
    /// as if synced), or resizes it; routes reflect it at once.
    pub fn create_topic(&mut self, topic: &str, queues_per_broker: i32) {
        let slaves = self.slaves.values_mut().map(|s| &mut s.node);
        for broker in self.brokers.values_mut().chain(slaves) {
            broker
                .store
                .put_topic(topic, TopicConfig::read_write(queues_per_broker));
        }
    }

    /// Stores a message in queue `queue_id` of `topic` on `broker`, with `TAGS` and `KEYS`
    /// when given, a fresh `UNIQ_KEY` and the `CLUSTER` property, born and stored at `now`;
    /// wakes the held pulls it satisfies. Returns its queue offset. Works on a broker that is
    /// down too (the data is the test's to arrange). It goes to the master; a slave copies it
    /// [`SimConfig::replication_lag`] later.
    ///
    /// # Panics
    ///
    /// When the broker, topic or queue does not exist, or the topic or properties are too
    /// long for a record: the test is wrong.
    #[allow(clippy::too_many_arguments)] // the documented test-world API
    pub fn produce(
        &mut self,
        now: Instant,
        topic: &str,
        broker: &str,
        queue_id: i32,
        body: Bytes,
        tags: Option<&str>,
        keys: Option<&str>,
    ) -> i64 {
        let now = self.advance(now);
        let mut properties = BTreeMap::new();
        if let Some(tags) = tags {
            properties.insert(property::TAGS.to_owned(), tags.to_owned());
        }
        if let Some(keys) = keys {
            properties.insert(property::KEYS.to_owned(), keys.to_owned());
        }
        let unique = format!("{:016X}{:016X}", self.unique_prefix, self.unique_counter);
        self.unique_counter += 1;
        properties.insert(property::UNIQ_KEY.to_owned(), unique);
        properties.insert(
            property::CLUSTER.to_owned(),
            self.config.cluster_name.clone(),
        );
        let born = self.clock.millis(now);
        let draft = retry::produced_draft(topic, queue_id, body, properties, born);
        self.with_broker(now, broker, |target, env| {
            let topic_config = target
                .store
                .topic(topic)
                .unwrap_or_else(|| panic!("produce: topic {topic:?} does not exist on {broker}"));
            assert!(
                (0..topic_config
                    .read_queue_nums
                    .max(topic_config.write_queue_nums))
                    .contains(&queue_id),
                "produce: {topic} has no queue {queue_id} on {broker}"
            );
            let (offset, _) = target
                .store_message(env, draft)
                .unwrap_or_else(|e| panic!("produce: the message does not fit a record: {e}"));
            offset
        })
        .unwrap_or_else(|| panic!("produce: no broker {broker:?}"))
    }

    /// Opens connection `conn` to `addr`. False (and no connection) when nothing listens
    /// there: an unknown address, or a broker that is down. A key still open is closed first
    /// (as by [`SimCluster::disconnect`]).
    pub fn connect(&mut self, conn: ConnKey, addr: &str) -> bool {
        if self.conns.contains_key(&conn) {
            let now = self.time.unwrap_or(self.config.epoch);
            self.disconnect(now, conn);
        }
        let endpoint = if addr == self.namesrv.addr {
            Endpoint::NameServer
        } else {
            let slaves = self.slaves.values_mut().map(|s| &mut s.node);
            match self
                .brokers
                .values_mut()
                .chain(slaves)
                .find(|b| b.addr == addr)
            {
                Some(broker) if !broker.down => {
                    broker.conns.insert(conn);
                    Endpoint::Broker(broker.name.clone(), broker.role)
                }
                _ => return false,
            }
        };
        self.conns.insert(conn, endpoint);
        true
    }

    /// Whether `conn` is open.
    pub fn is_connected(&self, conn: ConnKey) -> bool {
        self.conns.contains_key(&conn)
    }

    /// The client closed (or lost) `conn`: its held pulls are dropped, its members leave their
    /// groups (the remaining members get `NOTIFY_CONSUMER_IDS_CHANGED`), and what was still
    /// queued for it is discarded. Unknown keys are ignored.
    pub fn disconnect(&mut self, now: Instant, conn: ConnKey) {
        let now = self.advance(now);
        let Some(endpoint) = self.conns.remove(&conn) else {
            return;
        };
        self.out.forget(conn);
        if let Endpoint::Broker(name, role) = endpoint {
            self.with_node(now, &name, role, |broker, env| {
                broker.connection_closed(env, conn)
            });
        }
    }

    /// A command from the client on `conn`. Requests are answered on
    /// [`SimCluster::poll_output`]; responses (to the cluster's oneway notifications) and
    /// anything on a connection that is not open are ignored. Never panics, whatever the
    /// command holds.
    pub fn handle_command(&mut self, now: Instant, conn: ConnKey, command: Command) {
        let now = self.advance(now);
        if command.is_response() {
            if self.conns.contains_key(&conn) {
                self.client_responses.push((conn, command));
            }
            return;
        }
        if self.black_holed.contains(&conn) {
            return;
        }
        match self.conns.get(&conn).cloned() {
            None => {}
            Some(Endpoint::NameServer) => {
                self.namesrv.handle(
                    &self.brokers,
                    &self.slaves,
                    &self.config,
                    &mut self.out,
                    conn,
                    command,
                );
            }
            Some(Endpoint::Broker(name, role)) => {
                if self.is_node_silent(&name, role) {
                    return;
                }
                if !self.signed_by_user(&command) {
                    self.refuse_unsigned(conn, &command);
                    return;
                }
                self.with_node(now, &name, role, |broker, env| {
                    broker.handle(env, conn, command)
                });
            }
        }
    }

    /// Fires everything due at `now`: held pulls whose check came, delayed messages, member
    /// expiry, and slaves copying and syncing from their masters.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// When [`SimCluster::handle_timeout`] should be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer().map(|(at, _, _)| at)
    }

    /// The next command for a client: a response, or a broker-initiated oneway request. A
    /// silent broker's are swallowed.
    pub fn poll_output(&mut self) -> Option<(ConnKey, Command)> {
        loop {
            let (conn, command) = self.out.pop_command()?;
            let silent = match self.conns.get(&conn) {
                Some(Endpoint::Broker(name, role)) => self.is_node_silent(name, *role),
                _ => false,
            } || self.black_holed.contains(&conn);
            if !silent {
                return Some((conn, command));
            }
        }
    }

    /// Makes every broker check each request's ACL signature (Java's `PlainAccessValidator`):
    /// only `access_key` signing with `secret_key` is let through; anything else is refused
    /// with `NO_PERMISSION` (a oneway request is dropped unanswered, as a broker does). The
    /// name server checks nothing, as 4.x's does not.
    pub fn require_signatures(&mut self, access_key: &str, secret_key: &str) {
        self.acl = Some((access_key.to_owned(), secret_key.to_owned()));
    }

    /// Requests brokers refused so far for a missing or wrong signature.
    pub fn refused_unsigned(&self) -> u64 {
        self.refused_unsigned
    }

    fn signed_by_user(&self, command: &Command) -> bool {
        let Some((access_key, secret_key)) = &self.acl else {
            return true;
        };
        command.ext_fields.get(acl::ACCESS_KEY) == Some(access_key.as_str())
            && acl::verify(command, secret_key, acl::SignatureAlgorithm::HmacSha1)
    }

    fn refuse_unsigned(&mut self, conn: ConnKey, command: &Command) {
        self.refused_unsigned += 1;
        if command.is_oneway() {
            return;
        }
        let mut refusal = Command::response(ResponseCode::NO_PERMISSION, command.opaque);
        refusal.remark = Some(match command.ext_fields.get(acl::ACCESS_KEY) {
            None => "No accessKey is configured".to_owned(),
            Some(_) => "Check signature failed for accessKey".to_owned(),
        });
        self.out.send(conn, refusal);
    }

    /// Makes `broker` hang (`silent`: its connections stay open and it reads and answers
    /// nothing, a stopped process or a half-open link) or wakes it up; what it was asked
    /// meanwhile is lost.
    ///
    /// # Panics
    ///
    /// When there is no such broker.
    pub fn set_broker_silent(&mut self, broker: &str, silent: bool) {
        self.broker_mut(broker).silent = silent;
    }

    /// Black-holes every connection open to `broker` now, as a firewall that lost its state
    /// does: they stay open and carry nothing either way, for ever (requests and answers on
    /// them are lost, held pulls never come back); connections opened later work.
    ///
    /// # Panics
    ///
    /// When there is no such broker.
    pub fn black_hole_connections(&mut self, broker: &str) {
        let open: Vec<ConnKey> = self
            .conns
            .iter()
            .filter(|(_, endpoint)| {
                matches!(endpoint, Endpoint::Broker(name, Role::Master) if name == broker)
            })
            .map(|(conn, _)| *conn)
            .collect();
        assert!(
            self.brokers.contains_key(broker),
            "black_hole_connections: no broker {broker}"
        );
        self.black_holed.extend(open);
    }

    /// Whether `broker` is hung.
    pub fn is_broker_silent(&self, broker: &str) -> bool {
        self.brokers.get(broker).is_some_and(|b| b.silent)
    }

    fn is_node_silent(&self, broker: &str, role: Role) -> bool {
        self.node(broker, role).is_some_and(|b| b.silent)
    }

    /// The next connection the cluster closed, for the world to report to the client.
    pub fn poll_closed(&mut self) -> Option<ConnKey> {
        self.out.pop_closed()
    }

    /// Restarts `broker`'s master: all its connections close ([`SimCluster::poll_closed`]),
    /// and its members, held pulls, locks and the commits not yet written
    /// ([`SimConfig::offset_flush_interval`]) are forgotten; messages, topics, the committed
    /// offsets written and delayed messages survive.
    ///
    /// # Panics
    ///
    /// When there is no such broker.
    pub fn restart_broker(&mut self, now: Instant, broker: &str) {
        self.advance(now);
        self.crash(broker, Role::Master);
    }

    /// Takes `broker`'s master down (a crash: as [`SimCluster::restart_broker`], and connects
    /// fail and it leaves every route until it is up again, while its slave, if it has one,
    /// stays in them) or brings it back up.
    ///
    /// # Panics
    ///
    /// When there is no such broker.
    pub fn set_broker_down(&mut self, broker: &str, down: bool) {
        if down {
            self.crash(broker, Role::Master);
        }
        self.broker_mut(broker).down = down;
    }

    /// Whether `broker`'s master is down.
    pub fn is_broker_down(&self, broker: &str) -> bool {
        self.brokers.get(broker).is_some_and(|b| b.down)
    }

    /// Takes `broker`'s slave down (a crash, as [`SimCluster::set_broker_down`] for a master:
    /// it leaves the routes and copies nothing until it is up again, then catches up) or
    /// brings it back up.
    ///
    /// # Panics
    ///
    /// When the broker has no slave.
    pub fn set_slave_down(&mut self, broker: &str, down: bool) {
        if down {
            self.crash(broker, Role::Slave);
        }
        self.slave_mut(broker).node.down = down;
    }

    /// Whether `broker`'s slave is down (false without a slave).
    pub fn is_slave_down(&self, broker: &str) -> bool {
        self.slaves.get(broker).is_some_and(|s| s.node.down)
    }

    /// `INVOKE_BROKER_TO_RESET_OFFSET` as an admin tool runs it with client-side reset: each
    /// broker holding queues of `offsets` stores them as `group`'s committed offsets and sends
    /// `RESET_CONSUMER_CLIENT_OFFSET` (oneway, its own queues in the body) to every member of
    /// the group connected to it.
    pub fn reset_offsets(
        &mut self,
        now: Instant,
        group: &str,
        topic: &str,
        offsets: &BTreeMap<MessageQueue, i64>,
    ) {
        let now = self.advance(now);
        let names: Vec<String> = self.brokers.keys().cloned().collect();
        for name in names {
            let table: BTreeMap<MessageQueue, i64> = offsets
                .iter()
                .filter(|(mq, _)| mq.broker_name() == name && mq.topic() == topic)
                .map(|(mq, o)| (mq.clone(), *o))
                .collect();
            if table.is_empty() {
                continue;
            }
            self.with_broker(now, &name, |broker, env| {
                broker.reset_offsets(env, group, topic, table)
            });
        }
    }

    /// Sends `request` (a broker-initiated request) to the client on `conn` as the broker it
    /// is connected to; the client's answer shows up in [`SimCluster::client_responses`].
    /// Returns the opaque used.
    pub fn request_client(&mut self, conn: ConnKey, mut request: Command) -> i32 {
        self.unique_counter += 1;
        request.opaque = 1_000_000 + self.unique_counter as i32;
        let opaque = request.opaque;
        self.out.send(conn, request);
        opaque
    }

    /// The responses clients sent to broker-initiated requests so far.
    pub fn client_responses(&self) -> &[(ConnKey, Command)] {
        &self.client_responses
    }

    /// Injects `fault`.
    ///
    /// # Panics
    ///
    /// When the fault names a broker that does not exist.
    pub fn inject(&mut self, fault: Fault) {
        match fault {
            Fault::SystemBusy { broker, count } => self.broker_mut(&broker).faults.busy += count,
            Fault::OffsetMoved {
                broker,
                topic,
                queue_id,
                next_begin_offset,
            } => {
                self.broker_mut(&broker)
                    .faults
                    .add_offset_moved(topic, queue_id, next_begin_offset)
            }
            Fault::DropResponses { count } => self.out.drop_responses += u64::from(count),
            Fault::RespondWith {
                broker,
                request,
                response,
                count,
            } => self
                .broker_mut(&broker)
                .faults
                .add_respond_with(request, response, count),
        }
    }

    /// How many responses [`Fault::DropResponses`] swallowed so far.
    pub fn dropped_responses(&self) -> u64 {
        self.out.dropped
    }

    /// How many commands wait in [`SimCluster::poll_output`].
    pub fn pending_output(&self) -> usize {
        self.out.pending()
    }

    /// Pop (5.x): how many messages of `group` are invisible on `broker` now, and how many
    /// the broker revived (expired and stored again in a pop retry topic) so far.
    pub fn pop_state(&self, broker: &str, group: &str) -> (usize, u64) {
        self.brokers
            .get(broker)
            .map_or((0, 0), |b| (b.pop.invisible_count(group), b.pop.revived))
    }

    /// `group`'s committed offset of `queue` on the queue's broker (its master).
    pub fn committed_offset(&self, group: &str, queue: &MessageQueue) -> Option<i64> {
        self.committed_offset_on(Role::Master, group, queue)
    }

    /// `group`'s committed offset of `queue` on the node in `role` of the queue's broker.
    pub fn committed_offset_on(
        &self,
        role: Role,
        group: &str,
        queue: &MessageQueue,
    ) -> Option<i64> {
        self.node(queue.broker_name(), role)?
            .offsets
            .get(&(group.to_owned(), queue.topic().to_owned(), queue.queue_id()))
            .copied()
    }

    /// The next offset to be written in `queue` (0 for an unknown queue).
    pub fn max_offset(&self, queue: &MessageQueue) -> i64 {
        self.bounds(queue).1
    }

    /// The end of `queue` on its broker's slave: what it copied so far (0 without a slave).
    pub fn slave_max_offset(&self, queue: &MessageQueue) -> i64 {
        self.node(queue.broker_name(), Role::Slave)
            .map_or(0, |s| s.store.bounds(queue.topic(), queue.queue_id()).1)
    }

    /// The smallest live offset of `queue` (0 for an unknown queue).
    pub fn min_offset(&self, queue: &MessageQueue) -> i64 {
        self.bounds(queue).0
    }

    /// Expires the messages of `queue` below `min_offset` (as the broker's file cleanup
    /// does, on its slave too): pulls before it answer `PULL_OFFSET_MOVED` to the new
    /// minimum, and send-back of an expired message fails.
    ///
    /// # Panics
    ///
    /// When the queue's broker does not exist.
    pub fn truncate_queue(&mut self, queue: &MessageQueue, min_offset: i64) {
        self.broker_mut(queue.broker_name()).store.truncate(
            queue.topic(),
            queue.queue_id(),
            min_offset,
        );
        if let Some(slave) = self.slaves.get_mut(queue.broker_name()) {
            slave
                .node
                .store
                .truncate(queue.topic(), queue.queue_id(), min_offset);
        }
    }

    /// The client ids registered in `group` on `broker` (its master), sorted.
    pub fn members(&self, broker: &str, group: &str) -> Vec<String> {
        self.members_on(broker, Role::Master, group)
    }

    /// The client ids registered in `group` on `broker`'s node in `role`, sorted.
    pub fn members_on(&self, broker: &str, role: Role, group: &str) -> Vec<String> {
        self.node(broker, role)
            .map(|b| b.groups.client_ids(group))
            .unwrap_or_default()
    }

    /// The members of `group` on `broker`, by connection.
    pub fn member_infos(&self, broker: &str, group: &str) -> Vec<MemberInfo> {
        self.brokers
            .get(broker)
            .and_then(|b| b.groups.get(group))
            .map(|g| g.member_infos())
            .unwrap_or_default()
    }

    /// The groups with members on `broker`, sorted.
    pub fn groups(&self, broker: &str) -> Vec<String> {
        self.brokers
            .get(broker)
            .map(|b| b.groups.names().cloned().collect())
            .unwrap_or_default()
    }

    /// The subscription `group` has registered for `topic` on `broker`.
    pub fn subscription(
        &self,
        broker: &str,
        group: &str,
        topic: &str,
    ) -> Option<&SubscriptionData> {
        self.brokers
            .get(broker)?
            .groups
            .get(group)?
            .subscriptions
            .get(topic)
    }

    /// The client holding `group`'s unexpired lock on `queue` at `now` (on its master).
    pub fn lock_owner(&self, group: &str, queue: &MessageQueue, now: Instant) -> Option<String> {
        self.lock_owner_on(Role::Master, group, queue, now)
    }

    /// The client holding `group`'s unexpired lock on `queue` at `now` on the node in `role`
    /// of its broker.
    pub fn lock_owner_on(
        &self,
        role: Role,
        group: &str,
        queue: &MessageQueue,
        now: Instant,
    ) -> Option<String> {
        self.node(queue.broker_name(), role)?
            .locks
            .owner(group, queue, now, self.config.lock_lifetime)
            .map(str::to_owned)
    }

    /// Every message stored in `queue`, by offset, expired ones included: what was produced,
    /// for invariants. Delayed messages appear once they are due.
    pub fn messages(
        &self,
        queue: &MessageQueue,
    ) -> impl Iterator<Item = (i64, &StoredMessageInfo)> + '_ {
        self.brokers
            .get(queue.broker_name())
            .and_then(|b| b.store.queue(queue.topic(), queue.queue_id()))
            .map(|q| q.all())
            .unwrap_or_default()
            .iter()
            .map(|m| (m.queue_offset, m))
    }

    /// The message at commit-log offset `offset` on `broker`, if it is live.
    pub fn message_at_commit_log_offset(
        &self,
        broker: &str,
        offset: i64,
    ) -> Option<&StoredMessageInfo> {
        self.brokers.get(broker)?.store.lookup(offset)
    }

    /// The route the name server gives for `topic` now.
    pub fn route(&self, topic: &str) -> Option<TopicRouteData> {
        namesrv::route(&self.brokers, &self.slaves, &self.config, topic)
    }

    /// The topics `broker` has (retry and dead-letter topics included), sorted.
    pub fn topics(&self, broker: &str) -> Vec<String> {
        self.brokers
            .get(broker)
            .map(|b| b.store.topics().map(|(t, _)| t.clone()).collect())
            .unwrap_or_default()
    }

    /// How many pulls `broker`'s master holds (long polling).
    pub fn held_pulls(&self, broker: &str) -> usize {
        self.held_pulls_on(broker, Role::Master)
    }

    /// How many pulls `broker`'s node in `role` holds (long polling).
    pub fn held_pulls_on(&self, broker: &str, role: Role) -> usize {
        self.node(broker, role).map_or(0, |b| b.holds.len())
    }

    /// How many delayed messages `broker` has not delivered yet.
    pub fn scheduled_messages(&self, broker: &str) -> usize {
        self.brokers
            .get(broker)
            .map_or(0, |b| b.store.scheduled_len())
    }

    fn bounds(&self, queue: &MessageQueue) -> (i64, i64) {
        self.brokers
            .get(queue.broker_name())
            .map_or((0, 0), |b| b.store.bounds(queue.topic(), queue.queue_id()))
    }

    fn broker_mut(&mut self, broker: &str) -> &mut SimBroker {
        self.brokers
            .get_mut(broker)
            .unwrap_or_else(|| panic!("no broker {broker:?} in the simulated cluster"))
    }

    fn slave_mut(&mut self, broker: &str) -> &mut Slave {
        self.slaves
            .get_mut(broker)
            .unwrap_or_else(|| panic!("broker {broker:?} has no slave in the simulated cluster"))
    }

    /// Broker `name`'s node in `role`.
    fn node(&self, name: &str, role: Role) -> Option<&SimBroker> {
        match role {
            Role::Master => self.brokers.get(name),
            Role::Slave => self.slaves.get(name).map(|s| &s.node),
        }
    }

    /// Runs `f` on broker `name`'s master with an [`Env`] at `now`.
    fn with_broker<R>(
        &mut self,
        now: Instant,
        name: &str,
        f: impl FnOnce(&mut SimBroker, &mut Env<'_>) -> R,
    ) -> Option<R> {
        self.with_node(now, name, Role::Master, f)
    }

    /// Runs `f` on broker `name`'s node in `role` with an [`Env`] at `now`.
    fn with_node<R>(
        &mut self,
        now: Instant,
        name: &str,
        role: Role,
        f: impl FnOnce(&mut SimBroker, &mut Env<'_>) -> R,
    ) -> Option<R> {
        let Self {
            brokers,
            slaves,
            config,
            rng,
            out,
            clock,
            ..
        } = self;
        let broker = match role {
            Role::Master => brokers.get_mut(name)?,
            Role::Slave => &mut slaves.get_mut(name)?.node,
        };
        let mut env = Env {
            now,
            clock: *clock,
            config,
            rng,
            out,
        };
        Some(f(broker, &mut env))
    }

    /// The process of broker `name`'s node in `role` dies: its connections close.
    fn crash(&mut self, name: &str, role: Role) {
        let closed = match role {
            Role::Master => self.broker_mut(name).crash(),
            Role::Slave => self.slave_mut(name).node.crash(),
        };
        for conn in closed {
            self.conns.remove(&conn);
            self.out.close(conn);
        }
    }

    /// The earliest timer of any node (a slave's copying and syncing included), and whose.
    fn next_timer(&self) -> Option<(Instant, String, Role)> {
        let expiry = self.config.channel_expired_timeout;
        let masters = self
            .brokers
            .values()
            .filter_map(|b| Some((b.next_timer(expiry)?, b.name.clone(), Role::Master)));
        let slaves = self.slaves.iter().filter_map(|(name, slave)| {
            let master = self.brokers.get(name)?;
            let at = slave.next_timer(master, self.config.replication_lag, expiry)?;
            Some((at, name.clone(), Role::Slave))
        });
        masters.chain(slaves).min()
    }

    /// Fires the timers of broker `name`'s node in `role` due at `at`; returns the
    /// connections to close.
    fn fire(&mut self, at: Instant, name: &str, role: Role) -> BTreeSet<ConnKey> {
        let Self {
            brokers,
            slaves,
            config,
            rng,
            out,
            clock,
            ..
        } = self;
        let mut env = Env {
            now: at,
            clock: *clock,
            config,
            rng,
            out,
        };
        match role {
            Role::Master => brokers
                .get_mut(name)
                .map(|broker| broker.fire(&mut env))
                .unwrap_or_default(),
            Role::Slave => match (slaves.get_mut(name), brokers.get(name)) {
                (Some(slave), Some(master)) => slave.fire(&mut env, master, config.replication_lag),
                _ => BTreeSet::new(),
            },
        }
    }

    /// Fires every timer due by `now`, in time order, and returns the time to process the
    /// input at (never earlier than a time already seen).
    fn advance(&mut self, now: Instant) -> Instant {
        let now = match self.time {
            Some(latest) if latest > now => latest,
            _ => now,
        };
        while let Some((due, name, role)) = self.next_timer() {
            if due > now {
                break;
            }
            let at = match self.time {
                Some(latest) if latest > due => latest,
                _ => due,
            };
            self.time = Some(at);
            let expired = self.fire(at, &name, role);
            for conn in expired {
                self.conns.remove(&conn);
                self.out.close(conn);
                self.with_node(at, &name, role, |broker, env| {
                    broker.connection_closed(env, conn)
                });
            }
        }
        self.time = Some(now);
        now
    }
}

/// The address of broker `name`'s slave.
fn slave_addr(name: &str) -> String {
    format!("{name}-s:{}", broker::BROKER_PORT)
}
