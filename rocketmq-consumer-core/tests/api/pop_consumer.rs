//! The pop consumer (`PopConsumer`) against hand-written broker answers: what it sends, when,
//! and what it makes of each answer (pop, ack, batch ack, retry backoff, dead letter, renewal,
//! flow control, simple mode, shutdown, lost acks, garbage).
// These tests need one real `Instant` as the origin of their virtual clock; the core itself
// never reads the clock (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use bytes::BytesMut;
use proto::body::{
    BatchAckMessageRequestBody, BrokerData, MessageQueueAssignment, MessageRequestMode,
    QueryAssignmentResponseBody, QueueData, SetMessageRequestModeRequestBody, TopicRouteData,
};
use proto::headers::{
    AckMessageRequest, ChangeInvisibleTimeRequest, ChangeInvisibleTimeResponse,
    ConsumerSendMsgBackRequest, PopMessageRequest, PopMessageResponse,
};
use proto::message::{StoredMessage, encode_stored};
use proto::{Command, CommandHeader, ExtFields, MessageQueue, RequestCode, ResponseCode};

use rocketmq_consumer_core::pop::{
    PopConfig, PopConsumer, PopDelivery, PopEvent, PopMode, PopOutput, PopShutdownReport,
};
use rocketmq_consumer_core::{ConnId, ConsumeOutcome, FailureReason, Wire};

const NS: &str = "ns:9876";
const BROKER: &str = "b:10911";
const UNIX: i64 = 1_700_000_000_000;

struct Harness {
    now: Instant,
    start: Instant,
    pop: PopConsumer,
    /// Sent commands not looked at yet, with their connection.
    sent: Vec<(ConnId, Command)>,
    deliveries: Vec<PopDelivery>,
    events: Vec<PopEvent>,
}

impl Harness {
    fn new(config: PopConfig) -> Self {
        let now = Instant::now();
        let pop = PopConsumer::new(config, "10.0.0.1@1", now, UNIX).unwrap();
        Self {
            now,
            start: now,
            pop,
            sent: Vec::new(),
            deliveries: Vec::new(),
            events: Vec::new(),
        }
    }

    fn config() -> PopConfig {
        PopConfig::new("G", vec![NS.into()])
    }

    /// Drains outputs; connections open at once.
    fn drain(&mut self) {
        while let Some(output) = self.pop.poll_output() {
            match output {
                PopOutput::Wire(Wire::Connect { conn, .. }) => {
                    self.pop.handle_connected(self.now, conn)
                }
                PopOutput::Wire(Wire::Send { conn, command }) => self.sent.push((conn, command)),
                PopOutput::Wire(Wire::Close { .. }) => {}
                PopOutput::Deliver(d) => self.deliveries.push(d),
                PopOutput::Event(e) => self.events.push(e),
            }
        }
    }

    /// Takes the first sent request with `code`.
    fn take(&mut self, code: RequestCode) -> (ConnId, Command) {
        self.drain();
        let at = self
            .sent
            .iter()
            .position(|(_, c)| !c.is_response() && c.request_code() == code)
            .unwrap_or_else(|| panic!("no {code} among {:?}", self.codes()));
        self.sent.remove(at)
    }

    fn has(&mut self, code: RequestCode) -> bool {
        self.drain();
        self.sent.iter().any(|(_, c)| c.request_code() == code)
    }

    fn codes(&self) -> Vec<RequestCode> {
        self.sent.iter().map(|(_, c)| c.request_code()).collect()
    }

    fn answer(
        &mut self,
        (conn, request): &(ConnId, Command),
        code: ResponseCode,
        ext: ExtFields,
        body: Vec<u8>,
    ) {
        let mut response = Command::response(code, request.opaque).with_body(body);
        response.ext_fields = ext;
        self.pop.handle_command(self.now, *conn, response);
        self.drain();
    }

    fn ok(&mut self, request: &(ConnId, Command)) {
        self.answer(request, ResponseCode::SUCCESS, ExtFields::new(), Vec::new());
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.pop.handle_timeout(self.now);
        self.drain();
    }

    /// Subscribes and answers the route, heartbeat, mode and assignment (queue -1).
    fn started(config: PopConfig) -> Self {
        Self::started_in(config, "T")
    }

