//! Failed messages (`remoting-protocol.md` §7.2): what each mode does with the messages a
//! handler did not consume, and with deliveries that overran `consume_timeout`.
//!
//! - Concurrent clustering sends each one back with `CONSUMER_SEND_MSG_BACK`; if the broker
//!   refuses or does not answer, it sends the message itself to `%RETRY%<group>` as Java's
//!   `sendMessageBackAsNormalMessage` does; if that fails too, the message is delivered again
//!   locally after `send_back_retry_delay`. Until the broker has stored the retry copy the
//!   message stays cached, so the committed offset cannot pass it.
//! - Orderly suspends the queue and redelivers the same batch; a message that failed
//!   `max_reconsume_times` times is sent to the retry topic with its reconsume count over the
//!   limit, which the broker turns into the dead-letter queue, and the queue moves on.
//! - Broadcasting sends nothing back: it redelivers locally, and gives up on a message after
//!   `max_reconsume_times` (Java drops failed broadcast messages at once).
//! - `ConsumeOutcome::Suspend` in concurrent mode keeps the messages for a local redelivery
//!   after the pause, in either model: nothing is sent back.

use std::time::Instant;

use proto::headers::{ConsumerSendMsgBackRequest, SendMessageRequestV2};
use proto::message::{Message, property, sys_flag};
use proto::{Command, MessageQueue, RequestCode};

use super::deliveries::Source;
use super::message_trace::ReturnType;
use super::send_back::{SendBack, Stage};
use super::{Consumer, Epoch, PendingKind, QueueKey};
use crate::config::{ConsumeMode, MessageModel};
use crate::output::{ConsumeOutcome, Event, Output};
use crate::timer::Timer;

/// Java's internal producer group for messages the consumer re-sends (`MixAll`).
const INNER_PRODUCER_GROUP: &str = "CLIENT_INNER_PRODUCER";
/// The delay level Java uses for a message whose delivery timed out.
const TIMEOUT_DELAY_LEVEL: i32 = 3;

impl Consumer {
    /// The handler did not consume `failed` (queue offsets of queue `key`, all in flight).
    pub(super) fn retry_failed(
        &mut self,
        now: Instant,
        key: QueueKey,
        epoch: Epoch,
        failed: &[i64],
        outcome: ConsumeOutcome,
    ) {
        let max = self.config.effective_max_reconsume_times();
        let orderly = self.config.consume_mode == ConsumeMode::Orderly;
        let broadcasting = self.config.message_model == MessageModel::Broadcasting;
        let suspend = match outcome {
            ConsumeOutcome::Suspend(asked) => self.config.clamped_suspend(asked),
            _ => self.config.clamped_suspend(self.config.suspend_delay),
        };
        let Some(state) = self.queues.get(key) else {
            return;
        };
        let mq = state.mq.clone();
        if let (false, ConsumeOutcome::Suspend(_)) = (orderly, outcome) {
            // Kept here, not sent back: delivered again by this consumer after the pause.
            self.queues
                .change_cache(key, |pq| pq.retry_at(failed, now + suspend));
            self.timers.set(now + suspend, Timer::Redeliver);
            return;
        }
        if orderly || broadcasting {
            let (give_up, retry): (Vec<i64>, Vec<i64>) = failed.iter().partition(|&&offset| {
                state
                    .pq()
                    .get(offset)
                    .is_some_and(|m| m.reconsume_times() >= max)
            });
            let at = now
                + if orderly {
                    suspend
                } else {
                    self.config.reconsume_delay
                };
            self.queues.change_cache(key, |pq| pq.retry_at(&retry, at));
            if !retry.is_empty() {
                self.timers.set(at, Timer::Redeliver);
            }
            if orderly && !broadcasting {
                let messages = self
                    .queues
                    .change_cache(key, |pq| pq.mark_sending(&give_up))
                    .unwrap_or_default();
                for message in messages {
                    let back = self.send_back_of(key, epoch, &mq, message, 0, Stage::DeadLetter);
                    self.send_to_retry_topic(now, back);
                }
            } else {
                self.queues.change_cache(key, |pq| pq.ack(&give_up));
                for offset in give_up {
                    self.outputs.push_back(Output::Event(Event::GaveUp {
                        queue: mq.clone(),
                        offset,
                    }));
                }
            }
            return;
        }
        let delay_level = match outcome {
            ConsumeOutcome::Retry { delay_level, .. } => delay_level,
            _ => 0,
        };
        let messages = self
            .queues
            .change_cache(key, |pq| pq.mark_sending(failed))
            .unwrap_or_default();
        for message in messages {
            let back = self.send_back_of(key, epoch, &mq, message, delay_level, Stage::Broker);
            self.send_back(now, back);
        }
    }

