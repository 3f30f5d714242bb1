//! Helpers shared by the real-broker scenarios in this directory (an adapter's test binary
//! includes this directory as one module, and the scenarios use this file as
//! `super::broker_scenario`): a topic to send tagged messages to with the blocking client, a
//! push consumer whose handler forwards every body to a channel, and collectors that fail loudly
//! with the missing, unexpected and duplicated bodies.
#![allow(dead_code, reason = "each scenario uses a part of these helpers")]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use driver::prelude::*;
use futures_channel::mpsc::UnboundedReceiver;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use proto::message::OutgoingMessage;
use proto::{Command, RequestCode, ResponseCode};
use rmq_cli::blocking::BlockingClient;
use rocketmq_tests::{TIMEOUT, any_broker, create_topic, namesrv, send_header, unique};

/// How long any expected set of messages (or queue assignment) may take to arrive.
pub(crate) const WAIT: Duration = Duration::from_secs(60);
/// How long a scenario keeps listening after the expected messages, to catch extra ones.
pub(crate) const QUIET: Duration = Duration::from_secs(3);

/// A new topic on the local cluster's first broker.
pub(crate) struct Topic {
    /// The name server's address.
    pub(crate) namesrv: String,
    /// The topic's name.
    pub(crate) name: String,
    broker: String,
    queues: i32,
}

impl Topic {
    /// Creates a uniquely named topic with `queues` queues and waits until it is routed. Fails
    /// the test when the cluster is not running (see `rocketmq_tests::namesrv`).
    pub(crate) fn create(prefix: &str, queues: i32) -> Self {
        let namesrv = namesrv();
        let broker = any_broker(&namesrv);
        let name = unique(prefix);
        create_topic(&namesrv, &broker, &name, queues);
        Self {
            namesrv,
            name,
            broker,
            queues,
        }
    }

    /// Streams `count` messages from a thread of its own at a steady pace, `per_tick` every
    /// `tick`, message `i` with body `{topic}/{i}` to queue `i % queues`; the thread returns
    /// the bodies sent.
    pub(crate) fn stream(
        self: &Arc<Self>,
        count: usize,
        per_tick: usize,
        tick: Duration,
    ) -> std::thread::JoinHandle<BTreeSet<String>> {
        let topic = Arc::clone(self);
        let per_tick = per_tick.max(1);
        std::thread::spawn(move || {
            let mut client = topic.client();
            let started = std::time::Instant::now();
            let mut bodies = BTreeSet::new();
            for i in 0..count {
                if i % per_tick == 0 {
                    let ticks = u32::try_from(i / per_tick).unwrap_or(u32::MAX);
                    let due = started + tick * ticks;
                    std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
                }
                let body = format!("{}/{i}", topic.name);
                let queue = i32::try_from(i).unwrap_or(0) % topic.queues.max(1);
                topic.send_to(&mut client, queue, &body, None);
                bodies.insert(body);
            }
            bodies
        })
    }

    /// Topic `name`, already created with `queues` queues on the broker at `broker`, which
    /// the name server at `namesrv` knows (a cluster other than the local one).
    pub(crate) fn at(namesrv: &str, broker: &str, name: &str, queues: i32) -> Self {
        Self {
            namesrv: namesrv.to_owned(),
            name: name.to_owned(),
            broker: broker.to_owned(),
            queues,
        }
    }

    /// Sends `count` messages with bodies `{topic}/{batch}/{i}` and tag `tag` (none when
    /// `None`), spread round-robin over the queues, and returns their bodies.
    pub(crate) fn send(&self, batch: &str, count: usize, tag: Option<&str>) -> BTreeSet<String> {
        self.send_with(batch, count, |_, message| {
            if let Some(tag) = tag {
                message.set_tags(tag);
            }
        })
    }

    /// Sends `count` messages as [`Topic::send`] does, each adjusted by `adjust(i, message)`
    /// (tags, properties) before it goes; returns their bodies.
    pub(crate) fn send_with(
        &self,
        batch: &str,
        count: usize,
        adjust: impl Fn(usize, &mut OutgoingMessage),
    ) -> BTreeSet<String> {
        let mut client = self.client();
        let mut bodies = BTreeSet::new();
        for i in 0..count {
            let body = format!("{}/{batch}/{i}", self.name);
            let mut message = OutgoingMessage::new(self.name.clone(), body.clone());
            adjust(i, &mut message);
            let queue = i32::try_from(i).unwrap_or(0) % self.queues;
            self.send_message(&mut client, queue, &message, &body);
            bodies.insert(body);
        }
        bodies
    }
}

impl Topic {
    /// The broker's address.
    pub(crate) fn broker(&self) -> &str {
        &self.broker
    }

