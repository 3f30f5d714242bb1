//! The simulated network: every output of a consumer carried out (connections opened and
//! closed, commands sent as bytes through the real codec with seeded latency in TCP order,
//! deliveries handed to a simulated handler), and the cluster's answers carried back.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use std::collections::BTreeSet;

use consumer_core::{ConsumeMode, ConsumeOutcome, Delivery, Event, Handled, Output, Wire};
use proto::headers::SendMessageRequestV2;
use proto::{Command, FrameDecoder, HeaderEncoding, RequestCode, frame};

use super::{Ev, Outstanding, Position, World};
use crate::sim::{ConnKey, SimRng};

impl World {
    /// Carries out every output of every node and the cluster until none is left.
    pub(super) fn drain(&mut self) {
        loop {
            let mut progress = false;
            for i in 0..self.nodes.len() {
                loop {
                    // No input reaches the consumer while its outputs are drained, so every
                    // delivery comes after every other output (`Consumer::poll_output`).
                    let mut delivering = false;
                    while let Some(output) = self.nodes[i].consumer.poll_output() {
                        progress = true;
                        let delivery = matches!(output, Output::Deliver(_));
                        self.fail_if(
                            delivering && !delivery,
                            &format!("node {i}: an output came after a delivery in one drain"),
                        );
                        delivering |= delivery;
                        self.on_output(i, output);
                    }
                    // On demand, one delivery at a time, then what it asked for.
                    if !(self.config.deliver_on_demand && self.deliver_one_now(i)) {
                        break;
                    }
                    progress = true;
                }
            }
            while let Some((key, command)) = self.cluster.poll_output() {
                progress = true;
                if let Some(&(i, conn)) = self.conn_owner.get(&key) {
                    let bytes = encode(&command, self.rng.chance(1, 2));
                    let at = self.ordered_at(key, false);
                    self.schedule(at, Ev::ToNode(i, conn, bytes));
                }
            }
            while let Some(key) = self.cluster.poll_closed() {
                progress = true;
                if let Some((i, conn)) = self.conn_owner.remove(&key) {
                    self.nodes[i].keys.remove(&conn);
                    let at = self.now + self.latency();
                    self.schedule(at, Ev::Lost(i, conn));
                }
            }
            if !progress {
                break;
            }
        }
    }

    pub(super) fn on_output(&mut self, i: usize, output: Output) {
        match output {
            Output::Wire(Wire::Connect { conn, addr }) => {
                *self.opened.entry(addr.clone()).or_default() += 1;
                if let Some(partition) = self.partitioned.get_mut(&addr) {
                    // The SYN goes unanswered: neither connected nor refused. The consumer's
                    // connect deadline must give up on it.
                    partition.connects += 1;
                    self.note(format!("node {i}: connect to {addr} hangs (partitioned)"));
                    return;
                }
                self.next_key += 1;
                let key = self.next_key;
                let at = self.now + self.latency();
                if self.cluster.connect(key, &addr) {
                    self.key_addr.insert(key, addr.clone());
                    self.conn_owner.insert(key, (i, conn));
                    self.nodes[i].keys.insert(conn, key);
                    self.schedule(at, Ev::Connected(i, conn));
                } else {
                    self.schedule(at, Ev::Refused(i, conn));
                }
            }
            Output::Wire(Wire::Send { conn, command }) => {
                if let Some(&key) = self.nodes[i].keys.get(&conn) {
                    if !command.is_response()
                        && let Some(addr) = self.key_addr.get(&key)
                    {
                        let code = command.request_code();
                        match self.sent.get_mut(addr) {
                            Some(codes) => *codes.entry(code).or_default() += 1,
                            None => {
                                self.sent.insert(addr.clone(), [(code, 1)].into());
                            }
                        }
                    }
                    let bytes = encode(&command, false);
                    let at = self.ordered_at(key, true);
                    self.schedule(at, Ev::ToCluster(key, bytes));
                }
            }
            Output::Revoking { request, queues } => {
                self.nodes[i].revoking.push((self.now, request, queues));
            }
            Output::Trace(batch) => {
                let records = match proto::trace::TraceRecord::decode_all(&batch.data) {
                    Ok(records) => records,
                    Err(e) => self.fail(&format!("node {i} traced undecodable records: {e}")),
                };
                self.fail_if(
                    records.len() != batch.records,
                    &format!(
                        "node {i}: a trace batch counts {} records, holds {}",
                        batch.records,
                        records.len()
                    ),
                );
                let now = self.now;
                self.nodes[i]
                    .traces
                    .extend(records.into_iter().map(|r| (now, r)));
            }
            Output::Wire(Wire::Close { conn }) => {
                if let Some(key) = self.nodes[i].keys.remove(&conn) {
                    self.conn_owner.remove(&key);
                    self.cluster.disconnect(self.now, key);
                }
            }
            Output::Deliver(delivery) => {
                let owned = self.nodes[i]
                    .consumer
                    .assignment()
                    .any(|q| q == delivery.queue);
                self.handed(i, delivery, owned, None);
            }
            Output::StoreOffsets(table) => {
                self.nodes[i].stored = table.into_iter().collect();
            }
            Output::Event(event) => {
                if let Event::Closed(report) = &event {
                    self.nodes[i].report = Some(report.clone());
                }
                if let Event::GaveUp { queue, offset } = &event {
                    self.nodes[i].gave_up.insert((queue.clone(), *offset));
                }
                self.nodes[i].events.push((self.now, event.clone()));
                self.note(format!("node {i}: {event:?}"));
            }
        }
    }