    /// Concurrent clustering: deliveries handed out `consume_timeout` ago or earlier have their
    /// messages (those still cached and in flight) sent back, and their completions ignored.
    pub(super) fn expire_deliveries(&mut self, now: Instant) {
        let timeout = self.config.consume_timeout;
        for flight in self.deliveries.take_expired(now, timeout) {
            if let Some(trace) = flight.trace {
                let records = trace.close(self.unix_ms(now), ReturnType::TimedOut);
                self.outputs.push_back(Output::Trace(records));
            }
            let Source::Queue {
                key,
                epoch,
                offsets,
            } = flight.source
            else {
                continue;
            };
            self.counters.expired += 1;
            let Some(mq) = self.queues.live(key, epoch).map(|s| s.mq.clone()) else {
                continue;
            };
            let messages = self
                .queues
                .change_cache(key, |pq| pq.mark_sending(&offsets))
                .unwrap_or_default();
            for message in messages {
                let back =
                    self.send_back_of(key, epoch, &mq, message, TIMEOUT_DELAY_LEVEL, Stage::Broker);
                self.send_back(now, back);
            }
        }
    }

    fn send_back_of(
        &self,
        key: QueueKey,
        epoch: Epoch,
        queue: &MessageQueue,
        message: Message,
        delay_level: i32,
        stage: Stage,
    ) -> SendBack {
        SendBack {
            key,
            epoch,
            queue: queue.clone(),
            message,
            delay_level,
            stage,
        }
    }

    /// `CONSUMER_SEND_MSG_BACK` to the master of the message's broker.
    fn send_back(&mut self, now: Instant, back: SendBack) {
        let Some(addr) = self.master_addr(back.queue.broker_name()) else {
            return self.on_send_back_failed(now, back);
        };
        let message = &back.message;
        let header = ConsumerSendMsgBackRequest {
            offset: message.commit_log_offset(),
            group: self.config.group.clone(),
            delay_level: back.delay_level,
            origin_msg_id: Some(message.msg_id()),
            origin_topic: Some(message.topic().to_owned()),
            unit_mode: false,
            max_reconsume_times: Some(self.config.effective_max_reconsume_times()),
        };
        let request = Command::request(RequestCode::CONSUMER_SEND_MSG_BACK, &header);
        self.request(now, &addr, request, PendingKind::SendBack(Box::new(back)));
    }