    /// The broker's name (`broker-a`), as queues of this topic carry it.
    pub(crate) fn broker_name(&self) -> String {
        let route = rocketmq_tests::route(&self.namesrv, &self.name)
            .unwrap_or_else(|| panic!("topic {} has no route", self.name));
        route
            .broker_datas
            .iter()
            .find(|b| b.broker_addrs.values().any(|addr| *addr == self.broker))
            .map(|b| b.broker_name.clone())
            .unwrap_or_else(|| panic!("no broker of {route:?} is at {}", self.broker))
    }

    /// A connection to the broker, for [`Topic::send_to`].
    pub(crate) fn client(&self) -> BlockingClient {
        BlockingClient::connect(&self.broker, TIMEOUT)
            .unwrap_or_else(|e| panic!("connect to the broker at {}: {e}", self.broker))
    }

    /// Sends one message with `body` (and `keys`, when given) to queue `queue` over `client`.
    pub(crate) fn send_to(
        &self,
        client: &mut BlockingClient,
        queue: i32,
        body: &str,
        keys: Option<&str>,
    ) {
        let mut message = OutgoingMessage::new(self.name.clone(), body.to_owned());
        if let Some(keys) = keys {
            message.set_keys(keys);
        }
        self.send_message(client, queue, &message, body);
    }

    /// Sends `message`, whose body is `body`, to queue `queue` over `client`, and checks that
    /// the broker stored it.
    fn send_message(
        &self,
        client: &mut BlockingClient,
        queue: i32,
        message: &OutgoingMessage,
        body: &str,
    ) {
        let header = send_header(&self.name, queue, 0, message.encoded_properties());
        let request =
            Command::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(body.to_owned());
        let response = client
            .call(request, TIMEOUT)
            .unwrap_or_else(|e| panic!("send {body}: {e}"));
        assert_eq!(
            response.response_code(),
            ResponseCode::SUCCESS,
            "send {body}: {response:?}"
        );
    }
}

/// The next offset to be written in queue `queue` of `topic` on the broker at `broker`, or the
/// broker's refusal (a topic it does not have).
pub(crate) fn max_offset(broker: &str, topic: &str, queue: i32) -> Result<i64, String> {
    use proto::headers::{GetMaxOffsetRequest, GetMaxOffsetResponse};
    let request = Command::request(
        RequestCode::GET_MAX_OFFSET,
        &GetMaxOffsetRequest {
            topic: topic.to_owned(),
            queue_id: queue,
            committed: Some(true),
        },
    );
    let response = rocketmq_tests::call(broker, request);
    if response.response_code() != ResponseCode::SUCCESS {
        return Err(format!("{response:?}"));
    }
    response
        .header::<GetMaxOffsetResponse>()
        .map(|h| h.offset)
        .map_err(|e| format!("{e}: {response:?}"))
}

/// The offset the broker at `broker` holds for `group` on queue `queue` of `topic` (`None`:
/// the group committed none there), or its refusal.
pub(crate) fn group_offset(
    broker: &str,
    group: &str,
    topic: &str,
    queue: i32,
) -> Result<Option<i64>, String> {
    use proto::headers::{QueryConsumerOffsetRequest, QueryConsumerOffsetResponse};
    let request = Command::request(
        RequestCode::QUERY_CONSUMER_OFFSET,
        &QueryConsumerOffsetRequest {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id: queue,
            set_zero_if_not_found: Some(false),
        },
    );
    let response = rocketmq_tests::call(broker, request);
    match response.response_code() {
        ResponseCode::SUCCESS => response
            .header::<QueryConsumerOffsetResponse>()
            .map(|h| Some(h.offset))
            .map_err(|e| format!("{e}: {response:?}")),
        ResponseCode::QUERY_NOT_FOUND => Ok(None),
        _ => Err(format!("{response:?}")),
    }
}

/// The queue ids of one topic a consumer owns, kept up to date from its events.
#[derive(Clone, Default)]
pub(crate) struct Owned(Arc<Mutex<BTreeSet<i32>>>);

impl Owned {
    /// The queue ids owned now.
    pub(crate) fn get(&self) -> BTreeSet<i32> {
        self.0.lock().map(|q| q.clone()).unwrap_or_default()
    }
}

/// A started push consumer and the bodies its handler received, in delivery order.
pub(crate) struct Consuming {
    /// The running consumer.
    pub(crate) running: RunningConsumer,
    /// The queues of the subscribed topic it owns.
    pub(crate) owned: Owned,
    bodies: UnboundedReceiver<String>,
}

/// Starts a push consumer of `group` on runtime `R`, subscribed to `topic` with `expression`,
/// whose handler forwards every body and acknowledges it.
pub(crate) fn start<R: Runtime>(
    topic: &Topic,
    group: &str,
    expression: &str,
    from: ConsumeFrom,
) -> Consuming {
    start_built(topic, builder::<R>(topic, group, expression, from))
}

