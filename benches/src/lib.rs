//! Inputs shared by the criterion benchmarks, and what the benchmark programs (`src/bin`)
//! share.

use rocketmq_proto::{Command, ResponseCode};

pub mod bare;
pub mod instant;
pub mod measure;

/// A pull response header as the broker sends it (code, opaque, remark and the six extFields
/// of `PullMessageResponseHeader`), without a body.
pub fn pull_response_header() -> Command {
    let mut command = Command::response(ResponseCode::SUCCESS, 1_234_567).with_remark("FOUND");
    for (key, value) in [
        ("suggestWhichBrokerId", "0"),
        ("nextBeginOffset", "1048608"),
        ("minOffset", "0"),
        ("maxOffset", "1049600"),
        ("topicSysFlag", "0"),
        ("groupSysFlag", "0"),
    ] {
        command.ext_fields.insert(key, value);
    }
    command
}

/// A pull request's header as the consumer sends it at every pull (group, topic, queue, offset,
/// the batch, the long-poll suspension, the flags and the subscription's version).
pub fn pull_request_header() -> Command {
    use rocketmq_proto::RequestCode;
    use rocketmq_proto::headers::PullMessageRequest;
    let mut command = Command::request(
        RequestCode::PULL_MESSAGE,
        &PullMessageRequest {
            consumer_group: "ceiling-group-1733616000".to_owned(),
            topic: "ceiling-100".to_owned(),
            queue_id: 3,
            queue_offset: 1_048_576,
            max_msg_nums: 32,
            sys_flag: 2,
            commit_offset: 0,
            suspend_timeout_millis: 15_000,
            subscription: None,
            sub_version: 1_733_616_000_123,
            expression_type: None,
            max_msg_bytes: None,
            broker_name: None,
        },
    );
    command.opaque = 1_234_567;
    command
}

/// The body of a real pull response: 32 messages of 1 KiB captured from the local broker.
pub fn captured_pull_body() -> bytes::Bytes {
    let mut wire = bytes::BytesMut::from(
        &include_bytes!("../../rocketmq-proto/tests/data/pull-found-32x1k.bin")[..],
    );
    rocketmq_proto::FrameDecoder::default()
        .decode(&mut wire)
        .expect("the capture is a valid frame")
        .expect("the capture holds one whole frame")
        .body
}

/// A pull response body of `count` messages with `body_len`-byte bodies, laid out as the broker
/// stores them (tags, keys and a unique key as properties, IPv4 hosts).
pub fn synthetic_pull_body(count: usize, body_len: usize) -> bytes::Bytes {
    use rocketmq_proto::message::{StoredMessage, encode_properties, encode_stored};
    let mut out = bytes::BytesMut::new();
    for i in 0..count {
        let properties = encode_properties([
            ("TAGS", "TagA".to_owned()),
            ("KEYS", format!("k{i}")),
            ("UNIQ_KEY", format!("7F00000100002A9F00000000{i:08X}")),
            ("WAIT", "true".to_owned()),
        ]);
        let message = StoredMessage {
            queue_id: 3,
            queue_offset: 100 + i as i64,
            commit_log_offset: 1_000_000 + (i * 1200) as i64,
            born_timestamp: 1_795_900_000_000,
            born_host: "127.0.0.1:49536".parse().expect("literal address"),
            store_timestamp: 1_795_900_000_010,
            store_host: "127.0.0.1:10911".parse().expect("literal address"),
            body: vec![b'x'; body_len].into(),
            topic: "BenchTopic".to_owned(),
            properties,
            ..StoredMessage::default()
        };
        encode_stored(&message, &mut out).expect("bench records fit the format");
    }
    out.freeze()
}

/// The topic the core benchmark consumes.
pub const CORE_TOPIC: &str = "BenchTopic";
/// The client id of the core benchmark's consumer (the only member of its group).
pub const CORE_CLIENT_ID: &str = "127.0.0.1@bench#1";
/// The one broker group hosting [`CORE_TOPIC`].
pub const CORE_BROKER: &str = "broker-a";
/// [`CORE_BROKER`]'s master.
pub const CORE_BROKER_ADDR: &str = "127.0.0.1:10911";
/// The name server the core benchmark's consumer is configured with.
pub const CORE_NAMESRV: &str = "127.0.0.1:9876";
/// Read and write queues of [`CORE_TOPIC`].
pub const CORE_QUEUES: i32 = 16;
/// Messages per pull response (the consumer's default `pull_batch_size`).
pub const CORE_PULL_BATCH: usize = 32;

