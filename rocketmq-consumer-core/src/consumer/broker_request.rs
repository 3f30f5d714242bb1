//! Requests brokers send to the consumer (`remoting-protocol.md` §3.12–§3.16): membership
//! changes, offset resets, running-info queries and consume-directly.

use std::time::Instant;

use proto::body::{
    ConsumeMessageDirectlyResult, ConsumeResult, ConsumeStatus, ConsumerRunningInfo,
    ProcessQueueInfo, ResetOffsetBody,
};
use proto::headers::{
    ConsumeMessageDirectlyRequest, GetConsumerRunningInfoRequest, NotifyConsumerIdsChangedRequest,
    ResetOffsetRequest,
};
use proto::message::{DecodeOptions, decode_message};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};

use super::deliveries::Source;
use super::{Consumer, Lifecycle, Phase};
use crate::config::{ConsumeMode, MessageModel};
use crate::output::{ConnId, ConsumeOutcome, Delivery, Event, Output, Wire};
use crate::timer::Timer;

impl Consumer {
    pub(super) fn handle_request(&mut self, now: Instant, conn: ConnId, request: Command) {
        let code = request.request_code();
        let answer = match code {
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED => {
                // Java wakes the rebalance service at once (`ClientRemotingProcessor`).
                let ours = request
                    .header::<NotifyConsumerIdsChangedRequest>()
                    .is_ok_and(|h| h.consumer_group == self.config.group);
                if ours && self.lifecycle == Lifecycle::Running {
                    self.rebalance(now);
                    // Java's `RebalanceService` waits its whole interval again after a wake-up
                    // (`ServiceThread.waitForRunning`), so every member a notice reached
                    // rebalances in step from then on. A later change no notice announces (the
                    // Rust broker sends none when a member leaves) then moves each queue at one
                    // periodic rebalance of both members, not up to `rebalance_interval` apart:
                    // the new owner would wait that long for the old owner's lock.
                    self.timers
                        .reset(now + self.config.rebalance_interval, Timer::Rebalance);
                }
                None
            }
            RequestCode::RESET_CONSUMER_CLIENT_OFFSET => Some(self.on_reset_offset(now, &request)),
            RequestCode::GET_CONSUMER_RUNNING_INFO => Some(self.running_info(now, &request)),
            RequestCode::CONSUME_MESSAGE_DIRECTLY => self.consume_directly(now, conn, &request),
            _ => Some(
                Command::response(ResponseCode::REQUEST_CODE_NOT_SUPPORTED, request.opaque)
                    .with_remark(format!(
                        "request code {} not supported by this consumer",
                        request.code
                    )),
            ),
        };
        if let Some(mut answer) = answer
            && !request.is_oneway()
        {
            answer.opaque = request.opaque;
            self.outputs.push_back(Output::Wire(Wire::Send {
                conn,
                command: answer,
            }));
        }
    }

    /// `RESET_CONSUMER_CLIENT_OFFSET`: every owned queue of the body restarts at its new
    /// offset, dropping what is cached and in flight; broadcasting also records offsets of
    /// queues it does not hold right now.
    fn on_reset_offset(&mut self, now: Instant, request: &Command) -> Command {
        let header = match request.header::<ResetOffsetRequest>() {
            Ok(header) if header.group == self.config.group => header,
            Ok(_) => return system_error("the reset is for another group"),
            Err(e) => return system_error(&e.to_string()),
        };
        let body = match ResetOffsetBody::decode(&request.body) {
            Ok(body) => body,
            Err(e) => return system_error(&e.to_string()),
        };
        for (mq, offset) in body.offset_table {
            if mq.topic() != header.topic || offset < 0 {
                continue;
            }
            if !self.reset_queue(now, &mq, offset)
                && self.config.message_model == MessageModel::Broadcasting
            {
                self.store_offset(now, &mq, offset);
            }
        }
        self.flush_local_offsets();
        Command::response(ResponseCode::SUCCESS, request.opaque)
    }

    /// Restarts owned queue `mq` at `offset` under a new epoch, storing the offset; returns
    /// whether the queue is owned. An orderly queue keeps its lease.
    pub(super) fn reset_queue(&mut self, now: Instant, mq: &MessageQueue, offset: i64) -> bool {
        let Some(key) = self.queues.key_of(mq) else {
            return false;
        };
        match self.queues.get(key).map(|s| s.phase) {
            None | Some(Phase::Revoking) => return false,
            // Orderly, not locked yet: the queue reads its offset once locked, so storing the
            // new one is enough.
            Some(Phase::Lock) => {
                self.store_offset(now, mq, offset);
                self.outputs.push_back(Output::Event(Event::OffsetReset {
                    queue: mq.clone(),
                    offset,
                }));
                return true;
            }
            Some(_) => {}
        }
        let lease = self.queues.remove(key).and_then(|s| s.lease);
        self.store_offset(now, mq, offset);
        let (key, epoch) = self.insert_queue(mq.clone(), Some(offset), lease);
        if let Some(until) = lease {
            self.timers.set(until, Timer::LeaseExpiry(key, epoch));
        }
        self.outputs.push_back(Output::Event(Event::OffsetReset {
            queue: mq.clone(),
            offset,
        }));
        self.try_pull(now, key, epoch);
        true
    }

