//! The producer's routes (`consumer_core::producer`): a `PublishRoute` built from the name
//! server's route data, and the route request and its responses; then the route cache and queue
//! choice (`Routes`): round robin in Java's order, skipping a failed broker; sharding keys pinned
//! to their queue; expiry and invalidation; and a send's whole plan (`SendPlan`): name servers
//! in turn, the auto-create fallback, a stale route when no name server answers, the failed
//! broker avoided on a fresh route, attempts and the deadline bounding retries. These live here rather than beside the code because
//! a `Routes` needs an `Instant`, and the core's sources may not read the clock, not even in
//! tests; the route tests that need no clock are here too, sharing the `route` fixture.

use std::time::{Duration, Instant};

use consumer_core::producer::{
    DEFAULT_TOPIC, Prepared, ProducerConfig, ProducerMessage, PublishRoute, Routes, SendError,
    SendPlan, SendStatus, Step, UniqueIds, default_route_from_response, route_from_response,
    route_request, shard_index,
};
use proto::body::{BrokerData, QueueData, TopicRouteData};
use proto::headers::{GetRouteInfoRequest, SendMessageResponse};
use proto::{Command, RequestCode, ResponseCode};

/// The route data of topic `T` over `brokers` (name, queues), read-write; broker `i`'s master
/// is at `10.0.0.{i}:10911`.
fn route(brokers: &[(&str, i32)]) -> TopicRouteData {
    TopicRouteData {
        queue_datas: brokers
            .iter()
            .map(|&(name, queues)| QueueData {
                broker_name: name.to_owned(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: 6,
                topic_sys_flag: 0,
            })
            .collect(),
        broker_datas: brokers
            .iter()
            .enumerate()
            .map(|(i, &(name, _))| BrokerData {
                broker_name: name.to_owned(),
                broker_addrs: [(0, format!("10.0.0.{i}:10911"))].into(),
                ..BrokerData::default()
            })
            .collect(),
        ..TopicRouteData::default()
    }
}

/// A message of topic `T` ready to send, with sharding key `key` if given.
fn prepared(key: Option<&str>) -> Prepared {
    let config = ProducerConfig::new("g", vec!["ns:9876".to_owned()]);
    let mut ids = UniqueIds::new(&[10, 0, 0, 1], 1, 1, 0);
    let mut message = ProducerMessage::new("body");
    if let Some(key) = key {
        message = message.with_sharding_key(key);
    }
    Prepared::single(&config, "T", message, &mut ids, 0).expect("valid message")
}

/// A route cache (30 s time to live) holding topic `T` over `brokers` (see [`route`]), and the
/// time it was cached.
fn cached(brokers: &[(&str, i32)]) -> (Routes, Instant) {
    let now = Instant::now();
    let mut routes = Routes::new(Duration::from_secs(30));
    routes.insert("T", PublishRoute::new("T", &route(brokers)), now);
    (routes, now)
}

/// A topic no broker has yet is written where `TBW102` lives, at most four queues per broker
/// (Java's `defaultTopicQueueNums`), under the new topic's name; when `TBW102` has no route
/// either, the error names the topic the user asked for.
#[test]
fn a_new_topic_borrows_the_default_topics_route() {
    let default = route(&[("b", 8), ("a", 2)]);
    let response = Command::response(ResponseCode::SUCCESS, 1).with_body(default.encode());
    let publish = default_route_from_response("Fresh", &response).expect("default route");
    let queues: Vec<_> = publish
        .targets()
        .iter()
        .map(|t| (t.queue.topic(), t.queue.broker_name(), t.queue.queue_id()))
        .collect();
    let mut expected = vec![("Fresh", "a", 0), ("Fresh", "a", 1)];
    expected.extend((0..4).map(|id| ("Fresh", "b", id)));
    assert_eq!(queues, expected);

    let missing = Command::response(ResponseCode::TOPIC_NOT_EXIST, 1);
    match default_route_from_response("Fresh", &missing) {
        Err(SendError::NoRoute { topic }) => assert_eq!(topic, "Fresh"),
        other => panic!("expected NoRoute for the asked topic, got {other:?}"),
    }
    assert_eq!(DEFAULT_TOPIC, "TBW102");
}

#[test]
fn publish_route_orders_brokers_and_needs_masters() {
    let mut data = route(&[("b", 2), ("a", 1)]);
    data.queue_datas.push(QueueData {
        broker_name: "no-master".to_owned(),
        read_queue_nums: 4,
        write_queue_nums: 4,
        perm: 6,
        topic_sys_flag: 0,
    });
    let publish = PublishRoute::new("T", &data);
    let names: Vec<_> = publish
        .targets()
        .iter()
        .map(|t| (t.queue.broker_name(), t.queue.queue_id(), t.addr.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("a", 0, "10.0.0.1:10911"),
            ("b", 0, "10.0.0.0:10911"),
            ("b", 1, "10.0.0.0:10911")
        ]
    );
}

#[test]
fn route_responses() {
    let mut ok = Command::response(ResponseCode::SUCCESS, 1);
    ok.body = route(&[("a", 2)]).encode().into();
    assert_eq!(
        route_from_response("T", &ok).map(|r| r.targets().len()),
        Ok(2)
    );
    let missing = Command::response(ResponseCode::TOPIC_NOT_EXIST, 1);
    assert!(matches!(
        route_from_response("T", &missing),
        Err(SendError::NoRoute { .. })
    ));
    let mut garbage = Command::response(ResponseCode::SUCCESS, 1);
    garbage.body = b"{".to_vec().into();
    assert!(matches!(
        route_from_response("T", &garbage),
        Err(SendError::BadResponse { .. })
    ));
    let request = route_request("T");
    assert_eq!(request.request_code(), RequestCode::GET_ROUTEINFO_BY_TOPIC);
}

#[test]
fn round_robin_cycles_and_skips_the_failed_broker() {
    let (mut routes, now) = cached(&[("a", 2), ("b", 2)]);
    let plain = prepared(None);
    let picks: Vec<_> = (0..5)
        .map(|_| {
            let t = routes.choose(&plain, None).expect("route cached");
            (t.queue.broker_name().to_owned(), t.queue.queue_id())
        })
        .collect();
    let expect = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("a", 0)];
    assert_eq!(
        picks,
        expect.map(|(b, q)| (b.to_owned(), q)).to_vec(),
        "round robin in Java's order"
    );
    // Next would be a/1; a just failed, so b/0.
    let retry = routes.choose(&plain, Some("a")).expect("route cached");
    assert_eq!(
        (retry.queue.broker_name(), retry.queue.queue_id()),
        ("b", 0)
    );
    // With one broker only, avoiding it still finds a queue.
    routes.insert("T", PublishRoute::new("T", &route(&[("a", 2)])), now);
    assert!(routes.choose(&plain, Some("a")).is_ok());
}

