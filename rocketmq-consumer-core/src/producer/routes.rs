//! Where a message goes: each topic's [`PublishRoute`], the route cache ([`Routes`]) and the
//! name server's route answers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proto::body::TopicRouteData;
use proto::headers::GetRouteInfoRequest;
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use super::{DEFAULT_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS, Prepared, SendError, java_string_hash};

/// Where one attempt goes: a queue and the address of its broker group's master.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The queue.
    pub queue: MessageQueue,
    /// The master's address (`host:port`).
    pub addr: String,
}

/// The queues of a topic a producer may write, in Java's order, each with its master.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublishRoute {
    targets: Vec<Target>,
}

impl PublishRoute {
    /// The writable queues of `topic` in `route` ([`TopicRouteData::publish_queues`]) whose
    /// broker group has a known master.
    pub fn new(topic: &str, route: &TopicRouteData) -> Self {
        let targets = route
            .publish_queues(topic)
            .into_iter()
            .filter_map(|queue| {
                let addr = route.master_addr(queue.broker_name())?.to_owned();
                Some(Target { queue, addr })
            })
            .collect();
        Self { targets }
    }

    /// The queues a producer writes to `topic` before any broker has it: those of
    /// [`DEFAULT_TOPIC`]'s route, at most 4 queues per broker (`defaultTopicQueueNums`), as Java's
    /// `MQClientInstance.updateTopicRouteInfoFromNameServer(topic, isDefault = true, ..)` builds
    /// them. A broker with `autoCreateTopicEnable` creates the topic on the first send, from the
    /// `defaultTopic` the send header names (`AbstractSendMessageProcessor.msgCheck`).
    pub fn auto_created(topic: &str, default_route: &TopicRouteData) -> Self {
        let mut route = default_route.clone();
        for queues in &mut route.queue_datas {
            let nums = DEFAULT_TOPIC_QUEUE_NUMS.min(queues.read_queue_nums);
            queues.read_queue_nums = nums;
            queues.write_queue_nums = nums;
        }
        Self::new(topic, &route)
    }

    /// The targets, in the order round robin and sharding index them.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The target of sharding key `key`: [`shard_index`] over the writable queues.
    pub fn by_key(&self, key: &str) -> Option<&Target> {
        self.targets.get(shard_index(key, self.targets.len())?)
    }

    /// The round-robin target after `*next`, advancing it: the first from there whose broker is
    /// not `avoid` (the one that just failed), else simply the next one.
    fn round_robin(&self, next: &mut usize, avoid: Option<&str>) -> Option<&Target> {
        let len = self.targets.len();
        if len == 0 {
            return None;
        }
        let start = *next;
        let pick = (0..len)
            .map(|step| (start + step) % len)
            .find(|&i| avoid.is_none_or(|broker| self.targets[i].queue.broker_name() != broker))
            .unwrap_or(start % len);
        *next = (pick + 1) % len;
        self.targets.get(pick)
    }
}

/// The queue index of sharding key `key` among `queues` queues: `|hashCode| % queues` as Java's
/// `SelectMessageQueueByHash` (where `Math.abs(Integer.MIN_VALUE)` stays negative and Java would
/// fail, this takes 2^31). `None` when there are no queues.
pub fn shard_index(key: &str, queues: usize) -> Option<usize> {
    if queues == 0 {
        return None;
    }
    let hash = java_string_hash(key).unsigned_abs() as usize;
    Some(hash % queues)
}

/// The route cache of a producer: each topic's [`PublishRoute`], when it was fetched, and where
/// its round robin stands; and the topics the name servers last knew no usable route for, so
/// they are asked again soon but not by every send.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    ttl: Duration,
    retry_interval: Duration,
    topics: BTreeMap<String, CachedRoute>,
    /// Topics whose last lookup found no route or no writable queue, with when: looked up
    /// again from `retry_interval` after that, not before.
    unusable: BTreeMap<String, Instant>,
}

#[derive(Clone, Debug)]
struct CachedRoute {
    route: PublishRoute,
    fetched: Instant,
    /// Dropped by [`Routes::invalidate`]: fetch before the next use.
    stale: bool,
    next: usize,
}