/// A builder for a consumer of `group` subscribed to `topic` with `expression`, starting at
/// `from`, for a scenario to adjust before [`start_built`].
pub(crate) fn builder<R: Runtime>(
    topic: &Topic,
    group: &str,
    expression: &str,
    from: ConsumeFrom,
) -> driver::PushConsumerBuilder<R> {
    builder_at(&topic.namesrv, &topic.name, group, expression, from)
}

/// [`builder`] for a topic made elsewhere, known by the name server at `namesrv`.
pub(crate) fn builder_at<R: Runtime>(
    namesrv: &str,
    topic: &str,
    group: &str,
    expression: &str,
    from: ConsumeFrom,
) -> driver::PushConsumerBuilder<R> {
    driver::PushConsumer::<R>::builder(group)
        .name_server(namesrv)
        .subscribe(topic, expression)
        .consume_from(from)
}

/// Builds the consumer `builder` configures, tracking the queues of `topic` it owns.
pub(crate) fn build_tracked<R: Runtime>(
    topic: &Topic,
    builder: driver::PushConsumerBuilder<R>,
) -> (driver::PushConsumer<R>, Owned) {
    let owned = Owned::default();
    let consumer = builder
        .build()
        .expect("the consumer's configuration is valid")
        .on_event(owned.tracker(&topic.name));
    (consumer, owned)
}

/// Starts `consumer` with concurrent handlers that send `forward(message)` for every message
/// to the returned channel and acknowledge it.
pub(crate) fn start_forwarding<R: Runtime, T: Send + 'static>(
    consumer: driver::PushConsumer<R>,
    forward: impl Fn(&Message) -> T + Send + Sync + 'static,
) -> (RunningConsumer, UnboundedReceiver<T>) {
    let (tx, forwarded) = futures_channel::mpsc::unbounded::<T>();
    let running = consumer.start_concurrently(move |messages: Messages| {
        for message in &messages {
            let _ = tx.unbounded_send(forward(message));
        }
        future::ready(ConsumeOutcome::Success)
    });
    (running, forwarded)
}

/// A message's body, as text.
pub(crate) fn body_of(message: &Message) -> String {
    String::from_utf8_lossy(message.body()).into_owned()
}

/// Starts the consumer `builder` configures with concurrent handlers that forward every body
/// and acknowledge it; its owned queues of `topic` are tracked.
pub(crate) fn start_built<R: Runtime>(
    topic: &Topic,
    builder: driver::PushConsumerBuilder<R>,
) -> Consuming {
    let (consumer, owned) = build_tracked(topic, builder);
    let (running, bodies) = start_forwarding(consumer, body_of);
    Consuming {
        running,
        owned,
        bodies,
    }
}

/// Shuts `running` down and returns its report, checking that every commit was confirmed.
pub(crate) async fn shutdown_committed(running: RunningConsumer) -> ShutdownReport {
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    assert!(
        report.uncommitted.is_empty(),
        "queues left uncommitted: {report:?}"
    );
    report
}

impl Owned {
    /// An event observer that keeps this set up to date with the owned queues of `topic`.
    pub(crate) fn tracker(&self, topic: &str) -> impl Fn(&Event) + Send + Sync + 'static {
        let observed = self.clone();
        let name = topic.to_owned();
        move |event| {
            let Ok(mut owned) = observed.0.lock() else {
                return;
            };
            match event {
                Event::Assigned(queues) => owned.extend(
                    queues
                        .iter()
                        .filter(|q| q.topic() == name)
                        .map(MessageQueue::queue_id),
                ),
                Event::Revoked(queues) => {
                    for queue in queues.iter().filter(|q| q.topic() == name) {
                        owned.remove(&queue.queue_id());
                    }
                }
                _ => {}
            }
        }
    }
}

impl Consuming {
    /// Collects deliveries until every body of `expected` arrived, panicking after [`WAIT`]
    /// with the missing ones. Returns every delivery (unexpected ones included).
    pub(crate) async fn until<R: Runtime>(&mut self, expected: &BTreeSet<String>) -> Vec<String> {
        let runtime = R::default();
        let mut deadline = runtime.sleep_until(runtime.now() + WAIT);
        let mut deliveries = Vec::new();
        let mut seen = BTreeSet::new();
        while !expected.is_subset(&seen) {
            match future::select(self.bodies.next(), deadline.as_mut()).await {
                Either::Left((Some(body), _)) => {
                    seen.insert(body.clone());
                    deliveries.push(body);
                }
                Either::Left((None, _)) => panic!("the handler was dropped while consuming"),
                Either::Right(((), _)) => panic!(
                    "{} of {} expected messages arrived within {WAIT:?}; missing: {:?}; \
                     unexpected: {:?}",
                    expected.intersection(&seen).count(),
                    expected.len(),
                    expected.difference(&seen).collect::<Vec<_>>(),
                    seen.difference(expected).collect::<Vec<_>>(),
                ),
            }
        }
        deliveries
    }

