//! A latency distribution of fixed size: log-linear buckets (16 per power of two, so a
//! quantile is off by at most 1/32 of its value), counted since the consumer started.
//!
//! Fixed size and no allocation after creation, so recording costs an index computation and
//! an increment: it runs once per pull answer and once per completed delivery.

use std::time::Duration;

use super::Latency;

/// Sub-buckets per power of two, as a bit count.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Values are clamped to this many microseconds (about 12.7 days).
const MAX_MICROS: u64 = (1 << 40) - 1;
/// Exact buckets for 0..SUB, then SUB buckets for each power of two up to 2^39.
const BUCKETS: usize = (SUB + (40 - SUB_BITS as u64) * SUB) as usize;

/// Counts of durations, in microsecond buckets.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    samples: u64,
    max: Duration,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("samples", &self.samples)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: Box::new([0; BUCKETS]),
            samples: 0,
            max: Duration::ZERO,
        }
    }
}

impl Histogram {
    /// Counts one duration.
    pub(crate) fn record(&mut self, value: Duration) {
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.counts[index(micros.min(MAX_MICROS))] += 1;
        self.samples += 1;
        self.max = self.max.max(value);
    }

    /// The median, the 99th percentile and the maximum of what was recorded.
    pub(crate) fn summary(&self) -> Latency {
        Latency {
            samples: self.samples,
            p50: self.quantile(0.50),
            p99: self.quantile(0.99),
            max: self.max,
        }
    }

    /// Every non-empty bucket: the middle of its range and its count, in order.
    pub(crate) fn buckets(&self) -> Vec<(Duration, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(i, count)| (Duration::from_micros(middle(i)), *count))
            .collect()
    }

    /// The value below which a fraction `q` of the samples lie (the middle of its bucket, never
    /// above the largest sample); zero when nothing was recorded.
    fn quantile(&self, q: f64) -> Duration {
        if self.samples == 0 {
            return Duration::ZERO;
        }
        // The rank of the sample asked for, 1-based: at least the first, at most the last.
        let rank = ((q * self.samples as f64).ceil() as u64).clamp(1, self.samples);
        let mut seen = 0;
        for (i, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_micros(middle(i)).min(self.max);
            }
        }
        self.max
    }
}

/// The bucket of `micros` (at most `MAX_MICROS`).
fn index(micros: u64) -> usize {
    if micros < SUB {
        return micros as usize;
    }
    // The leading one's position; the next SUB_BITS bits pick the sub-bucket.
    let shift = (63 - micros.leading_zeros()) - SUB_BITS;
    let sub = (micros >> shift) - SUB;
    (SUB + u64::from(shift) * SUB + sub) as usize
}

/// The middle of bucket `i`'s range.
fn middle(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let shift = (i - SUB) / SUB;
    let lower = (SUB + (i - SUB) % SUB) << shift;
    lower + (1 << shift) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        assert_eq!(index(MAX_MICROS), BUCKETS - 1);
        let within = |micros: u64| {
            // A bucket's middle is within 1/32 of every value in it.
            let error = middle(index(micros)).abs_diff(micros);
            assert!(error <= micros / 32, "{micros} in bucket {}", index(micros));
        };
        let mut last = 0;
        for micros in 0..100_000 {
            assert!(index(micros) >= last, "buckets go up with the value");
            last = index(micros);
            within(micros);
        }
        for power in 17..40 {
            within((1 << power) + 12_345);
            within((1 << power) - 1);
        }
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut h = Histogram::default();
        for ms in 1..=1000 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.summary();
        assert_eq!(s.samples, 1000);
        let close = |got: Duration, want_ms: f64| {
            let got = got.as_secs_f64() * 1000.0;
            assert!(
                (got - want_ms).abs() <= want_ms / 32.0,
                "{got} ms, want {want_ms}"
            );
        };
        close(s.p50, 500.0);
        close(s.p99, 990.0);
        assert_eq!(s.max, Duration::from_millis(1000));
    }

    #[test]
    fn empty_and_huge_values() {
        assert_eq!(Histogram::default().summary(), Latency::default());
        let mut h = Histogram::default();
        h.record(Duration::from_secs(u64::MAX));
        let s = h.summary();
        assert_eq!(s.max, Duration::from_secs(u64::MAX));
        assert!(
            s.p50 >= Duration::from_secs(1_000_000),
            "clamped, not wrapped"
        );
    }
}
