//! [`PopConfig`]: every setting of the pop consumer, each default with its reason.

use std::time::Duration;

use crate::error::ConfigError;

/// Who takes the popped messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PopMode {
    /// The consumer pops on its own and hands messages to a handler
    /// ([`PopOutput::Deliver`](super::PopOutput::Deliver)), acks what succeeded, renews the
    /// invisibility of what runs long and negative-acks what failed (Java's push consumer in
    /// pop mode, `ConsumeMessagePopConcurrentlyService`).
    #[default]
    Push,
    /// The application asks for messages ([`PopConsumer::receive`](super::PopConsumer::receive))
    /// and acks them itself (the 5.x `SimpleConsumer` shape); nothing is popped unasked.
    Simple,
}

/// The pop consumer's settings. [`PopConfig::new`] gives Java's defaults.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PopConfig {
    /// The consumer group.
    pub group: String,
    /// Name server addresses (`host:port`), tried in turn.
    pub name_servers: Vec<String>,
    /// Push or simple.
    pub mode: PopMode,
    /// Orderly pop (push mode; Java's `ConsumeMessagePopOrderlyService`): pops ask the broker
    /// for order (`order=true`), so it hands out a queue's messages one batch at a time and
    /// again only once that batch is acked or its invisibility ran out
    /// (`ConsumerOrderInfoManager`); this consumer hands each queue's messages to the handler
    /// one delivery at a time, in offset order. A delivery that fails makes its messages, and
    /// every later message of its queue held here, invisible for the retry delay, so the broker
    /// delivers them again, in order, from the failed one. Off by default.
    pub orderly: bool,
    /// How long a popped message stays invisible to the group (Java `popInvisibleTime`, 60 s;
    /// Java's push consumer keeps it within 10 s ..= 300 s, this one accepts anything from
    /// 1 s, as simple consumers choose per receive).
    pub invisible_time: Duration,
    /// The most messages one pop asks for (Java `popBatchNums`, 32; brokers refuse more than
    /// 32, `PopMessageProcessor`).
    pub batch_size: u32,
    /// How long the broker may hold a pop that finds nothing (Java's
    /// `BROKER_SUSPEND_MAX_TIME_MILLIS`, 15 s).
    pub poll_time: Duration,
    /// Added to `poll_time` for a pop's deadline (Java adds 10 s, `PullAPIWrapper.popAsync`).
    pub poll_grace: Duration,
    /// Deliveries before a message is dead-lettered: a message whose reconsume count reached
    /// this is sent to `%DLQ%<group>` and acked instead of delayed again (Java's default 16).
    pub max_reconsume_times: i32,
    /// The invisibility after the n-th failure (Java `popDelayLevel`: 10 s, 30 s, 1 min, ...,
    /// 2 h); the last one repeats.
    pub retry_delays: Vec<Duration>,
    /// Renew a running delivery's invisibility this long before it ends (the 5.x proxy's
    /// `renewAheadTimeMillis`, 10 s), extending it by `invisible_time` each time.
    pub renew_ahead: Duration,
    /// Messages held (popped and not yet settled) above which no pop is sent (Java's
    /// `popThresholdForQueue`, 96, here for the whole consumer).
    pub max_cached_messages: usize,
    /// Body bytes held above which no pop is sent: the consumer's memory budget.
    pub max_cached_bytes: usize,
    /// Handlers running at once, push mode (Java `consumeThreadMin`, 20).
    pub max_in_flight_deliveries: usize,
    /// The most messages in one delivery, push mode (Java `consumeMessageBatchMaxSize`, 1);
    /// a delivery that succeeds is acked with one `BATCH_ACK_MESSAGE` per broker.
    pub consume_batch_size: usize,
    /// After a refused or failed pop, wait this long (Java `pullTimeDelayMillsWhenException`,
    /// 3 s; also after `POLLING_FULL`). A pop whose connection was lost or refused goes again
    /// after `reconnect_backoff` instead, when the broker may be dialled again.
    pub exception_backoff: Duration,
    /// Ask each broker to set the group's request mode of a subscribed topic to POP before the
    /// first assignment (`SET_MESSAGE_REQUEST_MODE`; Java leaves it to `mqadmin`).
    pub set_request_mode: bool,
    /// With `set_request_mode`: how many other members' queues each member also pops; 0 has
    /// every member pop every queue (`defaultPopShareQueueNum`).
    pub pop_share_queue_num: i32,
    /// Deadline of requests other than pops (Java's 3 s `ASYNC_TIMEOUT`).
    pub request_timeout: Duration,
    /// A connection still opening after this has failed.
    pub connect_timeout: Duration,
    /// Requests in a row that time out on one connection, with no answer between them, before
    /// it is closed and opened again (3), as the push consumer's `close_after_timeouts`.
    pub close_after_timeouts: u32,
    /// After a lost connection, the address is not tried again for this long.
    pub reconnect_backoff: Duration,
    /// Route refresh period (Java `pollNameServerInterval`, 30 s).
    pub route_refresh_interval: Duration,
    /// Heartbeat period (Java `heartbeatBrokerInterval`, 30 s).
    pub heartbeat_interval: Duration,
    /// Assignment query period (Java's rebalance wait, 20 s).
    pub rebalance_interval: Duration,
    /// How long shutdown waits for running handlers and their acks.
    pub shutdown_drain_timeout: Duration,
    /// A namespace wrapped around the group and topics (`NamespaceUtil`).
    pub namespace: Option<String>,
}