    /// [`Harness::started`] where the broker names the topic `wire` (namespaced).
    fn started_in(config: PopConfig, wire: &str) -> Self {
        let mut h = Self::new(config);
        h.pop.subscribe(h.now, "T", "*").unwrap();
        h.advance(Duration::ZERO);
        let route = h.take(RequestCode::GET_ROUTEINFO_BY_TOPIC);
        h.answer(
            &route,
            ResponseCode::SUCCESS,
            ExtFields::new(),
            route_body().encode(),
        );
        let heartbeat = h.take(RequestCode::HEART_BEAT);
        h.ok(&heartbeat);
        if h.pop.config().set_request_mode {
            let mode = h.take(RequestCode::SET_MESSAGE_REQUEST_MODE);
            let body = SetMessageRequestModeRequestBody::decode(&mode.1.body).unwrap();
            assert_eq!(body.mode, MessageRequestMode::Pop);
            h.ok(&mode);
        }
        h.advance(Duration::ZERO);
        let query = h.take(RequestCode::QUERY_ASSIGNMENT);
        let body = QueryAssignmentResponseBody {
            message_queue_assignments: Some(vec![MessageQueueAssignment {
                message_queue: Some(MessageQueue::new(wire, "b", -1)),
                mode: MessageRequestMode::Pop,
                ..MessageQueueAssignment::default()
            }]),
        };
        h.answer(
            &query,
            ResponseCode::SUCCESS,
            ExtFields::new(),
            body.encode(),
        );
        h
    }

    /// Answers `pop` with messages at `offsets` of queue 0 (`reconsume` times each).
    fn pop_found(&mut self, pop: &(ConnId, Command), offsets: &[i64], reconsume: i32) {
        self.pop_found_at(pop, offsets, reconsume, UNIX + 5, 60_000);
    }

    /// [`Harness::pop_found`] with the broker's pop time and invisibility.
    fn pop_found_at(
        &mut self,
        pop: &(ConnId, Command),
        offsets: &[i64],
        reconsume: i32,
        pop_time: i64,
        invisible_time: i64,
    ) {
        let mut body = BytesMut::new();
        for offset in offsets {
            let stored = StoredMessage {
                queue_offset: *offset,
                commit_log_offset: 1000 + offset,
                reconsume_times: reconsume,
                body: vec![7u8; 10].into(),
                topic: if reconsume > 0 {
                    "%RETRY%G_T".into()
                } else {
                    "T".into()
                },
                ..StoredMessage::default()
            };
            encode_stored(&stored, &mut body).unwrap();
        }
        let mark = if reconsume > 0 { "1" } else { "0" };
        let list: Vec<String> = offsets.iter().map(ToString::to_string).collect();
        let header = PopMessageResponse {
            pop_time,
            invisible_time,
            revive_qid: 3,
            rest_num: 0,
            start_offset_info: Some(format!("{mark} 0 {}", offsets[0])),
            msg_offset_info: Some(format!("{mark} 0 {}", list.join(","))),
            order_count_info: None,
        };
        let mut ext = ExtFields::new();
        header.encode_into(&mut ext);
        self.answer(pop, ResponseCode::SUCCESS, ext, body.to_vec());
    }
}

fn route_body() -> TopicRouteData {
    TopicRouteData {
        queue_datas: vec![QueueData {
            broker_name: "b".into(),
            read_queue_nums: 1,
            write_queue_nums: 1,
            perm: 6,
            ..QueueData::default()
        }],
        broker_datas: vec![BrokerData {
            cluster: "c".into(),
            broker_name: "b".into(),
            broker_addrs: [(0, BROKER.to_owned())].into(),
            ..BrokerData::default()
        }],
        ..TopicRouteData::default()
    }
}