    /// Collects the deliveries that arrive within `window`.
    pub(crate) async fn during<R: Runtime>(&mut self, window: Duration) -> Vec<String> {
        let runtime = R::default();
        let mut deadline = runtime.sleep_until(runtime.now() + window);
        let mut deliveries = Vec::new();
        loop {
            match future::select(self.bodies.next(), deadline.as_mut()).await {
                Either::Left((Some(body), _)) => deliveries.push(body),
                Either::Left((None, _)) | Either::Right(((), _)) => return deliveries,
            }
        }
    }

    /// Collects until every body of `expected` arrived, then for [`QUIET`] more, and asserts
    /// that exactly `expected` arrived, each once.
    pub(crate) async fn exactly<R: Runtime>(&mut self, expected: &BTreeSet<String>, what: &str) {
        let mut deliveries = self.until::<R>(expected).await;
        deliveries.extend(self.during::<R>(QUIET).await);
        assert_exactly_once(&deliveries, expected, what);
    }

    /// Waits until the consumer owns exactly the queue ids `queues`, panicking after [`WAIT`].
    pub(crate) async fn owns<R: Runtime>(&self, queues: &BTreeSet<i32>) {
        wait_for::<R>(&format!("the consumer owns queues {queues:?}"), || {
            self.owned.get() == *queues
        })
        .await;
    }

    /// Shuts the consumer down and returns its report, checking that every commit was
    /// confirmed.
    pub(crate) async fn shutdown(self) -> ShutdownReport {
        shutdown_committed(self.running).await
    }

    /// Shuts the consumer down like [`Consuming::shutdown`] and returns, with the report, the
    /// bodies it handled that were not read yet (up to its last delivery), so a scenario that
    /// counts deliveries misses none.
    pub(crate) async fn shutdown_with_rest(self) -> (ShutdownReport, Vec<String>) {
        let Self {
            running,
            mut bodies,
            ..
        } = self;
        let report = shutdown_committed(running).await;
        let mut rest = Vec::new();
        while let Ok(body) = bodies.try_recv() {
            rest.push(body);
        }
        (report, rest)
    }
}

/// Reads what `items` brings until `done(read so far)` holds or `window` passed; returns it.
pub(crate) async fn read_until<R: Runtime, T>(
    items: &mut UnboundedReceiver<T>,
    window: Duration,
    done: impl Fn(&[T]) -> bool,
) -> Vec<T> {
    let runtime = R::default();
    let deadline = runtime.now() + window;
    let mut got = Vec::new();
    while !done(&got) {
        let mut timer = runtime.sleep_until(deadline);
        match future::select(items.next(), timer.as_mut()).await {
            Either::Left((Some(item), _)) => got.push(item),
            Either::Left((None, _)) | Either::Right(((), _)) => break,
        }
    }
    got
}

/// Polls `condition` every 100 ms until it holds, panicking with `what` after [`WAIT`].
pub(crate) async fn wait_for<R: Runtime>(what: &str, mut condition: impl FnMut() -> bool) {
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    while !condition() {
        assert!(runtime.now() < deadline, "timed out after {WAIT:?}: {what}");
        sleep::<R>(Duration::from_millis(100)).await;
    }
}

/// Sleeps on runtime `R`.
pub(crate) async fn sleep<R: Runtime>(duration: Duration) {
    let runtime = R::default();
    runtime.sleep_until(runtime.now() + duration).await;
}

/// Asserts that `deliveries` hold exactly the bodies of `expected`, each once, naming the
/// missing, unexpected and duplicated bodies otherwise.
pub(crate) fn assert_exactly_once(deliveries: &[String], expected: &BTreeSet<String>, what: &str) {
    let mut counts = BTreeMap::<&str, usize>::new();
    for body in deliveries {
        *counts.entry(body).or_default() += 1;
    }
    let missing: Vec<_> = expected
        .iter()
        .filter(|b| !counts.contains_key(b.as_str()))
        .collect();
    let unexpected: Vec<_> = counts.keys().filter(|b| !expected.contains(**b)).collect();
    let duplicated: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty() && duplicated.is_empty(),
        "{what}: {} deliveries of {} expected bodies; missing: {missing:?}; unexpected: \
         {unexpected:?}; duplicated (body, times): {duplicated:?}",
        deliveries.len(),
        expected.len(),
    );
}