    /// `GET_CONSUMER_RUNNING_INFO`: configuration, subscriptions, per-queue state and rates.
    fn running_info(&self, now: Instant, request: &Command) -> Command {
        match request.header::<GetConsumerRunningInfoRequest>() {
            Ok(h) if h.consumer_group == self.config.group => {}
            Ok(_) => return system_error("the consumer group is not in this client"),
            Err(e) => return system_error(&e.to_string()),
        }
        let c = &self.config;
        let mut info = ConsumerRunningInfo::default();
        let mut set = |k: &str, v: String| {
            info.properties.insert(k.to_owned(), v);
        };
        set("consumerGroup", c.group.clone());
        set(
            "messageModel",
            format!("{:?}", c.message_model).to_uppercase(),
        );
        set("consumeFromWhere", format!("{:?}", c.consume_from));
        set("pullBatchSize", c.pull_batch_size.to_string());
        set(
            "pullThresholdForQueue",
            c.max_cached_messages_per_queue.to_string(),
        );
        set(
            "pullThresholdSizeForQueue",
            c.max_cached_bytes_per_queue.to_string(),
        );
        set(
            "consumeMessageBatchMaxSize",
            c.consume_batch_size.to_string(),
        );
        set(
            "maxReconsumeTimes",
            c.effective_max_reconsume_times().to_string(),
        );
        set("PROP_NAMESERVER_ADDR", c.name_servers.join(";"));
        set(
            "PROP_THREADPOOL_CORE_SIZE",
            c.max_in_flight_deliveries.to_string(),
        );
        set(
            "PROP_CONSUMEORDERLY",
            (c.consume_mode == ConsumeMode::Orderly).to_string(),
        );
        set(
            "PROP_CONSUME_TYPE",
            if c.consume_mode == ConsumeMode::Poll {
                "CONSUME_ACTIVELY"
            } else {
                "CONSUME_PASSIVELY"
            }
            .to_owned(),
        );
        set(
            "PROP_CLIENT_VERSION",
            format!("rocketmq-rust {}", env!("CARGO_PKG_VERSION")),
        );
        set(
            "PROP_CONSUMER_START_TIMESTAMP",
            self.start_unix_ms.to_string(),
        );
        info.subscription_set = self.subscriptions.values().cloned().collect();
        for state in self.queues.iter() {
            let (min, max) = state.pq().offset_range().unwrap_or((0, 0));
            info.mq_table.insert(
                state.mq.clone(),
                ProcessQueueInfo {
                    commit_offset: state.commit_point(),
                    cached_msg_min_offset: min,
                    cached_msg_max_offset: max,
                    cached_msg_count: i32::try_from(state.pq().len()).unwrap_or(i32::MAX),
                    cached_msg_size_in_mib: i32::try_from(state.pq().bytes() >> 20)
                        .unwrap_or(i32::MAX),
                    locked: state.lease_valid(now),
                    last_lock_timestamp: state.lease.map_or(0, |until| {
                        self.unix_ms(until.checked_sub(c.lock_lease).unwrap_or(until))
                    }),
                    dropped: state.phase == Phase::Revoking,
                    ..ProcessQueueInfo::default()
                },
            );
        }
        let counters = &self.counters;
        let rt =
            |total: std::time::Duration, n: u64| total.as_secs_f64() * 1000.0 / n.max(1) as f64;
        for topic in self.subscriptions.keys() {
            info.status_table.insert(
                topic.clone(),
                ConsumeStatus {
                    pull_rt: rt(counters.pull_time, counters.pulls),
                    consume_rt: rt(counters.consume_time, counters.delivered),
                    ..ConsumeStatus::default()
                },
            );
        }
        Command::response(ResponseCode::SUCCESS, request.opaque).with_body(info.encode())
    }

    /// `CONSUME_MESSAGE_DIRECTLY`: deliver the one message in the body; the answer goes out
    /// when the handler completes (`answer_direct`).
    fn consume_directly(
        &mut self,
        now: Instant,
        conn: ConnId,
        request: &Command,
    ) -> Option<Command> {
        let header = match request.header::<ConsumeMessageDirectlyRequest>() {
            Ok(h) if h.consumer_group == self.config.group => h,
            Ok(_) => return Some(system_error("the consumer group is not in this client")),
            Err(e) => return Some(system_error(&e.to_string())),
        };
        if self.lifecycle != Lifecycle::Running || self.config.consume_mode == ConsumeMode::Poll {
            return Some(system_error("this consumer does not run a handler now"));
        }
        let message = match decode_message(&request.body, &DecodeOptions::default()) {
            Ok(message) => message,
            Err(e) => return Some(system_error(&format!("the message does not decode: {e}"))),
        };
        let queue = MessageQueue::new(
            message.topic(),
            header.broker_name.as_deref().unwrap_or_default(),
            message.queue_id(),
        );
        let source = Source::Direct {
            conn,
            opaque: request.opaque,
        };
        let id = self.deliveries.start(now, source, None);
        self.to_deliver.push_back(Delivery {
            id,
            queue,
            messages: message.into(),
        });
        None
    }

    /// Answers a `CONSUME_MESSAGE_DIRECTLY` with the handler's outcome.
    pub(super) fn answer_direct(
        &mut self,
        now: Instant,
        conn: ConnId,
        opaque: i32,
        started: Instant,
        outcome: ConsumeOutcome,
    ) {
        let result = ConsumeMessageDirectlyResult {
            order: self.config.consume_mode == ConsumeMode::Orderly,
            auto_commit: true,
            consume_result: Some(if outcome == ConsumeOutcome::Success {
                ConsumeResult::Success
            } else {
                ConsumeResult::Later
            }),
            remark: None,
            spent_time_mills: now.saturating_duration_since(started).as_millis() as i64,
        };
        let answer = Command::response(ResponseCode::SUCCESS, opaque).with_body(result.encode());
        self.outputs.push_back(Output::Wire(Wire::Send {
            conn,
            command: answer,
        }));
    }
}

fn system_error(remark: &str) -> Command {
    Command::response(ResponseCode::SYSTEM_ERROR, 0).with_remark(remark)
}