#[test]
fn it_sets_pop_mode_follows_the_assignment_and_long_polls() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    let header = pop.1.header::<PopMessageRequest>().unwrap();
    assert_eq!(header.queue_id, -1);
    assert_eq!(header.invisible_time, 60_000);
    assert_eq!(header.poll_time, 15_000);
    assert_eq!(header.max_msg_nums, 32);
    assert_eq!(
        header.born_time,
        UNIX + (h.now - h.start).as_millis() as i64
    );
    assert!(matches!(
        h.events.iter().find(|e| matches!(e, PopEvent::Assigned { .. })),
        Some(PopEvent::Assigned { queues, .. }) if queues == &[MessageQueue::new("T", "b", -1)]
    ));
    // Nothing within the long poll: pop again at once.
    h.answer(
        &pop,
        ResponseCode::POLLING_TIMEOUT,
        ExtFields::new(),
        Vec::new(),
    );
    let again = h.take(RequestCode::POP_MESSAGE);
    // The broker is full of suspended pops: wait the exception backoff.
    h.answer(
        &again,
        ResponseCode::POLLING_FULL,
        ExtFields::new(),
        Vec::new(),
    );
    assert!(!h.has(RequestCode::POP_MESSAGE));
    h.advance(Duration::from_millis(2_900));
    assert!(!h.has(RequestCode::POP_MESSAGE));
    h.advance(Duration::from_millis(100));
    let _ = h.take(RequestCode::POP_MESSAGE);
}

#[test]
fn success_acks_with_the_receipt_handle() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &[4, 5], 0);
    assert_eq!(h.deliveries.len(), 2);
    let first = h.deliveries.remove(0);
    assert_eq!(first.messages[0].message.topic(), "T");
    assert_eq!(
        first.messages[0].receipt.handle.to_string(),
        format!("4 {} 60000 3 0 b 0 4", UNIX + 5)
    );
    h.pop.complete(h.now, first.id, ConsumeOutcome::Success);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    let header = ack.1.header::<AckMessageRequest>().unwrap();
    assert_eq!((header.topic.as_str(), header.offset), ("T", 4));
    assert_eq!(header.extra_info, format!("4 {} 60000 3 0 b 0 4", UNIX + 5));
    assert_eq!(h.pop.stats().held_messages, 2);
    h.ok(&ack);
    assert_eq!(h.pop.stats().acked, 1);
    assert_eq!(h.pop.stats().held_messages, 1);
}

#[test]
fn a_batch_delivery_is_acked_in_one_batch_ack() {
    let mut config = Harness::config();
    config.consume_batch_size = 8;
    let mut h = Harness::started(config);
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &[10, 11, 13], 0);
    assert_eq!(h.deliveries.len(), 1);
    let d = h.deliveries.remove(0);
    h.pop.complete(h.now, d.id, ConsumeOutcome::Success);
    let batch = h.take(RequestCode::BATCH_ACK_MESSAGE);
    let body = BatchAckMessageRequestBody::decode(&batch.1.body).unwrap();
    assert_eq!(body.broker_name, "b");
    assert_eq!(body.acks.len(), 1);
    assert_eq!(body.acks[0].offsets().collect::<Vec<_>>(), [10, 11, 13]);
    h.ok(&batch);
    assert_eq!(h.pop.stats().acked, 3);
}

#[test]
fn failure_changes_invisibility_by_the_backoff_and_the_retry_topic() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    // A redelivery (from the V1 pop retry topic, reconsumed twice).
    h.pop_found(&pop, &[0], 2);
    let d = h.deliveries.remove(0);
    assert_eq!(
        d.messages[0].message.topic(),
        "T",
        "the subscribed topic is shown"
    );
    assert_eq!(d.messages[0].message.reconsume_times(), 2);
    h.pop.complete(h.now, d.id, ConsumeOutcome::ReconsumeLater);
    let change = h.take(RequestCode::CHANGE_MESSAGE_INVISIBLETIME);
    let header = change.1.header::<ChangeInvisibleTimeRequest>().unwrap();
    assert_eq!(header.topic, "%RETRY%G_T");
    assert_eq!(header.invisible_time, 60_000, "popDelayLevel[2] is 60 s");
    h.ok(&change);
    assert_eq!(h.pop.stats().retried, 1);
    assert_eq!(h.pop.stats().held_messages, 0);
}

#[test]
fn the_last_failure_dead_letters_then_acks() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &[0], 16);
    let d = h.deliveries.remove(0);
    h.pop.complete(h.now, d.id, ConsumeOutcome::ReconsumeLater);
    assert!(!h.has(RequestCode::CHANGE_MESSAGE_INVISIBLETIME));
    let back = h.take(RequestCode::CONSUMER_SEND_MSG_BACK);
    let header = back.1.header::<ConsumerSendMsgBackRequest>().unwrap();
    assert_eq!((header.delay_level, header.offset), (-1, 1000));
    h.ok(&back);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    h.ok(&ack);
    let stats = h.pop.stats();
    assert_eq!(
        (stats.dead_lettered, stats.acked, stats.held_messages),
        (1, 1, 0)
    );
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, PopEvent::DeadLettered { .. }))
    );
}

