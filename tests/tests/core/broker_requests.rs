//! Requests a broker sends to the consumer (`remoting-protocol.md` §3.15, §3.16): an admin's
//! `GET_CONSUMER_RUNNING_INFO` gets the subscriptions and the owned queues with their offsets
//! (`SYSTEM_ERROR` for a group the client does not run); `CONSUME_MESSAGE_DIRECTLY` runs the
//! handler on exactly the message in the body and answers with its result once the handler
//! finished, without touching the queue's offsets; any other code is `REQUEST_CODE_NOT_SUPPORTED`
//! (Java's `ClientRemotingProcessor`), so an admin tool never waits for a timeout.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use consumer_core::{ConsumeOutcome, MessageQueue};
use proto::body::{ConsumeMessageDirectlyResult, ConsumeResult, ConsumerRunningInfo};
use proto::headers::{ConsumeMessageDirectlyRequest, GetConsumerRunningInfoRequest};
use proto::message::{StoredMessage, encode_properties, encode_stored, property};
use proto::{Command, ExtFields, RequestCode, ResponseCode};
use rocketmq_tests::scenario::{GROUP, RETRY, TOPIC, queue_stats, quiet_config};
use rocketmq_tests::sim::ConnKey;
use rocketmq_tests::world::{SIM_SECRET_KEY, World};

/// One consumer, settled, and its connection to broker-a; the brokers check ACL signatures,
/// so the consumer has credentials.
fn world() -> (World, ConnKey) {
    let mut config = quiet_config(113, 1);
    config.acl = true;
    let mut world = World::new(config);
    // Long enough for the retry topic's route (created by the first heartbeat) too.
    world.run_until(world.epoch() + Duration::from_secs(5));
    let addr = world.cluster.broker_addr("broker-a");
    let conn = world
        .conn_key(0, &addr)
        .expect("the consumer is connected to broker-a");
    (world, conn)
}

/// Sends `request` to node 0 as broker-a, runs 100 ms, and returns the answer, if any.
fn ask(world: &mut World, conn: ConnKey, request: Command) -> Option<Command> {
    let opaque = world.cluster.request_client(conn, request);
    world.run_until(world.now + Duration::from_millis(100));
    response_to(world, conn, opaque)
}

/// Node 0's answer, over `conn`, to the request numbered `opaque`, if it came yet.
fn response_to(world: &World, conn: ConnKey, opaque: i32) -> Option<Command> {
    world
        .cluster
        .client_responses()
        .iter()
        .find(|(k, c)| *k == conn && c.opaque == opaque)
        .map(|(_, c)| c.clone())
}

fn running_info_request(group: &str, client_id: &str) -> Command {
    let header = GetConsumerRunningInfoRequest {
        consumer_group: group.to_owned(),
        client_id: client_id.to_owned(),
        jstack_enable: Some(false),
    };
    Command::request(RequestCode::GET_CONSUMER_RUNNING_INFO, &header)
}

#[test]
fn running_info_lists_subscriptions_and_owned_queues() {
    let (mut world, conn) = world();
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    world.produce_to(&a, 3);
    world.run_until(world.now + Duration::from_secs(1));
    let client_id = world.nodes[0].consumer.client_id().to_owned();

    let answer = ask(&mut world, conn, running_info_request(GROUP, &client_id))
        .expect("GET_CONSUMER_RUNNING_INFO is answered");
    assert_eq!(answer.response_code(), ResponseCode::SUCCESS, "{answer:?}");
    let info = ConsumerRunningInfo::decode(&answer.body).expect("the body decodes");
    let topics: BTreeSet<&str> = info
        .subscription_set
        .iter()
        .map(|s| s.topic.as_str())
        .collect();
    assert_eq!(topics, BTreeSet::from([TOPIC, RETRY]));
    let owned: BTreeSet<MessageQueue> = world.nodes[0].consumer.assignment().collect();
    assert_eq!(owned.len(), 6, "4 topic + 2 retry queues");
    let listed: BTreeSet<MessageQueue> = info.mq_table.keys().cloned().collect();
    assert_eq!(listed, owned, "mq_table lists exactly the owned queues");
    assert_eq!(
        info.mq_table[&a].commit_offset, 3,
        "{:?}",
        info.mq_table[&a]
    );
    assert_eq!(
        info.properties.get("consumerGroup").map(String::as_str),
        Some(GROUP)
    );
    assert_eq!(
        info.properties
            .get("PROP_CONSUMEORDERLY")
            .map(String::as_str),
        Some("false")
    );

    // Answers to a broker go unsigned (as Java's hook leaves them), and the secret is in no
    // answer.
    assert!(answer.ext_fields.get("Signature").is_none(), "{answer:?}");
    let text = format!("{answer:?} {}", String::from_utf8_lossy(&answer.body));
    assert!(
        !text.contains(SIM_SECRET_KEY),
        "the secret is not in running info"
    );

    let other = ask(
        &mut world,
        conn,
        running_info_request("another-group", &client_id),
    )
    .expect("answered for another group too");
    assert_eq!(
        other.response_code(),
        ResponseCode::SYSTEM_ERROR,
        "{other:?}"
    );
}

