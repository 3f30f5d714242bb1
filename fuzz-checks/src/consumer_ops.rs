//! The consumer core under any sequence of inputs a broker and an application can produce:
//! plausible answers (routes, member lists, offsets, pull results with real records, lock
//! grants) mixed with wrong codes and garbage bodies, broker-initiated requests, lost
//! connections, time jumps, completions with every outcome, and the poll-mode calls; half the
//! runs hand deliveries out on demand, settled at once or left running. It must never panic,
//! and its caches must stay within their limits.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rocketmq_consumer_core::rate::RateLimit;
use rocketmq_consumer_core::{
    ConnId, ConsumeMode, ConsumeOutcome, Consumer, ConsumerConfig, DeliveryId, Handled,
    MessageModel, Output, Polled, Wire,
};
use rocketmq_proto::body::{
    BrokerData, ConsumerListBody, LockBatchRequestBody, LockBatchResponseBody, QueueData,
    ResetOffsetBody, TopicRouteData,
};
use rocketmq_proto::headers::{PullMessageRequest, PullMessageResponse};
use rocketmq_proto::message::{StoredMessage, encode_stored};
use rocketmq_proto::{Command, CommandHeader, MessageQueue, RequestCode, ResponseCode};

const CLIENT: &str = "10.0.0.1@fuzz";
const BROKERS: [(&str, &str); 2] = [
    ("broker-a", "10.0.0.2:10911"),
    ("broker-b", "10.0.0.3:10911"),
];

/// Reads the fuzz input as a stream of choices; zeros once it runs out.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn route(c: &mut Choices<'_>) -> Vec<u8> {
    let brokers = 1 + c.below(2);
    TopicRouteData {
        queue_datas: BROKERS[..brokers]
            .iter()
            .map(|(name, _)| QueueData {
                broker_name: (*name).to_owned(),
                read_queue_nums: 1 + c.below(4) as i32,
                write_queue_nums: 1 + c.below(4) as i32,
                perm: 6,
                topic_sys_flag: 0,
            })
            .collect(),
        broker_datas: BROKERS[..brokers]
            .iter()
            .map(|(name, addr)| BrokerData {
                cluster: "C".to_owned(),
                broker_name: (*name).to_owned(),
                broker_addrs: [(0, (*addr).to_owned())].into(),
                zone_name: None,
                enable_acting_master: false,
            })
            .collect(),
        ..TopicRouteData::default()
    }
    .encode()
}

fn records(c: &mut Choices<'_>, topic: &str, queue_id: i32, first: i64, n: usize) -> Bytes {
    let host: SocketAddr = "10.0.0.2:10911".parse().expect("a literal address");
    let mut out = BytesMut::new();
    for k in 0..n {
        let tags = ["TagA", "TagB", "TagC"][c.below(3)];
        let body_len = c.below(8);
        let message = StoredMessage {
            queue_id,
            queue_offset: first + k as i64,
            commit_log_offset: 1000 * first + k as i64,
            born_host: host,
            store_host: host,
            reconsume_times: c.below(4) as i32,
            body: Bytes::from(c.bytes(body_len)),
            topic: topic.to_owned(),
            properties: format!("TAGS\u{1}{tags}\u{2}"),
            ..StoredMessage::default()
        };
        encode_stored(&message, &mut out).expect("small records encode");
    }
    out.freeze()
}

/// An answer to `request`: usually what a broker would say, sometimes anything.
fn answer(c: &mut Choices<'_>, request: &Command) -> Command {
    let ok = Command::response(ResponseCode::SUCCESS, request.opaque);
    if c.below(8) == 0 {
        let code = ResponseCode(i32::from(c.byte()));
        let n = c.below(16);
        return Command::response(code, request.opaque).with_body(c.bytes(n));
    }
    let offset = i64::from(c.u16() % 64);
    match request.request_code() {
        RequestCode::GET_ROUTEINFO_BY_TOPIC => match c.below(4) {
            0 => Command::response(ResponseCode::TOPIC_NOT_EXIST, request.opaque),
            _ => ok.with_body(route(c)),
        },
        RequestCode::GET_CONSUMER_LIST_BY_GROUP => {
            let mut ids = vec![CLIENT.to_owned()];
            for k in 0..c.below(3) {
                ids.push(format!("10.0.0.{}@other", 10 + k));
            }
            ok.with_body(
                ConsumerListBody {
                    consumer_id_list: ids,
                }
                .encode(),
            )
        }
        RequestCode::QUERY_CONSUMER_OFFSET
        | RequestCode::GET_MAX_OFFSET
        | RequestCode::GET_MIN_OFFSET
        | RequestCode::SEARCH_OFFSET_BY_TIMESTAMP => {
            if c.below(4) == 0 {
                return Command::response(ResponseCode::QUERY_NOT_FOUND, request.opaque);
            }
            let mut ok = ok;
            ok.ext_fields
                .insert("offset".to_owned(), offset.to_string());
            ok
        }
        RequestCode::PULL_MESSAGE => {
            let Ok(pull) = request.header::<PullMessageRequest>() else {
                return ok;
            };
            let first = if c.below(4) == 0 {
                offset
            } else {
                pull.queue_offset
            };
            let n = c.below(33);
            let (code, body) = match c.below(6) {
                0 => (ResponseCode::PULL_NOT_FOUND, Bytes::new()),
                1 => (ResponseCode::PULL_OFFSET_MOVED, Bytes::new()),
                2 => (ResponseCode::PULL_RETRY_IMMEDIATELY, Bytes::new()),
                _ => (
                    ResponseCode::SUCCESS,
                    records(c, &pull.topic, pull.queue_id, first, n),
                ),
            };
            let mut response = Command::response(code, request.opaque).with_body(body);
            PullMessageResponse {
                suggest_which_broker_id: i64::from(c.below(2) as u8),
                next_begin_offset: first + n as i64,
                min_offset: 0,
                max_offset: first + n as i64 + offset,
                ..PullMessageResponse::default()
            }
            .encode_into(&mut response.ext_fields);
            response
        }
        RequestCode::LOCK_BATCH_MQ => {
            let asked = LockBatchRequestBody::decode(&request.body)
                .map(|b| b.mq_set)
                .unwrap_or_default();
            let granted = asked.into_iter().filter(|_| c.below(4) != 0).collect();
            ok.with_body(
                LockBatchResponseBody {
                    lock_ok_mq_set: granted,
                }
                .encode(),
            )
        }
        _ => ok,
    }
}