#[test]
fn a_sharding_key_always_picks_the_same_queue() {
    let (mut routes, _) = cached(&[("a", 4), ("b", 4)]);
    for key in ["order-1", "order-2", "polygenelubricants", "ключ"] {
        let message = prepared(Some(key));
        let first = routes.choose(&message, None).expect("route cached");
        let expected = shard_index(key, 8).expect("8 queues");
        assert_eq!(routes.get("T").expect("cached").targets()[expected], first);
        for _ in 0..5 {
            // Neither interleaved round robin sends nor a failed broker move a key.
            routes.choose(&prepared(None), None).expect("route cached");
            assert_eq!(routes.choose(&message, Some("a")).as_ref(), Ok(&first));
        }
    }
}

#[test]
fn routes_expire_and_invalidate() {
    let start = Instant::now();
    let ttl = Duration::from_secs(30);
    let mut routes = Routes::new(ttl);
    assert!(routes.needs_fetch("T", start));
    assert_eq!(
        routes.choose(&prepared(None), None),
        Err(SendError::NoRoute {
            topic: "T".to_owned()
        })
    );
    routes.insert("T", PublishRoute::new("T", &route(&[("a", 1)])), start);
    assert!(!routes.needs_fetch("T", start + Duration::from_secs(29)));
    assert!(routes.needs_fetch("T", start + ttl));
    routes.invalidate("T");
    assert!(routes.needs_fetch("T", start));
    routes.insert("T", PublishRoute::default(), start);
    assert_eq!(
        routes.choose(&prepared(None), None),
        Err(SendError::NoWritableQueue {
            topic: "T".to_owned()
        })
    );
}