/// A pull response body for queue `queue_id` of [`CORE_TOPIC`]: `count` messages of
/// `body_len` bytes at offsets `first_offset..first_offset + count`, with the properties of
/// [`synthetic_pull_body`].
pub fn queue_pull_body(
    queue_id: i32,
    first_offset: i64,
    count: usize,
    body_len: usize,
) -> bytes::Bytes {
    use rocketmq_proto::message::{StoredMessage, encode_properties, encode_stored};
    let mut out = bytes::BytesMut::new();
    for i in 0..count {
        let offset = first_offset + i as i64;
        let properties = encode_properties([
            ("TAGS", "TagA".to_owned()),
            ("KEYS", format!("k{offset}")),
            (
                "UNIQ_KEY",
                format!("7F00000100002A9F{queue_id:08X}{offset:08X}"),
            ),
            ("WAIT", "true".to_owned()),
        ]);
        let message = StoredMessage {
            queue_id,
            queue_offset: offset,
            commit_log_offset: offset * 1200,
            born_timestamp: 1_795_900_000_000,
            born_host: "127.0.0.1:49536".parse().expect("literal address"),
            store_timestamp: 1_795_900_000_010,
            store_host: CORE_BROKER_ADDR.parse().expect("literal address"),
            body: vec![b'x'; body_len].into(),
            topic: CORE_TOPIC.to_owned(),
            properties,
            ..StoredMessage::default()
        };
        encode_stored(&message, &mut out).expect("bench records fit the format");
    }
    out.freeze()
}

/// Successful pull responses for `rounds` rounds over the [`CORE_QUEUES`] queues:
/// `responses[round][queue]` carries [`CORE_PULL_BATCH`] messages of `body_len` bytes at
/// offsets `round * 32..(round + 1) * 32` and a `PullMessageResponse` header whose
/// `nextBeginOffset` is the next round's first offset. The opaque is 0: the driver sets it to
/// the outstanding pull's before feeding a (cloned) response.
pub fn core_pull_rounds(rounds: usize, body_len: usize) -> Vec<Vec<Command>> {
    use rocketmq_proto::CommandHeader;
    use rocketmq_proto::headers::PullMessageResponse;
    (0..rounds)
        .map(|round| {
            (0..CORE_QUEUES)
                .map(|queue_id| {
                    let first = (round * CORE_PULL_BATCH) as i64;
                    let next = first + CORE_PULL_BATCH as i64;
                    let mut response = Command::response(ResponseCode::SUCCESS, 0)
                        .with_remark("FOUND")
                        .with_body(queue_pull_body(queue_id, first, CORE_PULL_BATCH, body_len));
                    PullMessageResponse {
                        suggest_which_broker_id: 0,
                        next_begin_offset: next,
                        min_offset: 0,
                        max_offset: (rounds * CORE_PULL_BATCH) as i64,
                        offset_delta: None,
                        topic_sys_flag: None,
                        group_sys_flag: None,
                        forbidden_type: None,
                    }
                    .encode_into(&mut response.ext_fields);
                    response
                })
                .collect()
        })
        .collect()
}

/// A [`Consumer`](rocketmq_consumer_core::Consumer) in the steady state "pulling all
/// [`CORE_QUEUES`] queues of [`CORE_TOPIC`]", reached without a network (see
/// [`SteadyConsumer::new`]), with a fake clock the driver advances itself.
#[derive(Debug)]
pub struct SteadyConsumer {
    /// The consumer.
    pub consumer: rocketmq_consumer_core::Consumer,
    /// The fake clock: started from one `Instant::now()`, advanced by hand.
    pub now: std::time::Instant,
    /// The connection to [`CORE_BROKER_ADDR`].
    pub broker_conn: rocketmq_consumer_core::ConnId,
    /// The opaque of each queue's outstanding `PULL_MESSAGE`, by queue id.
    pub pull_opaques: Vec<i32>,
    completions: Vec<rocketmq_consumer_core::DeliveryId>,
}

