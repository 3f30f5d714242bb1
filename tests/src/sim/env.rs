//! [`Env`]: what a broker handler needs from the cluster besides its own state.

use std::time::Instant;

use super::SimConfig;
use super::clock::Clock;
use super::outbox::Outbox;
use super::rng::SimRng;

/// The cluster-wide context of one step: the time, the configuration, the random source and
/// the outbox.
pub(crate) struct Env<'a> {
    pub(crate) now: Instant,
    pub(crate) clock: Clock,
    pub(crate) config: &'a SimConfig,
    pub(crate) rng: &'a mut SimRng,
    pub(crate) out: &'a mut Outbox,
}

impl Env<'_> {
    /// Wall-clock milliseconds at `now`.
    pub(crate) fn millis(&self) -> i64 {
        self.clock.millis(self.now)
    }
}
