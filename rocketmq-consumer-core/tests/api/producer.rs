//! The producer's state machine (`producer::Producer`) against hand-written name server and
//! broker answers: what it sends and on which connection, and how each send ends. The policy of
//! one send (`SendPlan`) is tested in `rocketmq-driver/tests/producer_routes.rs`; these pin what
//! the coordinator adds: one route lookup for a burst of sends, the shared request layer's
//! liveness rules (a lost connection's requests fail at once, the reconnect backoff, the
//! connect deadline, `close_after_timeouts`), and closing.
// These tests need one real `Instant` as the origin of their virtual clock; the core itself
// never reads the clock (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use proto::body::{BrokerData, QueueData, TopicRouteData};
use proto::headers::SendMessageResponse;
use proto::{Command, CommandHeader, RequestCode, ResponseCode};

use rocketmq_consumer_core::producer::{
    Prepared, Producer, ProducerConfig, ProducerMessage, ProducerOutput, SendError, SendId,
    SendResult, UniqueIds,
};
use rocketmq_consumer_core::{ConnId, Wire};

const NS: &str = "ns:9876";

/// Topic `T` with 2 queues on `broker-a` (at `a:10911`) and, when `two`, on `broker-b` (at
/// `b:10911`).
fn route(two: bool) -> TopicRouteData {
    let brokers: &[(&str, &str)] = if two {
        &[("broker-a", "a:10911"), ("broker-b", "b:10911")]
    } else {
        &[("broker-a", "a:10911")]
    };
    TopicRouteData {
        queue_datas: brokers
            .iter()
            .map(|(name, _)| QueueData {
                broker_name: (*name).to_owned(),
                read_queue_nums: 2,
                write_queue_nums: 2,
                perm: 6,
                topic_sys_flag: 0,
            })
            .collect(),
        broker_datas: brokers
            .iter()
            .map(|(name, addr)| BrokerData {
                broker_name: (*name).to_owned(),
                broker_addrs: [(0, (*addr).to_owned())].into(),
                ..BrokerData::default()
            })
            .collect(),
        ..TopicRouteData::default()
    }
}

struct Harness {
    now: Instant,
    producer: Producer,
    ids: UniqueIds,
    /// Connections asked for and not yet opened or failed, with their address.
    opening: Vec<(ConnId, String)>,
    /// Every open connection's address.
    open: Vec<(ConnId, String)>,
    /// Requests written and not answered yet.
    sent: Vec<(ConnId, Command)>,
    closed: Vec<ConnId>,
    results: Vec<(SendId, Result<SendResult, SendError>, String)>,
}

impl Harness {
    fn new(config: ProducerConfig) -> Self {
        Self {
            now: Instant::now(),
            producer: Producer::new(config).expect("a valid configuration"),
            ids: UniqueIds::new(&[10, 0, 0, 1], 1, 1, 0),
            opening: Vec::new(),
            open: Vec::new(),
            sent: Vec::new(),
            closed: Vec::new(),
            results: Vec::new(),
        }
    }

    fn config() -> ProducerConfig {
        ProducerConfig::new("g", vec![NS.to_owned()])
    }

    fn drain(&mut self) {
        while let Some(output) = self.producer.poll_output() {
            match output {
                ProducerOutput::Wire(Wire::Connect { conn, addr }) => {
                    self.opening.push((conn, addr))
                }
                ProducerOutput::Wire(Wire::Send { conn, command }) => {
                    self.sent.push((conn, command))
                }
                ProducerOutput::Wire(Wire::Close { conn }) => {
                    self.closed.push(conn);
                    self.open.retain(|(c, _)| *c != conn);
                    self.opening.retain(|(c, _)| *c != conn);
                }
                ProducerOutput::Sent { send, result, peer } => {
                    self.results.push((send, result, peer));
                }
            }
        }
    }

    fn send(&mut self, body: &str) -> SendId {
        let prepared = Prepared::single(
            self.producer.config(),
            "T",
            ProducerMessage::new(body.to_owned()),
            &mut self.ids,
            0,
        )
        .expect("a valid message");
        let id = self.producer.send(self.now, prepared);
        self.drain();
        id
    }

    /// Opens every connection asked for (the ones to `except` fail with "refused").
    fn connect_all(&mut self, except: &[&str]) {
        for (conn, addr) in std::mem::take(&mut self.opening) {
            if except.contains(&addr.as_str()) {
                self.producer
                    .handle_disconnected(self.now, conn, "connect: refused");
            } else {
                self.producer.handle_connected(self.now, conn);
                self.open.push((conn, addr));
            }
        }
        self.drain();
    }

    fn addr_of(&self, conn: ConnId) -> &str {
        self.open
            .iter()
            .find(|(c, _)| *c == conn)
            .map_or("", |(_, a)| a.as_str())
    }