#[test]
fn a_slow_handler_renews_and_acks_with_the_new_handle() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &[7], 0);
    let d = h.deliveries.remove(0);
    // Renewal is due 10 s before the 60 s run out.
    h.advance(Duration::from_secs(49));
    assert!(!h.has(RequestCode::CHANGE_MESSAGE_INVISIBLETIME));
    h.advance(Duration::from_secs(1));
    let renew = h.take(RequestCode::CHANGE_MESSAGE_INVISIBLETIME);
    let header = renew.1.header::<ChangeInvisibleTimeRequest>().unwrap();
    assert_eq!(header.invisible_time, 60_000);
    let mut ext = ExtFields::new();
    ChangeInvisibleTimeResponse {
        pop_time: UNIX + 50_000,
        invisible_time: 60_000,
        revive_qid: 4,
    }
    .encode_into(&mut ext);
    h.answer(&renew, ResponseCode::SUCCESS, ext, Vec::new());
    assert_eq!(h.pop.stats().renewed, 1);
    h.advance(Duration::from_secs(30));
    h.pop.complete(h.now, d.id, ConsumeOutcome::Success);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    let header = ack.1.header::<AckMessageRequest>().unwrap();
    assert_eq!(
        header.extra_info,
        format!("7 {} 60000 4 0 b 0 7", UNIX + 50_000)
    );
}

#[test]
fn completion_during_renewal_waits_for_the_new_handle() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &[7], 0);
    let d = h.deliveries.remove(0);
    h.advance(Duration::from_secs(50));
    let renew = h.take(RequestCode::CHANGE_MESSAGE_INVISIBLETIME);
    h.pop.complete(h.now, d.id, ConsumeOutcome::Success);
    assert!(
        !h.has(RequestCode::ACK_MESSAGE),
        "the ack waits for the renewal"
    );
    let mut ext = ExtFields::new();
    ChangeInvisibleTimeResponse {
        pop_time: UNIX + 50_000,
        invisible_time: 60_000,
        revive_qid: 4,
    }
    .encode_into(&mut ext);
    h.answer(&renew, ResponseCode::SUCCESS, ext, Vec::new());
    let ack = h.take(RequestCode::ACK_MESSAGE);
    let header = ack.1.header::<AckMessageRequest>().unwrap();
    assert!(
        header
            .extra_info
            .starts_with(&format!("7 {}", UNIX + 50_000))
    );
}

#[test]
fn flow_control_stops_popping_until_messages_settle() {
    let mut config = Harness::config();
    config.max_cached_messages = 40;
    config.max_in_flight_deliveries = 1;
    let mut h = Harness::started(config);
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &(0..20).collect::<Vec<_>>(), 0);
    // 20 held + a batch of 32 would pass 40: no pop.
    assert!(!h.has(RequestCode::POP_MESSAGE));
    let mut acked = 0;
    while h.pop.stats().held_messages + 32 > 40 {
        let d = h.deliveries.remove(0);
        h.pop.complete(h.now, d.id, ConsumeOutcome::Success);
        let ack = h.take(RequestCode::ACK_MESSAGE);
        h.ok(&ack);
        acked += 1;
    }
    assert_eq!(acked, 12);
    let _ = h.take(RequestCode::POP_MESSAGE);
}