    /// With [`WorldConfig::deliver_on_demand`](super::WorldConfig::deliver_on_demand): asks
    /// node `i` for a delivery, as the driver does; its handler may finish as it is handed
    /// out ([`Node::at_once`](super::Node::at_once)). Returns whether there was one.
    fn deliver_one_now(&mut self, i: usize) -> bool {
        let now = self.now;
        let assigned: Vec<_> = self.nodes[i].consumer.assignment().collect();
        let at_once = !self.nodes[i].hold
            && match self.nodes[i].at_once {
                Some(all) => all,
                None => self.rng.chance(1, 2),
            };
        let (rng, config, poison) = (&mut self.rng, &self.config, &self.poison);
        let mut handed = None;
        let went = self.nodes[i].consumer.deliver_now(now, |delivery| {
            let outcome = at_once.then(|| draw_outcome(rng, config, poison, &delivery));
            handed = Some((delivery, outcome));
            match outcome {
                Some(outcome) => Handled::Done { outcome, at: now },
                None => Handled::Running,
            }
        });
        self.fail_if(
            went != handed.is_some(),
            &format!("node {i}: deliver_now returned {went}, but handed out {handed:?}"),
        );
        if let Some((delivery, outcome)) = handed {
            let owned = assigned.contains(&delivery.queue);
            self.handed(i, delivery, owned, outcome);
        }
        went
    }

    /// Node `i` handed out `delivery` (of a queue it `owned` then): the checks every delivery
    /// must pass, then its handler runs, or (`finished`) already ran and was settled.
    fn handed(
        &mut self,
        i: usize,
        delivery: Delivery,
        owned: bool,
        finished: Option<ConsumeOutcome>,
    ) {
        self.deliveries += 1;
        self.fail_if(
            !owned,
            &format!(
                "node {i} delivered {:?} which it does not own",
                delivery.queue
            ),
        );
        self.fail_if(
            self.nodes[i].paused.contains(&delivery.queue),
            &format!("node {i} delivered {:?}, which it paused", delivery.queue),
        );
        if self.config.mode == ConsumeMode::Orderly {
            self.check_orderly_delivery(i, &delivery);
        }
        let origins: Vec<Option<Position>> = delivery
            .messages
            .iter()
            .map(|m| self.origin.get(m.body()).cloned())
            .collect();
        self.nodes[i].delivered.push((self.now, delivery.clone()));
        if let Some(outcome) = finished {
            self.handler_done(i, origins, outcome);
            return;
        }
        self.nodes[i].outstanding.insert(
            delivery.id,
            Outstanding {
                queue: delivery.queue.clone(),
                origins,
            },
        );
        if self.nodes[i].hold {
            self.nodes[i].held.push(delivery.id);
            return;
        }
        let (lo, hi) = self.config.handler_time;
        let took = lo + Duration::from_micros(self.rng.below((hi - lo).as_micros() as u64 + 1));
        let outcome = draw_outcome(&mut self.rng, &self.config, &self.poison, &delivery);
        let at = self.now + took;
        self.schedule(at, Ev::Complete(i, delivery.id, outcome));
    }