/// A producer configuration with name servers `ns-0:9876` and `ns-1:9876` and `retries`.
fn two_name_servers(retries: u32) -> ProducerConfig {
    let mut config = ProducerConfig::new("g", vec!["ns-0:9876".into(), "ns-1:9876".into()]);
    config.retries = retries;
    config
}

/// The name server's answer carrying the route of [`route`]`(brokers)`.
fn route_answer(brokers: &[(&str, i32)]) -> Command {
    Command::response(ResponseCode::SUCCESS, 1).with_body(route(brokers).encode())
}

/// A broker's answer storing the message at queue offset 7.
fn stored() -> Command {
    let header = SendMessageResponse {
        msg_id: "00".into(),
        queue_id: 0,
        queue_offset: 7,
        ..SendMessageResponse::default()
    };
    let mut ok = Command::response(ResponseCode::SUCCESS, 1);
    ok.ext_fields = proto::CommandHeader::to_ext_fields(&header);
    ok
}

/// The next step, which must be a lookup: its name server and the topic asked for.
fn look_up(plan: &mut SendPlan, routes: &mut Routes, now: Instant) -> (String, String) {
    match plan.next_step(routes, now) {
        Step::LookUp { addr, command } => {
            let header: GetRouteInfoRequest = command.header().expect("route request header");
            (addr, header.topic)
        }
        other => panic!("expected a route lookup, got {other:?}"),
    }
}

/// The next step, which must be a send: its broker.
fn send_to(plan: &mut SendPlan, routes: &mut Routes, now: Instant) -> String {
    match plan.next_step(routes, now) {
        Step::Send { addr, .. } => addr,
        other => panic!("expected a send, got {other:?}"),
    }
}

/// A plan for a message of `T` with `retries`, an empty route cache, and the start time.
fn fresh_plan(retries: u32) -> (SendPlan, Routes, Instant) {
    let now = Instant::now();
    let plan = SendPlan::new(&two_name_servers(retries), prepared(None), now);
    (plan, Routes::new(Duration::from_secs(30)), now)
}

#[test]
fn a_send_asks_the_name_servers_in_turn_then_sends() {
    let (mut plan, mut routes, now) = fresh_plan(2);
    assert_eq!(
        look_up(&mut plan, &mut routes, now),
        ("ns-0:9876".into(), "T".into())
    );
    let down = SendError::Disconnected {
        peer: "ns-0:9876".into(),
        reason: "refused".into(),
    };
    plan.handle_answer(&mut routes, now, Err(down));
    assert_eq!(
        look_up(&mut plan, &mut routes, now),
        ("ns-1:9876".into(), "T".into())
    );
    plan.handle_answer(&mut routes, now, Ok(route_answer(&[("a", 2)])));
    assert_eq!(send_to(&mut plan, &mut routes, now), "10.0.0.0:10911");
    plan.handle_answer(&mut routes, now, Ok(stored()));
    match plan.next_step(&mut routes, now) {
        Step::Done(Ok(result)) => {
            assert_eq!(result.status, SendStatus::Ok);
            assert_eq!(result.queue_offset, 7);
        }
        other => panic!("expected the send's result, got {other:?}"),
    }
}