#[test]
fn simple_mode_receives_acks_and_changes_on_request() {
    let mut config = Harness::config();
    config.mode = PopMode::Simple;
    let mut h = Harness::started(config);
    assert!(
        !h.has(RequestCode::POP_MESSAGE),
        "nothing is popped unasked"
    );
    let request = h.pop.receive(h.now, 4, Duration::from_secs(20));
    let pop = h.take(RequestCode::POP_MESSAGE);
    let header = pop.1.header::<PopMessageRequest>().unwrap();
    assert_eq!((header.max_msg_nums, header.invisible_time), (4, 20_000));
    h.pop_found(&pop, &[3], 0);
    let messages = match h.events.pop() {
        Some(PopEvent::Received {
            request: r,
            messages: Ok(messages),
        }) if r == request => messages,
        other => panic!("{other:?}"),
    };
    assert!(h.deliveries.is_empty());
    let receipt = messages[0].receipt.clone();
    let change = h
        .pop
        .change_invisible_duration(h.now, &receipt, Duration::from_secs(5));
    let sent = h.take(RequestCode::CHANGE_MESSAGE_INVISIBLETIME);
    let mut ext = ExtFields::new();
    ChangeInvisibleTimeResponse {
        pop_time: UNIX + 9,
        invisible_time: 5_000,
        revive_qid: 3,
    }
    .encode_into(&mut ext);
    h.answer(&sent, ResponseCode::SUCCESS, ext, Vec::new());
    let renewed = match h.events.pop() {
        Some(PopEvent::InvisibilityChanged {
            request,
            receipt: Ok(r),
        }) if request == change => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(renewed.handle.pop_time, UNIX + 9);
    let ack = h.pop.ack(h.now, &renewed);
    let sent = h.take(RequestCode::ACK_MESSAGE);
    h.answer(
        &sent,
        ResponseCode::NO_MESSAGE,
        ExtFields::new(),
        Vec::new(),
    );
    assert!(matches!(
        h.events.pop(),
        Some(PopEvent::Acked { request, result: Err(FailureReason::Refused(ResponseCode::NO_MESSAGE, _)) }) if request == ack
    ));
}

#[test]
fn shutdown_releases_the_undelivered_and_waits_for_the_running() {
    let mut config = Harness::config();
    config.max_in_flight_deliveries = 1;
    let mut h = Harness::started(config);
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &[1, 2], 0);
    let running = h.deliveries.remove(0);
    let _next_pop = h.take(RequestCode::POP_MESSAGE);
    h.pop.shutdown(h.now);
    let release = h.take(RequestCode::CHANGE_MESSAGE_INVISIBLETIME);
    let header = release.1.header::<ChangeInvisibleTimeRequest>().unwrap();
    assert_eq!((header.offset, header.invisible_time), (2, 0));
    h.ok(&release);
    assert!(
        !h.has(RequestCode::UNREGISTER_CLIENT),
        "the handler still runs"
    );
    h.pop.complete(h.now, running.id, ConsumeOutcome::Success);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    h.ok(&ack);
    let unregister = h.take(RequestCode::UNREGISTER_CLIENT);
    h.ok(&unregister);
    let report = h.events.iter().find_map(|e| match e {
        PopEvent::Closed(r) => Some(r.clone()),
        _ => None,
    });
    assert_eq!(
        report,
        Some(PopShutdownReport {
            drained: 1,
            abandoned: 0,
            released: 1,
            acked: 1
        })
    );
    assert!(h.pop.is_closed());
}

#[test]
fn a_lost_ack_is_sent_again_while_the_message_is_invisible() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.pop_found(&pop, &[0], 0);
    let d = h.deliveries.remove(0);
    h.pop.complete(h.now, d.id, ConsumeOutcome::Success);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    h.pop.handle_disconnected(h.now, ack.0);
    h.drain();
    assert_eq!(h.pop.stats().acked, 0);
    h.advance(Duration::from_secs(1));
    h.advance(Duration::from_secs(1));
    let again = h.take(RequestCode::ACK_MESSAGE);
    assert_eq!(again.1.ext_fields.get("offset"), Some("0"));
    h.ok(&again);
    assert_eq!(h.pop.stats().acked, 1);
}

#[test]
fn garbage_answers_do_not_panic() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    // SUCCESS without the header, then with a body that is not messages.
    h.answer(&pop, ResponseCode::SUCCESS, ExtFields::new(), vec![1, 2, 3]);
    h.advance(Duration::from_secs(3));
    let pop = h.take(RequestCode::POP_MESSAGE);
    let mut ext = ExtFields::new();
    ext.insert("popTime", "1");
    ext.insert("invisibleTime", "1");
    ext.insert("reviveQid", "1");
    ext.insert("restNum", "0");
    ext.insert("startOffsetInfo", "nonsense");
    h.answer(&pop, ResponseCode::SUCCESS, ext, vec![0; 40]);
    assert!(h.deliveries.is_empty());
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, PopEvent::RequestFailed { .. }))
    );
}