    /// The unanswered requests with `code`, as (address, request).
    fn requests(&self, code: RequestCode) -> Vec<(String, Command)> {
        self.sent
            .iter()
            .filter(|(_, c)| c.request_code() == code)
            .map(|(conn, c)| (self.addr_of(*conn).to_owned(), c.clone()))
            .collect()
    }

    /// Takes the first unanswered request with `code`.
    fn take(&mut self, code: RequestCode) -> (ConnId, Command) {
        let at = self
            .sent
            .iter()
            .position(|(_, c)| c.request_code() == code)
            .unwrap_or_else(|| panic!("no {code} among {:?}", self.sent));
        self.sent.remove(at)
    }

    fn respond(&mut self, (conn, request): (ConnId, Command), mut response: Command) {
        response.opaque = request.opaque;
        self.producer.handle_command(self.now, conn, response);
        self.drain();
    }

    fn answer_route(&mut self, two: bool) {
        let request = self.take(RequestCode::GET_ROUTEINFO_BY_TOPIC);
        let response = Command::response(ResponseCode::SUCCESS, 0).with_body(route(two).encode());
        self.respond(request, response);
    }

    /// Answers the first unanswered route lookup: the name server knows no such topic.
    fn answer_no_route(&mut self) {
        let request = self.take(RequestCode::GET_ROUTEINFO_BY_TOPIC);
        self.respond(request, Command::response(ResponseCode::TOPIC_NOT_EXIST, 0));
    }

    fn answer_send(&mut self) {
        let request = self.take(RequestCode::SEND_MESSAGE_V2);
        let mut response = Command::response(ResponseCode::SUCCESS, 0);
        response.ext_fields = SendMessageResponse {
            msg_id: "OFFSET-ID".to_owned(),
            queue_id: 0,
            queue_offset: 7,
            ..SendMessageResponse::default()
        }
        .to_ext_fields();
        self.respond(request, response);
    }

    /// One send stored, so the name server's and the broker's connections are open and the
    /// route is cached; returns the connection to the broker (`a:10911`).
    fn warm_up(&mut self) -> ConnId {
        self.send("warm");
        self.connect_all(&[]);
        self.answer_route(false);
        self.connect_all(&[]);
        self.answer_send();
        self.open
            .iter()
            .find(|(_, a)| a == "a:10911")
            .map(|(c, _)| *c)
            .expect("the broker's connection is open")
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.producer.handle_timeout(self.now);
        self.drain();
    }

    fn result(&self, send: SendId) -> Option<&(SendId, Result<SendResult, SendError>, String)> {
        self.results.iter().find(|(id, _, _)| *id == send)
    }
}

#[test]
fn a_send_looks_up_the_route_then_stores_the_message() {
    let mut h = Harness::new(Harness::config());
    let send = h.send("hello");
    assert_eq!(h.opening.len(), 1, "the name server is dialled");
    assert!(h.sent.is_empty(), "nothing is written before it opens");
    h.connect_all(&[]);
    h.answer_route(false);
    h.connect_all(&[]);
    let sends = h.requests(RequestCode::SEND_MESSAGE_V2);
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0].0, "a:10911");
    h.answer_send();
    let (_, result, peer) = h.result(send).expect("the send is over");
    let result = result.as_ref().expect("stored");
    assert_eq!(result.queue_offset, 7);
    assert_eq!(peer, "a:10911");
    assert_eq!(h.producer.sends_in_flight(), 0);
    // What deadlines are left (connect deadlines of connections that opened) do nothing.
    h.advance(Duration::from_secs(10));
    assert_eq!((h.closed.len(), h.results.len()), (0, 1));

    // The route is cached: the next send goes straight to the broker.
    let again = h.send("again");
    assert!(h.requests(RequestCode::GET_ROUTEINFO_BY_TOPIC).is_empty());
    h.answer_send();
    assert!(h.result(again).is_some_and(|(_, r, _)| r.is_ok()));
}

#[test]
fn a_burst_of_sends_to_a_new_topic_asks_the_name_server_once() {
    let mut h = Harness::new(Harness::config());
    let burst: Vec<SendId> = (0..5).map(|i| h.send(&format!("m{i}"))).collect();
    h.connect_all(&[]);
    assert_eq!(h.requests(RequestCode::GET_ROUTEINFO_BY_TOPIC).len(), 1);
    h.answer_route(false);
    h.connect_all(&[]);
    assert_eq!(h.requests(RequestCode::SEND_MESSAGE_V2).len(), 5);
    for _ in 0..5 {
        h.answer_send();
    }
    for send in burst {
        assert!(h.result(send).is_some_and(|(_, r, _)| r.is_ok()));
    }
}