#[test]
fn a_topic_nobody_has_goes_where_the_default_topic_lives() {
    let (mut plan, mut routes, now) = fresh_plan(0);
    look_up(&mut plan, &mut routes, now);
    let unknown = Command::response(ResponseCode::TOPIC_NOT_EXIST, 1);
    plan.handle_answer(&mut routes, now, Ok(unknown));
    assert_eq!(
        look_up(&mut plan, &mut routes, now),
        ("ns-0:9876".into(), DEFAULT_TOPIC.into()),
        "the same name server is asked for the default topic"
    );
    plan.handle_answer(&mut routes, now, Ok(route_answer(&[("a", 8)])));
    assert_eq!(send_to(&mut plan, &mut routes, now), "10.0.0.0:10911");
    assert_eq!(routes.get("T").map(|r| r.targets().len()), Some(4));
}

#[test]
fn with_no_name_server_a_stale_route_is_used_and_without_one_the_send_fails() {
    let (mut routes, fetched) = cached(&[("a", 2)]);
    routes.invalidate("T");
    let mut plan = SendPlan::new(&two_name_servers(0), prepared(None), fetched);
    for _ in 0..2 {
        look_up(&mut plan, &mut routes, fetched);
        let silent = SendError::Timeout { peer: "ns".into() };
        plan.handle_answer(&mut routes, fetched, Err(silent));
    }
    assert_eq!(send_to(&mut plan, &mut routes, fetched), "10.0.0.0:10911");

    let mut empty = Routes::new(Duration::from_secs(30));
    let mut plan = SendPlan::new(&two_name_servers(0), prepared(None), fetched);
    for _ in 0..2 {
        look_up(&mut plan, &mut empty, fetched);
        let refused = Command::response(ResponseCode::SYSTEM_ERROR, 1).with_remark("down");
        plan.handle_answer(&mut empty, fetched, Ok(refused));
    }
    assert!(matches!(
        plan.next_step(&mut empty, fetched),
        Step::Done(Err(SendError::Refused { .. }))
    ));
}

#[test]
fn a_lost_broker_is_avoided_on_a_fresh_route_and_attempts_run_out() {
    let (mut routes, now) = cached(&[("a", 1), ("b", 1)]);
    let mut plan = SendPlan::new(&two_name_servers(1), prepared(None), now);
    let first = send_to(&mut plan, &mut routes, now);
    let lost = SendError::Disconnected {
        peer: first.clone(),
        reason: "reset".into(),
    };
    plan.handle_answer(&mut routes, now, Err(lost.clone()));
    // A lost connection may mean a moved route: it is fetched again first.
    look_up(&mut plan, &mut routes, now);
    plan.handle_answer(&mut routes, now, Ok(route_answer(&[("a", 1), ("b", 1)])));
    let second = send_to(&mut plan, &mut routes, now);
    assert_ne!(first, second, "the broker that failed is skipped");
    plan.handle_answer(&mut routes, now, Err(lost));
    assert!(
        matches!(
            plan.next_step(&mut routes, now),
            Step::Done(Err(SendError::Disconnected { .. }))
        ),
        "one retry configured, so the second failure is final"
    );
}

#[test]
fn a_busy_broker_is_not_retried_once_the_send_timeout_passed() {
    let (mut routes, now) = cached(&[("a", 2)]);
    let config = two_name_servers(5);
    let mut plan = SendPlan::new(&config, prepared(None), now);
    send_to(&mut plan, &mut routes, now);
    let busy = Command::response(ResponseCode::SYSTEM_BUSY, 1).with_remark("busy");
    plan.handle_answer(&mut routes, now, Ok(busy.clone()));
    // Within the timeout: tried again, on the same route (busy says nothing of routes).
    send_to(&mut plan, &mut routes, now);
    let late = now + config.send_timeout;
    assert_eq!(plan.deadline(), late);
    plan.handle_answer(&mut routes, late, Ok(busy));
    assert!(matches!(
        plan.next_step(&mut routes, late),
        Step::Done(Err(SendError::Refused { code, .. })) if code == ResponseCode::SYSTEM_BUSY
    ));
}