/// A 5.x broker re-encodes a redelivery under the subscribed topic with its handle in `POP_CK`,
/// and names only the other messages in the offset info (`PopMessageProcessor`): the handle of
/// each comes from where it is.
#[test]
fn a_redelivery_carries_its_own_handle() {
    let mut h = Harness::started(Harness::config());
    let pop = h.take(RequestCode::POP_MESSAGE);
    let mut body = BytesMut::new();
    let retry_handle = format!("3 {} 60000 3 1 b 0 3", UNIX + 5);
    for (offset, properties) in [
        (5, String::new()),
        (
            3,
            proto::message::encode_properties([("POP_CK", retry_handle.as_str())]),
        ),
    ] {
        let stored = StoredMessage {
            queue_offset: offset,
            reconsume_times: i32::from(offset == 3),
            body: vec![1u8; 4].into(),
            topic: "T".into(),
            properties,
            ..StoredMessage::default()
        };
        encode_stored(&stored, &mut body).unwrap();
    }
    let header = PopMessageResponse {
        pop_time: UNIX + 5,
        invisible_time: 60_000,
        revive_qid: 3,
        rest_num: 0,
        start_offset_info: Some("0 0 5;1 0 3".into()),
        msg_offset_info: Some("0 0 5;1 0 3".into()),
        order_count_info: None,
    };
    let mut ext = ExtFields::new();
    header.encode_into(&mut ext);
    h.answer(&pop, ResponseCode::SUCCESS, ext, body.to_vec());
    assert_eq!(h.deliveries.len(), 2);
    let redelivery = h.deliveries.remove(1);
    assert_eq!(
        redelivery.messages[0].receipt.handle.to_string(),
        retry_handle
    );
    h.pop
        .complete(h.now, redelivery.id, ConsumeOutcome::Success);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    let header = ack.1.header::<AckMessageRequest>().unwrap();
    assert_eq!(header.topic, "%RETRY%G_T", "acked in the pop retry topic");
    let first = h.deliveries.remove(0);
    assert_eq!(
        first.messages[0].receipt.handle.to_string(),
        format!("5 {} 60000 3 0 b 0 5", UNIX + 5)
    );
}

/// A long poll answered 14 s after it was sent, with a 10 s invisibility: the broker popped the
/// message when it answered, so it is still invisible and is delivered (and renewed from the
/// broker's pop time), not dropped as expired.
#[test]
fn a_long_poll_answered_late_is_not_expired() {
    let mut config = Harness::config();
    config.invisible_time = Duration::from_secs(10);
    let mut h = Harness::started(config);
    let pop = h.take(RequestCode::POP_MESSAGE);
    h.now += Duration::from_secs(14);
    let pop_time = UNIX + (h.now - h.start).as_millis() as i64;
    h.pop_found_at(&pop, &[0], 0, pop_time, 10_000);
    assert_eq!(h.deliveries.len(), 1);
    assert_eq!(h.pop.stats().expired, 0);
    // Renewed 5 s (half the invisibility, below the 10 s renew_ahead) before it ends.
    h.advance(Duration::from_millis(4_900));
    assert!(!h.has(RequestCode::CHANGE_MESSAGE_INVISIBLETIME));
    h.advance(Duration::from_millis(100));
    let _ = h.take(RequestCode::CHANGE_MESSAGE_INVISIBLETIME);
}

/// A namespace wraps the group and topic on the wire and is unwrapped from what the
/// application sees (Java's `NamespaceUtil`, as the push consumer does).
#[test]
fn a_namespace_wraps_the_wire_names() {
    let mut config = Harness::config();
    config.namespace = Some("tenant".into());
    let mut h = Harness::started_in(config, "tenant%T");
    assert!(h.events.iter().any(|e| matches!(
        e,
        PopEvent::Assigned { topic, queues } if topic == "T" && queues[0].topic() == "T"
    )));
    let pop = h.take(RequestCode::POP_MESSAGE);
    let header = pop.1.header::<PopMessageRequest>().unwrap();
    assert_eq!(
        (header.consumer_group.as_str(), header.topic.as_str()),
        ("tenant%G", "tenant%T")
    );
    let mut body = BytesMut::new();
    let stored = StoredMessage {
        queue_offset: 0,
        body: vec![1u8; 4].into(),
        topic: "tenant%T".into(),
        ..StoredMessage::default()
    };
    encode_stored(&stored, &mut body).unwrap();
    let header = PopMessageResponse {
        pop_time: UNIX,
        invisible_time: 60_000,
        revive_qid: 0,
        rest_num: 0,
        start_offset_info: Some("0 0 0".into()),
        msg_offset_info: Some("0 0 0".into()),
        order_count_info: None,
    };
    let mut ext = ExtFields::new();
    header.encode_into(&mut ext);
    h.answer(&pop, ResponseCode::SUCCESS, ext, body.to_vec());
    let d = h.deliveries.remove(0);
    assert_eq!(d.messages[0].message.topic(), "T");
    assert_eq!(d.messages[0].receipt.topic, "T");
    h.pop.complete(h.now, d.id, ConsumeOutcome::Success);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    let header = ack.1.header::<AckMessageRequest>().unwrap();
    assert_eq!(
        (header.consumer_group.as_str(), header.topic.as_str()),
        ("tenant%G", "tenant%T")
    );
}