impl PopConfig {
    /// Java's defaults for `group` reading through `name_servers`.
    pub fn new(group: impl Into<String>, name_servers: Vec<String>) -> Self {
        let secs = Duration::from_secs;
        Self {
            group: group.into(),
            name_servers,
            mode: PopMode::Push,
            orderly: false,
            invisible_time: secs(60),
            batch_size: 32,
            poll_time: secs(15),
            poll_grace: secs(10),
            max_reconsume_times: 16,
            retry_delays: [
                10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
            ]
            .into_iter()
            .map(secs)
            .collect(),
            renew_ahead: secs(10),
            max_cached_messages: 96,
            max_cached_bytes: 64 << 20,
            max_in_flight_deliveries: 20,
            consume_batch_size: 1,
            exception_backoff: secs(3),
            set_request_mode: true,
            pop_share_queue_num: 0,
            request_timeout: secs(3),
            connect_timeout: secs(3),
            close_after_timeouts: 3,
            reconnect_backoff: secs(1),
            route_refresh_interval: secs(30),
            heartbeat_interval: secs(30),
            rebalance_interval: secs(20),
            shutdown_drain_timeout: secs(10),
            namespace: None,
        }
    }

    /// Checks the settings that would make the consumer misbehave.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fail = |what: &str| Err(ConfigError(what.to_owned()));
        if self.group.is_empty() {
            return fail("the group is empty");
        }
        if self.name_servers.is_empty() {
            return fail("no name server");
        }
        if !(1..=32).contains(&self.batch_size) {
            return fail("batch_size must be 1..=32 (brokers refuse more than 32)");
        }
        if self.invisible_time < Duration::from_secs(1) {
            return fail("invisible_time must be at least 1 s");
        }
        if self.max_cached_messages < self.batch_size as usize {
            // A pop goes out only while a whole batch fits the budget.
            return fail("max_cached_messages must be at least batch_size");
        }
        if self.retry_delays.is_empty() {
            return fail("retry_delays is empty");
        }
        if self.max_in_flight_deliveries == 0
            || self.max_cached_messages == 0
            || self.consume_batch_size == 0
        {
            return fail(
                "max_in_flight_deliveries, max_cached_messages and consume_batch_size must be positive",
            );
        }
        if self.max_reconsume_times < 0 {
            return fail("max_reconsume_times must not be negative");
        }
        if self.close_after_timeouts == 0 {
            return fail("close_after_timeouts must be positive");
        }
        Ok(())
    }

    /// How long a message that failed with `reconsume_times` earlier deliveries stays
    /// invisible: `delay_level` 0 takes the level from the reconsume count, a positive level
    /// picks that entry (`ConsumeMessagePopConcurrentlyService.changePopInvisibleTime`), and the
    /// last entry serves every level beyond.
    pub fn retry_delay(&self, reconsume_times: i32, delay_level: i32) -> Duration {
        let level = if delay_level == 0 {
            reconsume_times
        } else {
            delay_level
        };
        let index = usize::try_from(level.max(0)).unwrap_or(0);
        self.retry_delays
            .get(index)
            .or(self.retry_delays.last())
            .copied()
            .unwrap_or(self.invisible_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_follow_java_pop_delay_levels() {
        let config = PopConfig::new("g", vec!["ns".into()]);
        assert_eq!(config.retry_delay(0, 0), Duration::from_secs(10));
        assert_eq!(config.retry_delay(1, 0), Duration::from_secs(30));
        assert_eq!(config.retry_delay(40, 0), Duration::from_secs(7200));
        assert_eq!(config.retry_delay(0, 2), Duration::from_secs(60));
        assert!(config.validate().is_ok());
        let mut bad = config.clone();
        bad.batch_size = 33;
        assert!(bad.validate().is_err());
    }
}