impl SteadyConsumer {
    /// Creates a consumer with `config` (its group and name servers are used as given),
    /// subscribes it to [`CORE_TOPIC`] with `*`, and answers its outputs by hand until every
    /// queue has a pull outstanding: the route of [`CORE_TOPIC`] (one broker, 16 read/write
    /// queues, perm 6; the retry topic has none: `TOPIC_NOT_EXIST`), heartbeats (`SUCCESS`),
    /// the group's members (only [`CORE_CLIENT_ID`]), committed offsets (0) and, for an orderly
    /// consumer, queue locks (all granted); connections open at once.
    ///
    /// # Panics
    ///
    /// When the consumer asks for something else, or does not end up pulling every queue.
    pub fn new(config: rocketmq_consumer_core::ConsumerConfig) -> Self {
        use rocketmq_consumer_core::{Consumer, Output, Wire};
        use rocketmq_proto::body::{
            BrokerData, ConsumerListBody, MASTER_ID, PERM_READ, PERM_WRITE, QueueData,
            TopicRouteData,
        };
        use rocketmq_proto::headers::{GetRouteInfoRequest, QueryConsumerOffsetResponse};
        use rocketmq_proto::{CommandHeader, RequestCode};

        let now = std::time::Instant::now();
        let mut consumer =
            Consumer::new(config, CORE_CLIENT_ID, now, 1_795_900_000_000).expect("valid config");
        consumer
            .subscribe(now, CORE_TOPIC, "*")
            .expect("valid subscription");
        consumer.handle_timeout(now);

        let route = TopicRouteData {
            queue_datas: vec![QueueData {
                broker_name: CORE_BROKER.to_owned(),
                read_queue_nums: CORE_QUEUES,
                write_queue_nums: CORE_QUEUES,
                perm: PERM_READ | PERM_WRITE,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "DefaultCluster".to_owned(),
                broker_name: CORE_BROKER.to_owned(),
                broker_addrs: [(MASTER_ID, CORE_BROKER_ADDR.to_owned())].into(),
                zone_name: None,
                enable_acting_master: false,
            }],
            ..TopicRouteData::default()
        }
        .encode();
        let members = ConsumerListBody {
            consumer_id_list: vec![CORE_CLIENT_ID.to_owned()],
        }
        .encode();

        let mut broker_conn = None;
        let mut pull_opaques = vec![None; CORE_QUEUES as usize];
        while let Some(output) = consumer.poll_output() {
            match output {
                Output::Wire(Wire::Connect { conn, addr }) => {
                    if addr == CORE_BROKER_ADDR {
                        broker_conn = Some(conn);
                    }
                    consumer.handle_connected(now, conn);
                }
                Output::Wire(Wire::Send { conn, command }) => {
                    let success = Command::response(ResponseCode::SUCCESS, command.opaque);
                    let answer = match command.request_code() {
                        RequestCode::GET_ROUTEINFO_BY_TOPIC => {
                            let header: GetRouteInfoRequest =
                                command.header().expect("a route request header");
                            if header.topic == CORE_TOPIC {
                                Some(success.with_body(route.clone()))
                            } else {
                                Some(Command::response(
                                    ResponseCode::TOPIC_NOT_EXIST,
                                    command.opaque,
                                ))
                            }
                        }
                        RequestCode::HEART_BEAT => Some(success),
                        RequestCode::GET_CONSUMER_LIST_BY_GROUP => {
                            Some(success.with_body(members.clone()))
                        }
                        RequestCode::QUERY_CONSUMER_OFFSET => {
                            let mut answer = success;
                            QueryConsumerOffsetResponse { offset: 0 }
                                .encode_into(&mut answer.ext_fields);
                            Some(answer)
                        }
                        // Orderly: every queue asked for is granted.
                        RequestCode::LOCK_BATCH_MQ => {
                            let asked =
                                rocketmq_proto::body::LockBatchRequestBody::decode(&command.body)
                                    .expect("a lock request body");
                            let granted = rocketmq_proto::body::LockBatchResponseBody {
                                lock_ok_mq_set: asked.mq_set,
                            };
                            Some(success.with_body(granted.encode()))
                        }
                        RequestCode::PULL_MESSAGE => {
                            let queue = pull_queue(&command);
                            assert!(pull_opaques[queue].is_none(), "one pull per queue");
                            pull_opaques[queue] = Some(command.opaque);
                            None
                        }
                        RequestCode::UPDATE_CONSUMER_OFFSET if command.is_oneway() => None,
                        other => panic!("unexpected request {other:?} during setup"),
                    };
                    if let Some(answer) = answer {
                        consumer.handle_command(now, conn, answer);
                    }
                }
                Output::Event(_) => {}
                other => panic!("unexpected output during setup: {other:?}"),
            }
        }
        let pull_opaques = pull_opaques
            .into_iter()
            .enumerate()
            .map(|(queue, opaque)| {
                opaque.unwrap_or_else(|| panic!("queue {queue} has no pull outstanding"))
            })
            .collect();
        assert!(
            consumer.poll_timeout().is_some_and(|at| at > now),
            "no timer is due"
        );
        Self {
            consumer,
            now,
            broker_conn: broker_conn.expect("a connection to the broker"),
            pull_opaques,
            completions: Vec::new(),
        }
    }

