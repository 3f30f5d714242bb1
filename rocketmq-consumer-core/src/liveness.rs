//! [`TimeoutStreak`]: when a connection whose requests keep timing out is given up on. One rule
//! for every client of the crate, kept by the connection table the push and pop consumers and
//! the producer share (`conn.rs`).
//!
//! A request that times out proves little on its own (a slow broker, a lost frame), and a
//! long-polled pull is quiet by design; several in a row on one connection, with nothing
//! answered between them, mean a peer that keeps the socket open but stopped answering (a hung
//! process, a connection dead without a FIN). Java keeps such a channel until Netty's idle
//! handler closes it after 120 s; a client that closes it after a few timeouts reconnects in
//! seconds instead.

/// Requests in a row that timed out on one connection since it last answered anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimeoutStreak {
    count: u32,
}

/// What one more timed-out request means for its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterTimeout {
    /// Keep using it.
    Keep,
    /// Close it: the next request gets a new connection.
    Close(GiveUp),
}

/// Why a connection is given up on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum GiveUp {
    /// The configured number of requests in a row timed out on it.
    Unresponsive,
}

impl std::fmt::Display for GiveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Unresponsive => "requests in a row timed out",
        })
    }
}

impl TimeoutStreak {
    /// Anything arrived on the connection: it is alive, the streak ends.
    pub(crate) fn handle_answer(&mut self) {
        self.count = 0;
    }

    /// A request on the connection timed out: with `limit` in a row (a positive limit: the
    /// configs check it), the connection is closed.
    pub(crate) fn handle_timeout(&mut self, limit: u32) -> AfterTimeout {
        self.count = self.count.saturating_add(1);
        if self.count >= limit {
            AfterTimeout::Close(GiveUp::Unresponsive)
        } else {
            AfterTimeout::Keep
        }
    }

    /// Requests in a row that timed out (the connection's stats).
    pub(crate) fn count(&self) -> u32 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closes_at_the_limit_and_an_answer_starts_over() {
        let mut streak = TimeoutStreak::default();
        assert_eq!(streak.handle_timeout(3), AfterTimeout::Keep);
        assert_eq!(streak.handle_timeout(3), AfterTimeout::Keep);
        streak.handle_answer();
        assert_eq!(streak.handle_timeout(3), AfterTimeout::Keep);
        assert_eq!(streak.handle_timeout(3), AfterTimeout::Keep);
        assert_eq!(
            streak.handle_timeout(3),
            AfterTimeout::Close(GiveUp::Unresponsive)
        );
        assert_eq!(streak.count(), 3);
    }
}
