//! Whether a failed attempt is worth another ([`Attempts`]).

use proto::ResponseCode;

use super::{ProducerConfig, SendError};

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Give up: report the failure.
    No,
    /// Try again on the next target (round robin skips the failed broker; a sharded send keeps
    /// its queue), fetching the route first when `refresh_route`.
    Yes {
        /// The failure suggests the route changed (the broker is gone, lost the topic or its
        /// write permission).
        refresh_route: bool,
    },
}

/// The attempts left to one send.
#[derive(Clone, Debug)]
pub struct Attempts {
    left: u32,
}

impl Attempts {
    /// The first attempt and `config.retries` more.
    pub fn new(config: &ProducerConfig) -> Self {
        Self {
            left: config.retries,
        }
    }

    /// Whether `error` is worth another attempt at all, attempts left or not
    /// (`DefaultMQProducerImpl.sendDefaultImpl` and the 5.x `retryResponseCodes`). A timeout
    /// is: with a `request_timeout` shorter than the send timeout there may be time for
    /// another (Java retries a `RemotingTimeoutException` while time is left too).
    pub fn classify(error: &SendError) -> Retry {
        match error {
            SendError::Disconnected { .. } => Retry::Yes {
                refresh_route: true,
            },
            SendError::Timeout { .. } => Retry::Yes {
                refresh_route: false,
            },
            SendError::Refused { code, .. } => match *code {
                ResponseCode::TOPIC_NOT_EXIST
                | ResponseCode::SERVICE_NOT_AVAILABLE
                | ResponseCode::NO_PERMISSION => Retry::Yes {
                    refresh_route: true,
                },
                ResponseCode::SYSTEM_ERROR | ResponseCode::SYSTEM_BUSY => Retry::Yes {
                    refresh_route: false,
                },
                _ => Retry::No,
            },
            _ => Retry::No,
        }
    }

    /// Whether `error` is retried: it is worth it ([`Attempts::classify`]) and an attempt is
    /// left, which this uses up.
    pub fn after(&mut self, error: &SendError) -> Retry {
        let retry = Self::classify(error);
        if retry == Retry::No || !self.take() {
            return Retry::No;
        }
        retry
    }

    /// Uses up one attempt; false when none was left.
    pub fn take(&mut self) -> bool {
        let Some(left) = self.left.checked_sub(1) else {
            return false;
        };
        self.left = left;
        true
    }
}
