//! Consumption rate limits: how many messages (and optionally body bytes) a second may reach
//! the application, for the whole consumer and for single topics.
//!
//! Each limit is a token bucket, kept in the generic cell rate algorithm's form (one
//! "theoretical arrival time" per bucket instead of a token count, so refilling needs no
//! timer): a batch may go when the bucket's time is at most [`BURST`] ahead of now, and then
//! moves that time on by the batch's cost at the limit's rate. Over any long run the rate is
//! the limit's, plus at most one burst and one batch. Time comes in as an argument, like
//! everywhere in the core.
//!
//! The consumer applies a limit by holding deliveries (poll mode: takes) back until their
//! bucket lets them go, and by not pulling a queue that already caches one second of its
//! limit (flow control with a threshold the limit sets); nothing is dropped.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::error::ConfigError;

/// How far ahead of now a bucket may run: the burst a limit allows after a quiet spell.
pub const BURST: Duration = Duration::from_millis(100);

/// A rate limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimit {
    /// Messages a second.
    pub messages_per_second: u32,
    /// Body bytes a second, if limited too.
    pub bytes_per_second: Option<u64>,
}

impl RateLimit {
    /// At most `messages_per_second` messages a second.
    pub fn messages(messages_per_second: u32) -> Self {
        Self {
            messages_per_second,
            bytes_per_second: None,
        }
    }

    /// ... and at most `bytes_per_second` body bytes a second.
    pub fn with_bytes(mut self, bytes_per_second: u64) -> Self {
        self.bytes_per_second = Some(bytes_per_second);
        self
    }

    pub(crate) fn validate(&self, what: &str) -> Result<(), ConfigError> {
        if self.messages_per_second == 0 || self.bytes_per_second == Some(0) {
            return Err(ConfigError(format!(
                "{what}: a rate limit of zero would stop consumption for good; pause instead"
            )));
        }
        Ok(())
    }
}

/// One bucket: its rate, and the time up to which its capacity is spoken for.
#[derive(Debug, Clone)]
struct Bucket {
    per_second: u64,
    /// `None` until first used: a fresh bucket lets the first batch go at once.
    busy_until: Option<Instant>,
}

impl Bucket {
    fn new(per_second: u64) -> Self {
        Self {
            per_second,
            busy_until: None,
        }
    }

    /// When a batch may go: `None` now, else the instant.
    fn blocked_until(&self, now: Instant) -> Option<Instant> {
        let free = self.busy_until?.checked_sub(BURST)?;
        (free > now).then_some(free)
    }

    /// Books `units` (messages or bytes) taken at `now`.
    fn charge(&mut self, now: Instant, units: u64) {
        let nanos = u128::from(units) * 1_000_000_000 / u128::from(self.per_second.max(1));
        let cost = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        let from = self.busy_until.map_or(now, |busy| busy.max(now));
        self.busy_until = Some(from + cost);
    }
}

/// A message bucket and maybe a byte bucket.
#[derive(Debug, Clone)]
struct Buckets {
    messages: Bucket,
    bytes: Option<Bucket>,
}

impl Buckets {
    fn new(limit: &RateLimit) -> Self {
        Self {
            messages: Bucket::new(u64::from(limit.messages_per_second)),
            bytes: limit.bytes_per_second.map(Bucket::new),
        }
    }

    fn blocked_until(&self, now: Instant) -> Option<Instant> {
        let bytes = self.bytes.as_ref().and_then(|b| b.blocked_until(now));
        later(self.messages.blocked_until(now), bytes)
    }

    fn charge(&mut self, now: Instant, messages: u64, bytes: u64) {
        self.messages.charge(now, messages);
        if let Some(b) = &mut self.bytes {
            b.charge(now, bytes);
        }
    }
}

/// Every limit of one consumer.
#[derive(Debug, Clone, Default)]
pub(crate) struct RateLimiter {
    consumer: Option<Buckets>,
    topics: BTreeMap<String, Buckets>,
}

impl RateLimiter {
    /// Limits for the consumer as a whole and for topics (named as on the wire).
    pub(crate) fn new<'a>(
        consumer: Option<&RateLimit>,
        topics: impl IntoIterator<Item = (String, &'a RateLimit)>,
    ) -> Self {
        Self {
            consumer: consumer.map(Buckets::new),
            topics: topics
                .into_iter()
                .map(|(topic, limit)| (topic, Buckets::new(limit)))
                .collect(),
        }
    }

    /// Whether any limit is set (the consumer skips every check when none is).
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        self.consumer.is_some() || !self.topics.is_empty()
    }

    /// Until when the consumer-wide limit holds everything back, if it does now.
    pub(crate) fn consumer_blocked_until(&self, now: Instant) -> Option<Instant> {
        self.consumer.as_ref().and_then(|b| b.blocked_until(now))
    }

    /// Until when a batch of `topic` is held back (by its own limit or the consumer's).
    pub(crate) fn blocked_until(&self, now: Instant, topic: &str) -> Option<Instant> {
        let own = self.topics.get(topic).and_then(|b| b.blocked_until(now));
        later(self.consumer_blocked_until(now), own)
    }

    /// How much a queue of `topic` may cache before it stops pulling: one second of its
    /// tightest limit, in messages and in bytes (`None`: no limit applies). The consumer never
    /// pulls less than one batch at a time, so the cache still holds one then.
    pub(crate) fn cache_cap(&self, topic: &str) -> Option<(usize, Option<u64>)> {
        let limits = self.consumer.iter().chain(self.topics.get(topic));
        limits.fold(None, |cap, b| {
            let messages = usize::try_from(b.messages.per_second).unwrap_or(usize::MAX);
            let bytes = b.bytes.as_ref().map(|b| b.per_second);
            Some(match cap {
                None => (messages, bytes),
                Some((m, by)) => (m.min(messages), smaller(by, bytes)),
            })
        })
    }

    /// Books a batch of `topic` handed out at `now`.
    pub(crate) fn charge(&mut self, now: Instant, topic: &str, messages: u64, bytes: u64) {
        if let Some(b) = &mut self.consumer {
            b.charge(now, messages, bytes);
        }
        if let Some(b) = self.topics.get_mut(topic) {
            b.charge(now, messages, bytes);
        }
    }
}

/// The smaller of two optional caps (`None`: uncapped).
fn smaller(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn later(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The limiter's arithmetic over time runs in the simulation (`tests/tests/core/
    // rate_limit_*.rs`): the core has no clock to start one from here.

    #[test]
    fn zero_is_refused() {
        assert!(RateLimit::messages(0).validate("rate_limit").is_err());
        assert!(RateLimit::messages(1).with_bytes(0).validate("x").is_err());
        assert!(RateLimit::messages(1).validate("x").is_ok());
    }
}
