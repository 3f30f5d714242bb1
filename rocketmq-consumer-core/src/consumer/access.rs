//! The requests a peer refused for want of permission, so that each refusal is reported once
//! ([`Event::AccessDenied`](crate::output::Event::AccessDenied)) and not at every retry, until
//! the same request to the same peer succeeds again.

use std::collections::BTreeSet;

use proto::Command;

/// Whether `answer` refuses the request for want of credentials or permission (see
/// [`crate::signer::is_access_refusal`]).
pub(crate) fn is_access_refusal(answer: &Command) -> bool {
    crate::signer::is_access_refusal(answer.response_code(), answer.remark.as_deref())
}

/// The `(peer, request)` pairs whose last answer was an access refusal.
#[derive(Debug, Default)]
pub(crate) struct AccessDenials {
    denied: BTreeSet<(String, &'static str)>,
}

impl AccessDenials {
    /// Records a refusal; true when it is news (the last answer was not one).
    pub(crate) fn refused(&mut self, addr: &str, request: &'static str) -> bool {
        self.denied.insert((addr.to_owned(), request))
    }

    /// Records that `request` to `addr` was answered without a refusal.
    pub(crate) fn granted(&mut self, addr: &str, request: &'static str) {
        if !self.denied.is_empty() {
            self.denied.remove(&(addr.to_owned(), request));
        }
    }
}

#[cfg(test)]
mod tests {
    use proto::ResponseCode;

    use super::*;

    fn response(code: ResponseCode, remark: &str) -> Command {
        let mut answer = Command::response(code, 7);
        answer.remark = Some(remark.to_owned());
        answer
    }

    /// The three ways brokers refuse, and two answers that only look alike.
    #[test]
    fn refusals_are_told_apart_from_other_errors() {
        assert!(is_access_refusal(&response(
            ResponseCode::NO_PERMISSION,
            "the topic is not readable"
        )));
        assert!(is_access_refusal(&response(
            ResponseCode::SYSTEM_ERROR,
            "org.apache.rocketmq.acl.common.AclException: No accessKey is configured"
        )));
        assert!(is_access_refusal(&response(
            ResponseCode::SYSTEM_ERROR,
            "AuthenticationException: check signature failed"
        )));
        assert!(!is_access_refusal(&response(
            ResponseCode::SYSTEM_ERROR,
            "java.lang.NullPointerException"
        )));
        assert!(!is_access_refusal(&response(
            ResponseCode::TOPIC_NOT_EXIST,
            "AclException"
        )));
    }

    /// A refusal is news once, until the same request to the same peer is granted.
    #[test]
    fn a_refusal_is_news_once_until_granted() {
        let mut denials = AccessDenials::default();
        assert!(denials.refused("b:1", "PULL_MESSAGE"));
        assert!(!denials.refused("b:1", "PULL_MESSAGE"));
        assert!(denials.refused("b:2", "PULL_MESSAGE"));
        assert!(denials.refused("b:1", "HEART_BEAT"));
        denials.granted("b:1", "PULL_MESSAGE");
        assert!(denials.refused("b:1", "PULL_MESSAGE"));
    }
}