#[test]
fn a_lost_connection_fails_its_send_at_once_and_it_goes_to_the_other_broker() {
    let mut h = Harness::new(Harness::config());
    let send = h.send("m");
    h.connect_all(&[]);
    h.answer_route(true);
    h.connect_all(&[]);
    let (conn, _) = h.take(RequestCode::SEND_MESSAGE_V2);
    let first = h.addr_of(conn).to_owned();
    h.producer
        .handle_disconnected(h.now, conn, "read: connection reset");
    h.drain();
    // Retried at once, on the other broker (after a fresh route: the failure suggests it
    // moved).
    if !h.requests(RequestCode::GET_ROUTEINFO_BY_TOPIC).is_empty() {
        h.answer_route(true);
    }
    h.connect_all(&[]);
    let retry = h.requests(RequestCode::SEND_MESSAGE_V2);
    assert_eq!(retry.len(), 1, "{:?}", h.sent);
    assert_ne!(retry[0].0, first, "the failed broker is avoided");
    h.answer_send();
    assert!(h.result(send).is_some_and(|(_, r, _)| r.is_ok()));
}

#[test]
fn a_refused_broker_is_dialled_again_only_after_the_reconnect_backoff() {
    let mut h = Harness::new(Harness::config());
    let send = h.send("m");
    h.connect_all(&[]);
    h.answer_route(false);
    let dials_before = h.opening.len();
    assert_eq!(dials_before, 1);
    h.connect_all(&["a:10911"]);
    // The only broker refused: the retry waits for the backoff instead of failing at once.
    assert!(h.result(send).is_none(), "{:?}", h.results);
    assert!(h.opening.is_empty(), "not dialled again at once");
    h.advance(Duration::from_millis(999));
    assert!(h.opening.is_empty(), "not before the backoff");
    h.advance(Duration::from_millis(1));
    // A route refresh may come first (the failure suggests the route moved).
    h.connect_all(&[]);
    if !h.requests(RequestCode::GET_ROUTEINFO_BY_TOPIC).is_empty() {
        h.answer_route(false);
        h.advance(Duration::ZERO);
    }
    h.connect_all(&[]);
    assert_eq!(h.requests(RequestCode::SEND_MESSAGE_V2).len(), 1);
    h.answer_send();
    assert!(h.result(send).is_some_and(|(_, r, _)| r.is_ok()));
}

#[test]
fn a_silent_broker_connection_is_closed_after_three_timeouts_in_a_row() {
    let mut config = Harness::config();
    config.retries = 0;
    let mut h = Harness::new(config);
    let broker_conn = h.warm_up();
    // The broker stops answering: three sends time out (3 s each), the connection is closed.
    for i in 0..3 {
        let send = h.send(&format!("lost{i}"));
        assert!(h.closed.is_empty(), "kept after {i} timeouts");
        h.advance(Duration::from_secs(3));
        assert!(matches!(
            h.result(send),
            Some((_, Err(SendError::Timeout { .. }), _))
        ));
        h.sent.clear();
    }
    assert_eq!(h.closed, [broker_conn]);
    // The next send asks for the route again (the broker may have left it), then opens a new
    // connection (after the backoff) and works.
    let send = h.send("after");
    h.answer_route(false);
    h.advance(Duration::from_secs(1));
    h.connect_all(&[]);
    h.answer_send();
    assert!(h.result(send).is_some_and(|(_, r, _)| r.is_ok()));
}

#[test]
fn a_connection_that_never_opens_is_given_up_at_the_connect_deadline() {
    let mut h = Harness::new(Harness::config());
    let send = h.send("m");
    assert_eq!(h.opening.len(), 1);
    // The name server's connection hangs: it is closed at 3 s, and the send has no other
    // name server to ask, so it fails with the reason.
    h.advance(Duration::from_secs(3));
    assert_eq!(h.closed.len(), 1);
    let (_, result, peer) = h.result(send).expect("over by its deadline");
    assert_eq!(peer, NS);
    assert!(
        matches!(result, Err(SendError::Timeout { peer }) if peer == NS)
            || matches!(result, Err(SendError::Disconnected { reason, .. }) if reason.contains("connect timed out")),
        "{result:?}"
    );
    // The next send dials again once the backoff has passed.
    let next = h.send("next");
    assert!(h.opening.is_empty(), "not within the backoff");
    h.advance(Duration::from_secs(1));
    assert_eq!(h.opening.len(), 1);
    assert!(h.result(next).is_none());
}