    /// Sends the message as a new one to `%RETRY%<group>`, marked as Java's
    /// `sendMessageBackAsNormalMessage` marks it; the broker delays it, or moves it to the
    /// dead-letter queue when its reconsume count is over the limit.
    fn send_to_retry_topic(&mut self, now: Instant, back: SendBack) {
        let Some(addr) = self.master_addr(back.queue.broker_name()) else {
            return self.on_send_back_failed(now, back);
        };
        let max = self.config.effective_max_reconsume_times();
        let times = back.message.reconsume_times();
        let mut message = back.message.clone();
        if message.property(property::RETRY_TOPIC).is_none() {
            let topic = message.topic().to_owned();
            message.set_property(property::RETRY_TOPIC, &topic);
        }
        if message.property(property::ORIGIN_MESSAGE_ID).is_none() {
            let id = message.msg_id();
            message.set_property(property::ORIGIN_MESSAGE_ID, &id);
        }
        message.set_property(property::RECONSUME_TIME, &(times + 1).to_string());
        message.set_property(property::MAX_RECONSUME_TIMES, &max.to_string());
        message.set_property(property::DELAY, &(3 + times).to_string());
        message.remove_property(property::TRAN_MSG);
        let queue_id = self
            .cluster
            .route(&self.retry_topic)
            .and_then(|route| {
                route
                    .publish_queues(&self.retry_topic)
                    .into_iter()
                    .find(|q| q.broker_name() == back.queue.broker_name())
            })
            .map_or(0, |q| q.queue_id());
        let header = SendMessageRequestV2 {
            producer_group: INNER_PRODUCER_GROUP.to_owned(),
            topic: self.retry_topic.clone(),
            default_topic: "TBW102".to_owned(),
            default_topic_queue_nums: 4,
            queue_id,
            // The body goes out decompressed.
            sys_flag: message.sys_flag()
                & !(sys_flag::COMPRESSED | sys_flag::COMPRESSION_TYPE_MASK),
            born_timestamp: message.born_timestamp(),
            flag: message.flag(),
            properties: Some(String::from_utf8_lossy(message.raw_properties()).into_owned()),
            reconsume_times: Some(times + 1),
            unit_mode: Some(false),
            max_reconsume_times: Some(max),
            batch: None,
            broker_name: None,
        };
        let request =
            Command::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(message.body_bytes());
        self.request(now, &addr, request, PendingKind::SendBack(Box::new(back)));
    }

    /// The broker stored the retry (or dead-letter) copy: the original is done.
    pub(super) fn on_sent_back(&mut self, now: Instant, back: SendBack) {
        self.counters.sent_back += 1;
        let offset = back.message.queue_offset();
        if self.queues.live(back.key, back.epoch).is_none() {
            return;
        }
        self.queues.change_cache(back.key, |pq| pq.ack(&[offset]));
        if back.stage == Stage::DeadLetter {
            self.outputs.push_back(Output::Event(Event::GaveUp {
                queue: back.queue,
                offset,
            }));
        }
        self.after_queue_change(now, back.key);
    }

    /// One way back failed: try the next; then deliver the message again locally, unless it
    /// is out of attempts, in which case the send is tried again later: another delivery would
    /// exceed `max_reconsume_times`.
    pub(super) fn on_send_back_failed(&mut self, now: Instant, mut back: SendBack) {
        if back.stage == Stage::Broker {
            back.stage = Stage::RetryTopic;
            // A group holding queue locks looks orderly to the broker, which moves a plain
            // send to its retry topic straight to the dead-letter queue
            // (`SendMessageProcessor.handleRetryAndDLQ`, `RebalanceLockManager.isLockAllExpired`).
            // With hand-over locks, a message with retries left is redelivered here instead.
            let retries_left =
                back.message.reconsume_times() < self.config.effective_max_reconsume_times();
            if !(self.handover_enabled() && retries_left) {
                return self.send_to_retry_topic(now, back);
            }
        }
        let offset = back.message.queue_offset();
        let max = self.config.effective_max_reconsume_times();
        let delay = if back.stage == Stage::DeadLetter {
            self.config.clamped_suspend(self.config.suspend_delay)
        } else {
            self.config.send_back_retry_delay
        };
        if self.queues.live(back.key, back.epoch).is_none() {
            return;
        }
        if back.stage == Stage::RetryTopic {
            self.outputs.push_back(Output::Event(Event::SendBackFailed {
                queue: back.queue.clone(),
                offset,
            }));
        }
        if back.message.reconsume_times() >= max {
            self.next_request += 1;
            self.resends.insert((now + delay, self.next_request), back);
            self.timers.set(now + delay, Timer::Resend);
            return;
        }
        self.queues
            .change_cache(back.key, |pq| pq.retry_at(&[offset], now + delay));
        self.timers.set(now + delay, Timer::Redeliver);
    }

    /// Sends again the messages whose retry send failed and whose time has come.
    pub(super) fn resend_due(&mut self, now: Instant) {
        while let Some(entry) = self.resends.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let back = entry.remove();
            if self.queues.live_mut(back.key, back.epoch).is_some() {
                self.send_to_retry_topic(now, back);
            }
        }
    }
}