/// A request a broker might send to the client.
fn broker_request(c: &mut Choices<'_>) -> Command {
    let codes = [
        RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
        RequestCode::RESET_CONSUMER_CLIENT_OFFSET,
        RequestCode::GET_CONSUMER_RUNNING_INFO,
        RequestCode::CONSUME_MESSAGE_DIRECTLY,
        RequestCode(i32::from(c.byte())),
    ];
    let code = codes[c.below(codes.len())];
    let mut request = Command::request_with_fields(code, Default::default());
    request.opaque = i32::from(c.u16());
    for key in [
        "consumerGroup",
        "group",
        "topic",
        "clientId",
        "timestamp",
        "isForce",
    ] {
        let value = match c.below(3) {
            0 => continue,
            1 => "g".to_owned(),
            _ => "T".to_owned(),
        };
        request.ext_fields.insert(key.to_owned(), value);
    }
    request.body = match (code, c.below(3)) {
        (RequestCode::RESET_CONSUMER_CLIENT_OFFSET, 0) => {
            let table = [(
                MessageQueue::new("T", "broker-a", 0),
                i64::from(c.u16() % 64),
            )]
            .into();
            ResetOffsetBody {
                offset_table: table,
            }
            .encode()
            .into()
        }
        (RequestCode::CONSUME_MESSAGE_DIRECTLY, 0) => records(c, "T", 0, 0, 1),
        _ => {
            let n = c.below(32);
            c.bytes(n).into()
        }
    };
    if c.below(2) == 0 {
        request = request.oneway();
    }
    request
}

/// A handler's verdict, as the fuzzer picks it.
fn outcome(c: &mut Choices<'_>) -> ConsumeOutcome {
    match c.below(4) {
        0 => ConsumeOutcome::Success,
        1 => ConsumeOutcome::ReconsumeLater,
        2 => ConsumeOutcome::Retry {
            consumed: c.below(4),
            delay_level: c.below(5) as i32 - 1,
        },
        _ => ConsumeOutcome::Suspend(Duration::from_millis(u64::from(c.u16()))),
    }
}

