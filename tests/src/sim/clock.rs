//! [`Clock`]: maps the virtual `Instant`s the simulator is driven with to the wall-clock
//! milliseconds the protocol carries (store and born timestamps, offset search).

use std::time::Instant;

/// The virtual clock's origin: `epoch` is `epoch_millis` ms after the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clock {
    epoch: Instant,
    epoch_millis: i64,
}

impl Clock {
    pub(crate) fn new(epoch: Instant, epoch_millis: i64) -> Self {
        Self {
            epoch,
            epoch_millis,
        }
    }

    /// Milliseconds since the Unix epoch at `now`; instants before the origin map to the
    /// origin.
    pub(crate) fn millis(&self, now: Instant) -> i64 {
        let elapsed = now.saturating_duration_since(self.epoch).as_millis();
        self.epoch_millis
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }
}