    /// Answers each queue's outstanding pull with its response in `responses` (cloned, with
    /// the pull's opaque), in queue order; after each, drains the outputs, completes every
    /// delivery with `Success` and notes the queue's next pull. Advances the clock by 1 µs
    /// per input. Returns the number of messages delivered.
    ///
    /// # Panics
    ///
    /// On an output other than a pull, a oneway commit, a delivery or an event.
    pub fn round(&mut self, responses: &[Command]) -> usize {
        self.answer_each(responses, Self::drain_and_complete)
    }

    /// As [`SteadyConsumer::round`], but drains the outputs as the driver's task does with
    /// handlers that finish on their first poll: every output but deliveries first, then the
    /// deliveries ready at that time, each completed as soon as it is taken (so each
    /// completion hands out the next delivery while `max_in_flight_deliveries` holds the rest
    /// back), and again until nothing is left.
    ///
    /// # Panics
    ///
    /// As [`SteadyConsumer::round`].
    pub fn round_as_driver(&mut self, responses: &[Command]) -> usize {
        self.answer_each(responses, Self::drain_as_driver)
    }

    /// As [`SteadyConsumer::round_as_driver`], with the deliveries handed out on demand
    /// ([`Consumer::deliver_on_demand`](rocketmq_consumer_core::Consumer::deliver_on_demand)):
    /// each handler finishes as its delivery is handed out, settling it in the same call. The
    /// consumer must have been switched to on-demand deliveries.
    ///
    /// # Panics
    ///
    /// As [`SteadyConsumer::round`].
    pub fn round_on_demand(&mut self, responses: &[Command]) -> usize {
        self.answer_each(responses, Self::drain_on_demand)
    }

    fn answer_each(&mut self, responses: &[Command], drain: fn(&mut Self) -> usize) -> usize {
        let mut delivered = 0;
        for (queue, response) in responses.iter().enumerate() {
            let mut response = response.clone();
            response.opaque = self.pull_opaques[queue];
            self.tick();
            self.consumer
                .handle_command(self.now, self.broker_conn, response);
            delivered += drain(self);
        }
        delivered
    }

    /// The driver's pass (`rocketmq-driver`'s `Io::drain`) with inline handlers that finish
    /// at once; returns the number of messages delivered.
    fn drain_as_driver(&mut self) -> usize {
        use rocketmq_consumer_core::ConsumeOutcome;

        let mut delivered = 0;
        loop {
            while let Some(output) = self.consumer.poll_output_except_deliveries() {
                self.carry(output);
            }
            let ready = self.consumer.ready_deliveries();
            if ready == 0 {
                return delivered;
            }
            for _ in 0..ready {
                let Some(delivery) = self.consumer.poll_delivery() else {
                    break;
                };
                delivered += delivery.messages.len();
                self.tick();
                self.consumer
                    .complete(self.now, delivery.id, ConsumeOutcome::Success);
            }
        }
    }

