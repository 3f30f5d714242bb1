//! What brokers ask of a pop consumer: a membership notice brings the assignment query
//! forward; anything else answered is the classic consumer's business, and is refused.

use std::time::Instant;

use proto::{Command, RequestCode, ResponseCode};

use super::{PopConsumer, PopOutput, PopTimer};
use crate::output::{ConnId, Wire};

impl PopConsumer {
    /// A request a broker sent on `conn`.
    pub(super) fn handle_request(&mut self, now: Instant, conn: ConnId, request: Command) {
        match request.request_code() {
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED => {
                self.timers.reset_earlier(now, PopTimer::Rebalance);
            }
            _ if request.is_oneway() => {}
            _ => {
                // Running info, consume directly and the like are the classic consumer's; a
                // pop consumer says so instead of letting the broker wait.
                let response =
                    Command::response(ResponseCode::REQUEST_CODE_NOT_SUPPORTED, request.opaque);
                self.outputs.push_back(PopOutput::Wire(Wire::Send {
                    conn,
                    command: response,
                }));
            }
        }
    }
}