fn direct_message(body: &'static str, uniq: &str) -> Bytes {
    let message = StoredMessage {
        queue_id: 0,
        queue_offset: 42,
        commit_log_offset: 4242,
        born_timestamp: 1_700_000_000_000,
        store_timestamp: 1_700_000_000_001,
        body: Bytes::from_static(body.as_bytes()),
        topic: TOPIC.into(),
        properties: encode_properties([(property::UNIQ_KEY, uniq), (property::TAGS, "TagA")]),
        ..StoredMessage::default()
    };
    let mut buf = BytesMut::new();
    encode_stored(&message, &mut buf).expect("the message encodes");
    buf.freeze()
}

fn direct_request(body: Bytes, uniq: &str) -> Command {
    let header = ConsumeMessageDirectlyRequest {
        consumer_group: GROUP.to_owned(),
        client_id: None,
        msg_id: Some(uniq.to_owned()),
        broker_name: Some("broker-a".to_owned()),
        ..ConsumeMessageDirectlyRequest::default()
    };
    Command::request(RequestCode::CONSUME_MESSAGE_DIRECTLY, &header).with_body(body)
}

#[test]
fn consume_message_directly_runs_the_handler_and_answers_its_result() {
    let (mut world, conn) = world();
    let a = MessageQueue::new(TOPIC, "broker-a", 0);
    world.nodes[0].hold = true;
    let delivered_before = world.nodes[0].delivered.len();

    let uniq = "0A000001000000000000000000000001";
    let opaque = world.cluster.request_client(
        conn,
        direct_request(direct_message("direct one", uniq), uniq),
    );
    world.run_until(world.now + Duration::from_millis(100));
    let direct: Vec<_> = world.nodes[0].delivered[delivered_before..].to_vec();
    assert_eq!(direct.len(), 1, "exactly one delivery");
    let (_, d) = &direct[0];
    assert_eq!(d.messages.len(), 1);
    let m = &d.messages[0];
    assert_eq!(m.body(), b"direct one");
    assert_eq!(m.topic(), TOPIC);
    assert_eq!(m.msg_id(), uniq);
    assert_eq!(m.queue_offset(), 42);
    assert_eq!(d.queue, a);
    assert!(
        world
            .cluster
            .client_responses()
            .iter()
            .all(|(_, c)| c.opaque != opaque),
        "no answer before the handler finished"
    );

    world.complete_at(
        0,
        d.id,
        ConsumeOutcome::Success,
        world.now + Duration::from_millis(30),
    );
    world.run_until(world.now + Duration::from_millis(200));
    let answer = response_to(&world, conn, opaque).expect("answered once the handler finished");
    assert_eq!(answer.response_code(), ResponseCode::SUCCESS, "{answer:?}");
    let result = ConsumeMessageDirectlyResult::decode(&answer.body).expect("the body decodes");
    assert_eq!(
        result.consume_result,
        Some(ConsumeResult::Success),
        "{result:?}"
    );
    assert!(!result.order);
    assert!(
        result.spent_time_mills >= 30,
        "the handler's time: {result:?}"
    );

    // A failing handler answers CR_LATER, and nothing is sent back for a direct message.
    let uniq = "0A000001000000000000000000000002";
    let before = world.nodes[0].delivered.len();
    let answer_opaque = world.cluster.request_client(
        conn,
        direct_request(direct_message("direct two", uniq), uniq),
    );
    world.run_until(world.now + Duration::from_millis(100));
    let (_, d) = world.nodes[0].delivered[before..]
        .first()
        .cloned()
        .expect("delivered");
    world.complete_at(0, d.id, ConsumeOutcome::ReconsumeLater, world.now);
    world.run_until(world.now + Duration::from_secs(1));
    let answer = response_to(&world, conn, answer_opaque).expect("answered");
    let result = ConsumeMessageDirectlyResult::decode(&answer.body).expect("the body decodes");
    assert_eq!(
        result.consume_result,
        Some(ConsumeResult::Later),
        "{result:?}"
    );
    let stats = world.nodes[0].consumer.stats();
    assert_eq!(stats.sent_back, 0, "a direct message is not sent back");
    assert_eq!(stats.in_flight_deliveries, 0);
    assert_eq!(
        world.nodes[0].delivered.len(),
        before + 1,
        "nor redelivered"
    );
    let queue = queue_stats(&world, 0, &a);
    assert_eq!(
        queue.committable_offset, 0,
        "the queue's offsets are untouched by direct consumption"
    );
}

#[test]
fn an_unknown_request_code_is_answered_not_supported() {
    let (mut world, conn) = world();
    let answer = ask(
        &mut world,
        conn,
        Command::request_with_fields(RequestCode(9999), ExtFields::new()),
    )
    .expect("an unknown request is answered, not ignored");
    assert_eq!(
        answer.response_code(),
        ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
        "{answer:?}"
    );
}