/// Orderly pop: the pop asks for order; of three messages popped from one queue only the
/// first goes to the handler; once it is acked the next goes; when that one fails, it and the
/// queue's later message become invisible for the retry delay and the later one never reaches
/// the handler; the broker's redelivery carries its count from `orderCountInfo`.
#[test]
fn orderly_pop_hands_out_one_queue_in_order_and_holds_back_after_a_failure() {
    let mut config = Harness::config();
    config.orderly = true;
    let mut h = Harness::started(config);
    let pop = h.take(RequestCode::POP_MESSAGE);
    let header = pop.1.header::<PopMessageRequest>().unwrap();
    assert_eq!(header.order, Some(true), "the pop asks for order");
    h.pop_found(&pop, &[4, 5, 6], 0);
    assert_eq!(h.deliveries.len(), 1, "one delivery of the queue at a time");
    let first = h.deliveries.remove(0);
    assert_eq!(first.messages[0].message.queue_offset(), 4);
    h.pop.complete(h.now, first.id, ConsumeOutcome::Success);
    let ack = h.take(RequestCode::ACK_MESSAGE);
    h.ok(&ack);
    assert_eq!(h.deliveries.len(), 1, "the next one once the first is done");
    let second = h.deliveries.remove(0);
    assert_eq!(second.messages[0].message.queue_offset(), 5);
    h.pop
        .complete(h.now, second.id, ConsumeOutcome::ReconsumeLater);
    h.drain();
    assert!(h.deliveries.is_empty(), "offset 6 waits for 5's redelivery");
    let mut changed: Vec<(i64, i64)> = Vec::new();
    while h.has(RequestCode::CHANGE_MESSAGE_INVISIBLETIME) {
        let change = h.take(RequestCode::CHANGE_MESSAGE_INVISIBLETIME);
        let header = change.1.header::<ChangeInvisibleTimeRequest>().unwrap();
        changed.push((header.offset, header.invisible_time));
        h.ok(&change);
    }
    changed.sort_unstable();
    assert_eq!(
        changed,
        [(5, 10_000), (6, 10_000)],
        "the failed one and the later one come back together after the retry delay"
    );
    assert!(h.deliveries.is_empty());
    assert_eq!(h.pop.stats().held_messages, 0);

    // The redelivery, from the topic itself, counted by the broker.
    let again = h.take(RequestCode::POP_MESSAGE);
    let mut body = BytesMut::new();
    for offset in [5, 6] {
        let stored = StoredMessage {
            queue_offset: offset,
            commit_log_offset: 1000 + offset,
            body: vec![7u8; 10].into(),
            topic: "T".into(),
            ..StoredMessage::default()
        };
        encode_stored(&stored, &mut body).unwrap();
    }
    let header = PopMessageResponse {
        pop_time: UNIX + 10_005,
        invisible_time: 60_000,
        revive_qid: 999,
        rest_num: 0,
        start_offset_info: Some("0 0 5".into()),
        msg_offset_info: Some("0 0 5,6".into()),
        order_count_info: Some("0 qo0%5 1;0 0 0".into()),
    };
    let mut ext = ExtFields::new();
    header.encode_into(&mut ext);
    h.answer(&again, ResponseCode::SUCCESS, ext, body.to_vec());
    assert_eq!(h.deliveries.len(), 1);
    let redelivered = h.deliveries.remove(0);
    assert_eq!(redelivered.messages[0].message.queue_offset(), 5);
    assert_eq!(redelivered.messages[0].message.reconsume_times(), 1);
}