    pub(super) fn latency(&mut self) -> Duration {
        let (lo, hi) = self.config.latency;
        lo + Duration::from_micros(self.rng.below((hi - lo).as_micros() as u64 + 1))
    }

    /// A delivery time after every earlier one on the same connection and direction.
    pub(super) fn ordered_at(&mut self, key: ConnKey, to_cluster: bool) -> Instant {
        let at = self.now + self.latency();
        let last = self.last_at.entry((key, to_cluster)).or_insert(at);
        let at = at.max(*last);
        *last = at;
        at
    }

    pub(super) fn schedule(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at, self.seq), ev);
    }

    /// Remembers a send-back (or a re-send to a retry topic) going to the cluster, to learn
    /// from its answer that the message is safe in the broker.
    pub(super) fn watch_send_back(&mut self, key: ConnKey, command: &Command) {
        if command.is_response() {
            return;
        }
        let body = match command.request_code() {
            RequestCode::CONSUMER_SEND_MSG_BACK => {
                let offset = command
                    .header::<proto::headers::ConsumerSendMsgBackRequest>()
                    .ok()
                    .map(|h| h.offset);
                // A slave holds its master's records at the same commit-log offsets.
                let broker = self.key_addr.get(&key).and_then(|addr| {
                    self.cluster
                        .node_at(addr)
                        .map(|(broker, _)| broker.to_owned())
                });
                match (broker, offset) {
                    (Some(broker), Some(offset)) => self
                        .cluster
                        .message_at_commit_log_offset(&broker, offset)
                        .map(|m| m.body.clone()),
                    _ => None,
                }
            }
            RequestCode::SEND_MESSAGE_V2 => command
                .header::<SendMessageRequestV2>()
                .ok()
                .filter(|h| h.topic.starts_with("%RETRY%"))
                .map(|_| command.body.clone()),
            _ => None,
        };
        if let Some(body) = body {
            self.send_backs.insert((key, command.opaque), body);
        }
    }
}

pub(super) fn encode(command: &Command, binary: bool) -> Bytes {
    let mut buf = BytesMut::new();
    let encoding = if binary {
        HeaderEncoding::Binary
    } else {
        HeaderEncoding::Json
    };
    frame::encode(command, encoding, &mut buf).expect("simulated commands fit a frame");
    buf.freeze()
}

pub(super) fn decode(bytes: &Bytes) -> Command {
    let mut buf = BytesMut::from(&bytes[..]);
    FrameDecoder::default()
        .decode(&mut buf)
        .expect("the codec decodes what it encoded")
        .expect("one whole frame")
}

/// A handler's verdict on `delivery`: a poisoned message never succeeds (those before it
/// may), and `config.reconsume_percent` of the rest ask, at random, to reconsume later, to
/// retry part of the batch or to suspend.
fn draw_outcome(
    rng: &mut SimRng,
    config: &super::WorldConfig,
    poison: &BTreeSet<Bytes>,
    delivery: &Delivery,
) -> ConsumeOutcome {
    let len = delivery.messages.len();
    let poisoned = delivery
        .messages
        .iter()
        .position(|m| poison.contains(m.body()));
    match poisoned {
        Some(0) => ConsumeOutcome::ReconsumeLater,
        Some(k) => ConsumeOutcome::Retry {
            consumed: k,
            delay_level: 0,
        },
        None if rng.chance(config.reconsume_percent, 100) => match rng.below(3) {
            0 => ConsumeOutcome::ReconsumeLater,
            1 => ConsumeOutcome::Retry {
                consumed: rng.index(len),
                delay_level: 0,
            },
            _ => ConsumeOutcome::Suspend(Duration::from_millis(10 + rng.below(200))),
        },
        None => ConsumeOutcome::Success,
    }
}