#[test]
fn closing_fails_sends_in_flight_and_refuses_later_ones() {
    let mut h = Harness::new(Harness::config());
    let in_flight = h.send("m");
    h.connect_all(&[]);
    h.producer.close();
    h.drain();
    assert_eq!(h.closed.len(), 1, "the name server's connection is closed");
    assert!(matches!(
        h.result(in_flight),
        Some((_, Err(SendError::Disconnected { .. }), _))
    ));
    let later = h.send("late");
    assert!(matches!(
        h.result(later),
        Some((_, Err(SendError::Closed), _))
    ));
    assert_eq!(h.producer.poll_timeout(), None);
}

/// A broker that restarts drops out of the name server's routes while it is down: a send that
/// finds no route then (neither its topic nor the default topic has one) asks the name server
/// again every `route_retry_interval` until its send timeout, one lookup at a time for every
/// send of the topic, instead of failing at once; it is stored as soon as the broker is back
/// in the routes (Java's `tryToFindTopicPublishInfo` asks again on every send too, but fails
/// the send when nothing is there).
#[test]
fn a_send_without_a_route_asks_again_until_the_broker_is_back() {
    let mut config = Harness::config();
    config.send_timeout = Duration::from_secs(10);
    let mut h = Harness::new(config);
    let broker = h.warm_up();

    // The broker is killed: its connection drops, and the name server forgets it.
    h.producer
        .handle_disconnected(h.now, broker, "read: connection reset");
    h.drain();
    let first = h.send("during-1");
    assert_eq!(
        h.requests(RequestCode::GET_ROUTEINFO_BY_TOPIC).len(),
        1,
        "the lost broker's topic is looked up again at once"
    );
    h.answer_no_route();
    h.answer_no_route(); // the default topic, TBW102
    let second = h.send("during-2");
    assert!(
        h.sent.is_empty(),
        "a send right after an empty answer waits for the next lookup: {:?}",
        h.sent
    );
    h.advance(Duration::from_millis(199));
    assert!(h.sent.is_empty(), "not before the retry interval");
    h.advance(Duration::from_millis(1));
    assert_eq!(
        h.requests(RequestCode::GET_ROUTEINFO_BY_TOPIC).len(),
        1,
        "one lookup for both waiting sends"
    );
    h.answer_no_route();
    h.answer_no_route();
    assert!(h.results.len() == 1, "both still wait: {:?}", h.results);

    // The broker registers again: the next lookup finds it, and both sends are stored.
    h.advance(Duration::from_millis(200));
    h.answer_route(false);
    h.advance(Duration::from_secs(1)); // the reconnect backoff of the lost broker
    h.connect_all(&[]);
    assert_eq!(h.requests(RequestCode::SEND_MESSAGE_V2).len(), 2);
    h.answer_send();
    h.answer_send();
    for send in [first, second] {
        assert!(
            h.result(send).is_some_and(|(_, r, _)| r.is_ok()),
            "{:?}",
            h.results
        );
    }
}

/// A send whose topic never gets a route fails with `NoRoute` at its send timeout, having
/// asked the name server no more often than every `route_retry_interval`.
#[test]
fn a_send_without_a_route_fails_at_its_send_timeout() {
    let mut h = Harness::new(Harness::config());
    let send = h.send("m");
    h.connect_all(&[]);
    let mut lookups = 0;
    while h.result(send).is_none() {
        assert!(lookups < 40, "still asking after {lookups} lookups");
        if h.requests(RequestCode::GET_ROUTEINFO_BY_TOPIC).is_empty() {
            h.advance(Duration::from_millis(50));
        } else {
            lookups += 1;
            h.answer_no_route();
        }
    }
    // Two lookups (the topic, the default topic) every 200 ms for 3 s.
    assert!((28..=32).contains(&lookups), "{lookups} lookups");
    assert!(matches!(
        h.result(send),
        Some((_, Err(SendError::NoRoute { topic }), _)) if topic == "T"
    ));
}

/// A broker that refuses connections (down, or restarting) is tried again after each
/// reconnect backoff until the send timeout, without using up the send's retries: nothing was
/// written, so nothing can be stored twice.
#[test]
fn refused_connections_do_not_use_up_the_retries() {
    let mut config = Harness::config();
    config.retries = 0;
    config.send_timeout = Duration::from_secs(10);
    let mut h = Harness::new(config);
    let send = h.send("m");
    h.connect_all(&[]);
    h.answer_route(false);
    for refusal in 0..3 {
        assert_eq!(h.opening.len(), 1, "dialled again after refusal {refusal}");
        h.connect_all(&["a:10911"]);
        assert!(h.result(send).is_none(), "{:?}", h.results);
        // The failure may mean the route moved: it is asked for again.
        h.answer_route(false);
        h.advance(Duration::from_secs(1));
    }
    h.connect_all(&[]);
    h.answer_send();
    let (_, result, _) = h.result(send).expect("the send is over");
    let stored = result.as_ref().expect("stored once the broker accepts");
    assert_eq!(stored.retries, 3, "each refused connection was a retry");
}
