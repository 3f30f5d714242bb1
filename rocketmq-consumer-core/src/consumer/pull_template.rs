//! A queue's pull request header, built once for the queue's life ([`PullTemplate`]).
//!
//! Of a pull request's fields (Java `PullMessageRequestHeader`) only two change between a
//! queue's pulls: the offset to read from and the subscription's version. The group, the topic,
//! the queue id, the batch size, the long-poll suspension and the flags are the queue's and the
//! configuration's, which do not change while the queue is owned. Building the header from a
//! `PullMessageRequest` at every pull copied the group and the topic into `String`s, formatted
//! and inserted a dozen fields and dropped the strings again: about 1,900 instructions a pull,
//! 60 a message at pulls of 32 (`core_steady` under callgrind). A copy of the template with
//! those two fields set is one allocation and two replaced values.

use proto::headers::{PullMessageRequest, pull_sys_flag};
use proto::{Command, CommandHeader, ExtFields, MessageQueue, RequestCode};

use crate::config::ConsumerConfig;

/// The `extFields` key of [`PullMessageRequest::queue_offset`].
const QUEUE_OFFSET: &str = "queueOffset";
/// The `extFields` key of [`PullMessageRequest::sub_version`].
const SUB_VERSION: &str = "subVersion";

/// The header every pull of one queue sends, but for its offset and subscription version.
#[derive(Debug, Clone)]
pub(crate) struct PullTemplate(ExtFields);

impl PullTemplate {
    /// The template for `mq`'s pulls under `config`.
    pub(crate) fn new(config: &ConsumerConfig, mq: &MessageQueue) -> Self {
        Self(header(config, mq, 0, 0).to_ext_fields())
    }

    /// The `PULL_MESSAGE` request reading `mq` from `offset` with the subscription at
    /// `sub_version`: exactly what [`header`] with those values encodes to.
    pub(crate) fn request(&self, offset: i64, sub_version: i64) -> Command {
        let mut fields = self.0.clone();
        fields.put(QUEUE_OFFSET, &offset);
        fields.put(SUB_VERSION, &sub_version);
        Command::request_with_fields(RequestCode::PULL_MESSAGE, fields)
    }
}

/// A pull of `mq` from `offset`.
///
/// No commit rides on the pull (Java piggy-backs one, `PullAPIWrapper.pullKernelImpl` with
/// `FLAG_COMMIT_OFFSET`): Apache's brokers handle pulls and `UPDATE_CONSUMER_OFFSET` on
/// different thread pools and store a lower offset as given, so a pull sent just before a
/// later commit (the final one at shutdown or revoke) can be stored after it and take the
/// group back: on 4.9.7 a group whose final commit of 150 was confirmed read 144 back
/// (`rocketmq-tests`' `embedded` scenarios). Commits go with `UPDATE_CONSUMER_OFFSET` only,
/// every `persist_interval` and at the end.
fn header(
    config: &ConsumerConfig,
    mq: &MessageQueue,
    offset: i64,
    sub_version: i64,
) -> PullMessageRequest {
    PullMessageRequest {
        consumer_group: config.group.clone(),
        topic: mq.topic().to_owned(),
        queue_id: mq.queue_id(),
        queue_offset: offset,
        max_msg_nums: config.pull_batch_size,
        sys_flag: pull_sys_flag::build(false, true, false, false, false),
        commit_offset: 0,
        suspend_timeout_millis: config.long_poll_suspend.as_millis() as i64,
        subscription: None,
        sub_version,
        expression_type: None,
        max_msg_bytes: None,
        broker_name: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request from the template is the one the full header encodes to, field for field,
    /// whatever the offset and version (the template's two keys are the header's).
    #[test]
    fn a_templated_request_is_the_full_header() {
        let config = ConsumerConfig::new("a-group-name-longer-than-twenty-two-bytes", Vec::new());
        let mq = MessageQueue::new("TopicTest", "broker-a", 5);
        let template = PullTemplate::new(&config, &mq);
        for (offset, sub_version) in [
            (0, 0),
            (1, 1_733_616_000_000),
            (i64::MAX, -1),
            (i64::MIN, i64::MAX),
        ] {
            let full = Command::request(
                RequestCode::PULL_MESSAGE,
                &header(&config, &mq, offset, sub_version),
            );
            assert_eq!(template.request(offset, sub_version), full);
        }
    }
}