impl Routes {
    /// An empty cache whose routes are fetched again after `ttl`, and a topic without a usable
    /// route again 200 ms after its last lookup ([`Routes::with_retry_interval`] sets that).
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            retry_interval: Duration::from_millis(200),
            topics: BTreeMap::new(),
            unusable: BTreeMap::new(),
        }
    }

    /// The cache with a topic that had no usable route looked up again `interval` after its
    /// last lookup (`ProducerConfig::route_retry_interval`).
    #[must_use]
    pub fn with_retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = interval;
        self
    }

    /// Whether `topic` needs fetching: never fetched, dropped by [`Routes::invalidate`], found
    /// without a usable route, or older than the time to live.
    pub fn needs_fetch(&self, topic: &str, now: Instant) -> bool {
        self.topics.get(topic).is_none_or(|cached| {
            cached.stale || now.saturating_duration_since(cached.fetched) >= self.ttl
        })
    }

    /// When `topic` may be looked up again: `None` for at once; else the last lookup found no
    /// usable route, and the next waits for the retry interval after it (sends wait for that
    /// rather than ask the name servers each, in a burst or in a loop).
    pub fn next_lookup(&self, topic: &str, now: Instant) -> Option<Instant> {
        let at = *self.unusable.get(topic)? + self.retry_interval;
        (at > now).then_some(at)
    }

    /// Stores a fetched route. The round robin keeps its position, so a refresh does not send
    /// the next message back to the first queue. A route without a writable queue is kept (it
    /// says why sends fail) but fetched again after the retry interval, not the time to live:
    /// a broker that restarts registers again within seconds.
    pub fn insert(&mut self, topic: &str, route: PublishRoute, now: Instant) {
        let next = self.topics.get(topic).map_or(0, |cached| cached.next);
        let usable = !route.targets.is_empty();
        if usable {
            self.unusable.remove(topic);
        } else {
            self.unusable.insert(topic.to_owned(), now);
        }
        self.topics.insert(
            topic.to_owned(),
            CachedRoute {
                route,
                fetched: now,
                stale: !usable,
                next,
            },
        );
    }

    /// The name servers know no route for `topic` at `now`: a route fetched before is kept
    /// (stale), and the topic is asked for again after the retry interval.
    pub fn no_route(&mut self, topic: &str, now: Instant) {
        self.invalidate(topic);
        self.unusable.insert(topic.to_owned(), now);
    }

    /// Marks `topic`'s route stale: the next attempt fetches it first. The stale route is kept
    /// meanwhile, as Java keeps its publish info when a refresh fails.
    pub fn invalidate(&mut self, topic: &str) {
        if let Some(cached) = self.topics.get_mut(topic) {
            cached.stale = true;
        }
    }

    /// Marks stale the route of every topic with a queue on the broker at `addr`, whose
    /// connection failed: the next send of each asks the name servers where to go, rather
    /// than waiting for the time to live (a restarted broker, or one that left the cluster).
    pub fn invalidate_broker(&mut self, addr: &str) {
        for cached in self.topics.values_mut() {
            if cached
                .route
                .targets
                .iter()
                .any(|target| target.addr == addr)
            {
                cached.stale = true;
            }
        }
    }

    /// The cached route of `topic`, fresh or not.
    pub fn get(&self, topic: &str) -> Option<&PublishRoute> {
        self.topics.get(topic).map(|cached| &cached.route)
    }

    /// The target of the next attempt of `prepared`: by its sharding key when it has one, else
    /// round robin avoiding `avoid_broker`.
    pub fn choose(
        &mut self,
        prepared: &Prepared,
        avoid_broker: Option<&str>,
    ) -> Result<Target, SendError> {
        let topic = prepared.topic();
        let Some(cached) = self.topics.get_mut(topic) else {
            return Err(SendError::NoRoute {
                topic: topic.to_owned(),
            });
        };
        let target = match prepared.sharding_key() {
            Some(key) => cached.route.by_key(key),
            None => cached.route.round_robin(&mut cached.next, avoid_broker),
        };
        target.cloned().ok_or_else(|| SendError::NoWritableQueue {
            topic: topic.to_owned(),
        })
    }
}

/// The `GET_ROUTEINFO_BY_TOPIC` request for `topic`.
pub fn route_request(topic: &str) -> Command {
    let header = GetRouteInfoRequest {
        topic: topic.to_owned(),
        accept_standard_json_only: Some(true),
    };
    Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header)
}

/// Reads a name server's answer to [`route_request`].
pub fn route_from_response(topic: &str, response: &Command) -> Result<PublishRoute, SendError> {
    read_route(topic, topic, response, PublishRoute::new)
}

/// Reads a name server's answer to `route_request(DEFAULT_TOPIC)`, asked because `topic` has no
/// route yet: the route [`PublishRoute::auto_created`] makes of it. [`SendError::NoRoute`]
/// names `topic` when the default topic has no route either (no broker auto-creates topics).
pub fn default_route_from_response(
    topic: &str,
    response: &Command,
) -> Result<PublishRoute, SendError> {
    read_route(topic, DEFAULT_TOPIC, response, PublishRoute::auto_created)
}

fn read_route(
    topic: &str,
    asked: &str,
    response: &Command,
    publish: impl FnOnce(&str, &TopicRouteData) -> PublishRoute,
) -> Result<PublishRoute, SendError> {
    match response.response_code() {
        ResponseCode::SUCCESS => {
            let route =
                TopicRouteData::decode(&response.body).map_err(|e| SendError::BadResponse {
                    peer: "name server".to_owned(),
                    detail: format!("route of {asked}: {e}"),
                })?;
            Ok(publish(topic, &route))
        }
        ResponseCode::TOPIC_NOT_EXIST => Err(SendError::NoRoute {
            topic: topic.to_owned(),
        }),
        code => Err(SendError::Refused {
            peer: "name server".to_owned(),
            code,
            remark: response.remark.clone().unwrap_or_default(),
        }),
    }
}