    /// The driver's pass with deliveries on demand and handlers that finish at once; returns
    /// the number of messages delivered.
    fn drain_on_demand(&mut self) -> usize {
        use rocketmq_consumer_core::{ConsumeOutcome, Handled};

        let mut delivered = 0;
        loop {
            while let Some(output) = self.consumer.poll_output_except_deliveries() {
                self.carry(output);
            }
            self.tick();
            let now = self.now;
            let handed = self.consumer.deliver_now(now, |delivery| {
                delivered += delivery.messages.len();
                Handled::Done {
                    outcome: ConsumeOutcome::Success,
                    at: now,
                }
            });
            if !handed {
                return delivered;
            }
        }
    }

    /// Carries out an output that is not a delivery.
    fn carry(&mut self, output: rocketmq_consumer_core::Output) {
        use rocketmq_consumer_core::{Output, Wire};
        use rocketmq_proto::RequestCode;

        match output {
            Output::Wire(Wire::Send { command, .. })
                if command.request_code() == RequestCode::PULL_MESSAGE =>
            {
                self.pull_opaques[pull_queue(&command)] = command.opaque;
            }
            Output::Wire(Wire::Send { command, .. }) if command.is_oneway() => {}
            Output::Event(_) => {}
            other => panic!("unexpected output in the steady state: {other:?}"),
        }
    }

    /// Drains the outputs and completes deliveries until there are none left; returns the
    /// number of messages delivered.
    fn drain_and_complete(&mut self) -> usize {
        use rocketmq_consumer_core::{ConsumeOutcome, Output};

        let mut delivered = 0;
        let mut completions = std::mem::take(&mut self.completions);
        loop {
            while let Some(output) = self.consumer.poll_output() {
                match output {
                    Output::Deliver(delivery) => {
                        delivered += delivery.messages.len();
                        completions.push(delivery.id);
                    }
                    other => self.carry(other),
                }
            }
            if completions.is_empty() {
                break;
            }
            for id in completions.drain(..) {
                self.tick();
                self.consumer
                    .complete(self.now, id, ConsumeOutcome::Success);
            }
        }
        self.completions = completions;
        delivered
    }

    fn tick(&mut self) {
        self.now += std::time::Duration::from_micros(1);
    }
}

/// The queue id of a `PULL_MESSAGE` request.
fn pull_queue(command: &Command) -> usize {
    command
        .ext_fields
        .get("queueId")
        .and_then(|id| id.parse().ok())
        .filter(|&id: &usize| id < CORE_QUEUES as usize)
        .expect("a pull of one of the topic's queues")
}

/// The environment variable `name` parsed, or `default` when it is unset or does not parse.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Microseconds since the Unix epoch: a suffix that makes topic and group names new.
pub fn stamp() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_consumer_commits_what_it_consumed() {
        use rocketmq_consumer_core::ConsumeMode;
        let modes = [ConsumeMode::Concurrent, ConsumeMode::Orderly];
        for (batch, mode) in [1, 32].into_iter().flat_map(|b| modes.map(|m| (b, m))) {
            let mut config = rocketmq_consumer_core::ConsumerConfig::new(
                "bench-group",
                vec![CORE_NAMESRV.to_owned()],
            );
            config.consume_batch_size = batch;
            config.consume_mode = mode;
            config.max_in_flight_deliveries = 1024;
            let rounds = core_pull_rounds(3, 16);
            let mut steady = SteadyConsumer::new(config);
            for round in &rounds {
                assert_eq!(steady.round(round), CORE_QUEUES as usize * CORE_PULL_BATCH);
            }
            let stats = steady.consumer.stats();
            assert_eq!(stats.queues.len(), CORE_QUEUES as usize);
            assert_eq!(stats.in_flight_deliveries, 0);
            for queue in &stats.queues {
                assert_eq!(queue.committable_offset, 3 * CORE_PULL_BATCH as i64);
                assert_eq!(queue.cached_messages, 0);
            }
            assert_eq!(
                stats.delivered,
                (3 * CORE_QUEUES as usize * CORE_PULL_BATCH / batch) as u64
            );
        }
    }
}