/// Runs the check on one input; panics when it finds a fault.
pub fn check(data: &[u8]) {
    let mut c = Choices(data);
    let mut config = ConsumerConfig::new("g", vec!["10.0.0.9:9876".to_owned()]);
    config.consume_mode = [
        ConsumeMode::Concurrent,
        ConsumeMode::Orderly,
        ConsumeMode::Poll,
    ][c.below(3)];
    if c.below(3) == 0 {
        config.message_model = MessageModel::Broadcasting;
    }
    config.consume_batch_size = 1 + c.below(4);
    config.max_reconsume_times = Some(c.below(4) as i32);
    config.max_cached_messages_per_queue = 1 + c.below(64);
    config.auto_commit = c.below(2) == 0;
    config.revoke_hook = c.below(2) == 0;
    if c.below(3) == 0 {
        let limit = RateLimit::messages(1 + c.below(200) as u32);
        config.rate_limit = Some(if c.below(2) == 0 {
            limit.with_bytes(1 + u64::from(c.u16()))
        } else {
            limit
        });
    }
    let on_demand = c.below(2) == 0;
    let start = Instant::now();
    let mut now = start;
    let Ok(mut consumer) = Consumer::new(config, CLIENT, now, 1_700_000_000_000) else {
        return;
    };
    if on_demand {
        consumer.deliver_on_demand();
    }
    let expression = ["*", "TagA || TagB"][c.below(2)];
    consumer
        .subscribe(now, "T", expression)
        .expect("a valid subscription");
    let mut requests: Vec<(ConnId, Command)> = Vec::new();
    let mut conns: Vec<ConnId> = Vec::new();
    let mut deliveries: Vec<DeliveryId> = Vec::new();
    let mut queues: Vec<MessageQueue> = Vec::new();
    // Poll mode: the last take, whose tail may be handed back.
    let mut taken: Option<Polled> = None;
    // Revokes announced to the application and not answered yet.
    let mut revokes = Vec::new();
    for _ in 0..400 {
        while let Some(output) = consumer.poll_output() {
            match output {
                Output::Wire(Wire::Connect { conn, .. }) => conns.push(conn),
                Output::Wire(Wire::Send { conn, command })
                    if !command.is_oneway() && !command.is_response() =>
                {
                    requests.push((conn, command))
                }
                Output::Deliver(delivery) => {
                    queues.push(delivery.queue.clone());
                    deliveries.push(delivery.id);
                }
                Output::Revoking { request, .. } => revokes.push(request),
                _ => {}
            }
        }
        if c.is_empty() {
            break;
        }
        match c.below(10) {
            0 => {
                now += Duration::from_millis(u64::from(c.u16()) * 8);
                consumer.handle_timeout(now);
                if !revokes.is_empty() && c.below(2) == 0 {
                    let request = revokes.swap_remove(c.below(revokes.len()));
                    consumer.revoke_done(now, request);
                }
            }
            1..=4 if !requests.is_empty() => {
                let (conn, request) = requests.swap_remove(c.below(requests.len()));
                let response = answer(&mut c, &request);
                consumer.handle_command(now, conn, response);
            }
            // On demand: a delivery asked for, its handler done at once or still running.
            // Either id may be completed later: a settled one's completion is stale.
            5 if on_demand && c.below(2) == 0 => {
                let at_once = c.below(2) == 0;
                let outcome = outcome(&mut c);
                let mut handed = None;
                let went = consumer.deliver_now(now, |delivery| {
                    handed = Some((delivery.queue.clone(), delivery.id));
                    if at_once {
                        Handled::Done { outcome, at: now }
                    } else {
                        Handled::Running
                    }
                });
                assert_eq!(
                    went,
                    handed.is_some(),
                    "deliver_now says what it handed out"
                );
                if let Some((queue, id)) = handed {
                    queues.push(queue);
                    deliveries.push(id);
                }
            }
            5 if !deliveries.is_empty() => {
                let id = deliveries.swap_remove(c.below(deliveries.len()));
                let outcome = outcome(&mut c);
                consumer.complete(now, id, outcome);
            }
            6 if !conns.is_empty() => {
                let conn = conns[c.below(conns.len())];
                if c.below(2) == 0 {
                    consumer.handle_connected(now, conn);
                } else {
                    conns.retain(|k| *k != conn);
                    requests.retain(|(k, _)| *k != conn);
                    consumer.handle_disconnected(now, conn);
                }
            }
            7 if !conns.is_empty() => {
                let conn = conns[c.below(conns.len())];
                consumer.handle_command(now, conn, broker_request(&mut c));
            }
            8 => {
                let mq = queues
                    .get(c.below(queues.len().max(1)))
                    .cloned()
                    .unwrap_or_else(|| MessageQueue::new("T", "broker-a", 0));
                match c.below(9) {
                    0 => taken = consumer.poll_messages(now, 1 + c.below(40)),
                    7 => {
                        if let Some(mut polled) = taken.take() {
                            let at = c.below(polled.messages.len() + 1);
                            polled.messages.drain(..at);
                            let _ = consumer.unread(now, polled);
                        }
                    }
                    1 => drop(consumer.seek(now, &mq, i64::from(c.u16() % 64))),
                    2 => drop(consumer.seek_to_edge(now, &mq, c.below(2) == 0)),
                    3 => consumer.pause(&mq),
                    4 => consumer.resume(now, &mq),
                    5 => {
                        let _ = consumer.commit(now);
                    }
                    6 => {
                        let _ = consumer.offset_for_timestamp(now, &mq, 1_700_000_000_000);
                    }
                    _ => drop(consumer.assign(now, [mq])),
                }
            }
            9 if c.below(16) == 0 => consumer.shutdown(now),
            _ => {
                now += Duration::from_millis(u64::from(c.byte()));
                consumer.handle_timeout(now);
            }
        }
        let stats = consumer.stats();
        // A pull goes out below the limit and brings at most 32; a handed-back take (at most
        // 40) may sit on top, as it did before it was taken.
        let limit = consumer.config().max_cached_messages_per_queue + 32 + 40;
        for queue in &stats.queues {
            assert!(
                queue.cached_messages <= limit,
                "{queue:?} caches more than its limit"
            );
        }
    }
}
