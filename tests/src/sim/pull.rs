//! Pulling: `PULL_MESSAGE` / `LITE_PULL_MESSAGE` on a [`SimBroker`], and [`TagFilter`].
//!
//! Follows the 4.9 `PullMessageProcessor.processRequest` and `DefaultMessageStore.getMessage`
//! (`remoting-protocol.md` §3.5, §4): checks in Java's order, then a read of up to
//! `min(maxMsgNums, 32)` matching messages (at least one; 256 KiB at most, as in memory),
//! then the store status mapped to a response code (§4.3), the commit-offset bit applied on
//! the first processing, and a suspended pull parked when nothing was found.
//!
//! On a broker with a slave (`slaveReadEnable=true`, on both nodes) every answer suggests the
//! node to pull from next (`suggestWhichBrokerId`): the slave, id 1
//! (`whichBrokerWhenConsumeSlowly`), when the read started farther behind the commit log's end
//! than fits in memory (`DefaultMessageStore.getMessage` sets `suggestPullingFromSlave` when
//! `maxOffsetPy - maxPhyOffsetPulling` exceeds `accessMessageInMemoryMaxRatio`, 40 %, of RAM;
//! see [`SimConfig::in_memory_bytes`](super::SimConfig::in_memory_bytes)), else the group's
//! `brokerId`, the master, id 0, whichever node answers: a slave sends a consumer that keeps
//! up back to its master. Without a slave the answer is always 0.
//!
//! A slave (`brokerRole=SLAVE`, `offsetCheckInSlave=false`) reads its own copy and corrects
//! nothing: an offset it has no message for keeps the request's offset as the next one
//! (`nextOffsetCorrection`), and where a master would answer `PULL_OFFSET_MOVED` it answers
//! `PULL_RETRY_IMMEDIATELY` suggesting the master (`PullMessageProcessor`: "none correction"),
//! so a consumer ahead of a lagging slave is not moved back. It ignores the commit-offset bit
//! (`storeOffsetEnable` needs a role other than `SLAVE`). It parks long polls as a master
//! does, but what it copies from its master wakes none of them (`ReputMessageService`
//! notifies arrivals only off a slave): the 5 s check finds them.

use std::collections::BTreeSet;

use bytes::BytesMut;
use proto::body::{ExpressionType, PERM_READ, SubscriptionData};
use proto::headers::{PullMessageRequest, PullMessageResponse, pull_sys_flag};
use proto::{Command, ResponseCode};

use super::ConnKey;
use super::broker::{Role, SimBroker, decode, error, with_header};
use super::env::Env;
use super::hold::HeldPull;

/// `maxTransferBytesOnMessageInMemory`.
const MAX_TRANSFER_BYTES: usize = 256 * 1024;
/// Consume-queue entries one read scans at most: `maxFilterMessageCount` (16000 bytes) over
/// the 20-byte entry size.
const MAX_SCAN_ENTRIES: i64 = 800;

/// The broker-side tag filter of a subscription (`ExpressionMessageFilter` for TAG
/// expressions): everything for `"*"` (or class-filter mode), else the tags codes listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TagFilter {
    All,
    Codes(BTreeSet<i32>),
}

impl TagFilter {
    pub(crate) fn of(subscription: &SubscriptionData) -> Self {
        if subscription.class_filter_mode || subscription.sub_string == SubscriptionData::SUB_ALL {
            Self::All
        } else {
            Self::Codes(subscription.code_set.clone())
        }
    }

    /// `isMatchedByConsumeQueue`: whether a message with `tags_code` passes. Hash collisions
    /// pass, as on the real broker.
    pub(crate) fn matches(&self, tags_code: i32) -> bool {
        match self {
            Self::All => true,
            Self::Codes(codes) => codes.contains(&tags_code),
        }
    }
}

/// `GetMessageStatus`, also the remark of a pull response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Found,
    NoMatchedMessage,
    NoMessageInQueue,
    OffsetTooSmall,
    OffsetOverflowOne,
    OffsetOverflowBadly,
    OffsetReset,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Self::Found => "FOUND",
            Self::NoMatchedMessage => "NO_MATCHED_MESSAGE",
            Self::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
            Self::OffsetTooSmall => "OFFSET_TOO_SMALL",
            Self::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
            Self::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
            Self::OffsetReset => "OFFSET_RESET",
        }
    }
}

/// What a read of the store gave.
struct Read {
    status: Status,
    next_begin_offset: i64,
    min_offset: i64,
    max_offset: i64,
    body: BytesMut,
    /// `suggestPullingFromSlave`: the read started farther behind than fits in memory.
    behind: bool,
}

impl SimBroker {
    /// Processes a pull. `None` when the pull was parked (no response yet).
    /// `allow_suspend` is false when a parked pull is re-run.
    pub(crate) fn pull(
        &mut self,
        env: &mut Env<'_>,
        conn: ConnKey,
        request: &Command,
        allow_suspend: bool,
    ) -> Option<Command> {
        let header: PullMessageRequest = match decode(request) {
            Ok(header) => header,
            Err(response) => return Some(response),
        };
        let flag = header.sys_flag;
        let (has_suspend, has_commit) = (
            pull_sys_flag::has_suspend(flag),
            pull_sys_flag::has_commit_offset(flag),
        );
        let Some(topic) = self.store.topic(&header.topic).copied() else {
            return Some(error(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist, apply first please!", header.topic),
            ));
        };
        if topic.perm & PERM_READ == 0 {
            return Some(error(
                ResponseCode::NO_PERMISSION,
                format!("the topic[{}] pulling message is forbidden", header.topic),
            ));
        }
        if header.queue_id < 0 || header.queue_id >= topic.read_queue_nums {
            return Some(error(
                ResponseCode::SYSTEM_ERROR,
                format!(
                    "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
                    header.queue_id, header.topic, topic.read_queue_nums, conn
                ),
            ));
        }
        let subscription = match self.subscription(&header) {
            Ok(subscription) => subscription,
            Err(response) => return Some(response),
        };
        let filter = TagFilter::of(&subscription);

        let read = match self
            .faults
            .take_offset_moved(&header.topic, header.queue_id)
        {
            Some(next) => {
                let (min_offset, max_offset) = self.store.bounds(&header.topic, header.queue_id);
                Read {
                    status: Status::OffsetReset,
                    next_begin_offset: next,
                    min_offset,
                    max_offset,
                    body: BytesMut::new(),
                    behind: false,
                }
            }
            None => self.read(
                &header,
                &filter,
                env.config.max_transfer_count,
                env.config.in_memory_bytes,
            ),
        };
        let mut code = match read.status {
            Status::Found => ResponseCode::SUCCESS,
            Status::NoMatchedMessage => ResponseCode::PULL_RETRY_IMMEDIATELY,
            Status::NoMessageInQueue if header.queue_offset != 0 => ResponseCode::PULL_OFFSET_MOVED,
            Status::NoMessageInQueue | Status::OffsetOverflowOne => ResponseCode::PULL_NOT_FOUND,
            Status::OffsetTooSmall | Status::OffsetOverflowBadly | Status::OffsetReset => {
                ResponseCode::PULL_OFFSET_MOVED
            }
        };

        let mut suggest = match (self.slave_read, read.behind) {
            (true, true) => Role::Slave.broker_id(),
            _ => Role::Master.broker_id(),
        };
        if self.role == Role::Slave && code == ResponseCode::PULL_OFFSET_MOVED {
            code = ResponseCode::PULL_RETRY_IMMEDIATELY;
            suggest = Role::Master.broker_id();
        }

        // `storeOffsetEnable`: only on the first processing, whatever the outcome; never on
        // a slave.
        if allow_suspend && has_commit && self.role == Role::Master {
            self.commit(
                env,
                (
                    header.consumer_group.clone(),
                    header.topic.clone(),
                    header.queue_id,
                ),
                header.commit_offset,
            );
        }

        if code == ResponseCode::PULL_NOT_FOUND && allow_suspend && has_suspend {
            let timeout = std::time::Duration::from_millis(
                u64::try_from(header.suspend_timeout_millis).unwrap_or(0),
            );
            self.holds.hold(
                HeldPull {
                    conn,
                    request: request.clone(),
                    topic: header.topic.clone(),
                    queue_id: header.queue_id,
                    offset: header.queue_offset,
                    filter,
                    deadline: env.now.checked_add(timeout),
                },
                env.now,
                env.config
                    .long_poll_check
                    .max(std::time::Duration::from_millis(1)),
            );
            return None;
        }

        let response = Command::response(code, request.opaque)
            .with_remark(read.status.name())
            .with_body(read.body.freeze());
        Some(with_header(
            response,
            &PullMessageResponse {
                suggest_which_broker_id: suggest,
                next_begin_offset: read.next_begin_offset,
                min_offset: read.min_offset,
                max_offset: read.max_offset,
                offset_delta: None,
                topic_sys_flag: None,
                group_sys_flag: None,
                forbidden_type: None,
            },
        ))
    }

    /// The subscription to filter with: the request's own with the subscription bit, else
    /// the one the group registered by heartbeat on this broker.
    fn subscription(&self, header: &PullMessageRequest) -> Result<SubscriptionData, Command> {
        let subscription = if pull_sys_flag::has_subscription(header.sys_flag) {
            let expression = header.subscription.as_deref().unwrap_or_default();
            match header.expression_type.as_deref() {
                None | Some("") | Some("TAG") => {
                    SubscriptionData::new(&header.topic, expression, header.sub_version)
                }
                // `FilterAPI.build` refuses an empty non-TAG expression.
                Some(_) if expression.is_empty() => {
                    return Err(error(
                        ResponseCode::SUBSCRIPTION_PARSE_FAILED,
                        "parse the consumer's subscription failed",
                    ));
                }
                Some(other) => {
                    return Err(error(
                        ResponseCode::SYSTEM_ERROR,
                        format!(
                            "The broker does not support consumer to filter message by {other}"
                        ),
                    ));
                }
            }
        } else {
            let Some(group) = self.groups.get(&header.consumer_group) else {
                return Err(error(
                    ResponseCode::SUBSCRIPTION_NOT_EXIST,
                    format!(
                        "the consumer's group info not exist, group: {}",
                        header.consumer_group
                    ),
                ));
            };
            let Some(subscription) = group.subscriptions.get(&header.topic) else {
                return Err(error(
                    ResponseCode::SUBSCRIPTION_NOT_EXIST,
                    format!(
                        "the consumer's subscription not exist, group: {}, topic: {}",
                        header.consumer_group, header.topic
                    ),
                ));
            };
            if subscription.sub_version < header.sub_version {
                return Err(error(
                    ResponseCode::SUBSCRIPTION_NOT_LATEST,
                    "the consumer's subscription not latest",
                ));
            }
            subscription.clone()
        };
        if subscription.expression_type != ExpressionType::Tag {
            return Err(error(
                ResponseCode::SYSTEM_ERROR,
                format!(
                    "The broker does not support consumer to filter message by {}",
                    subscription.expression_type.name()
                ),
            ));
        }
        Ok(subscription)
    }

    /// `DefaultMessageStore.getMessage`. `in_memory`: how far behind the commit log's end a
    /// read may start without being [`Read::behind`].
    fn read(
        &self,
        header: &PullMessageRequest,
        filter: &TagFilter,
        max_count: usize,
        in_memory: Option<i64>,
    ) -> Read {
        let (min_offset, max_offset) = self.store.bounds(&header.topic, header.queue_id);
        let offset = header.queue_offset;
        // `nextOffsetCorrection`: a slave keeps the request's offset.
        let correct = |corrected: i64| match self.role {
            Role::Master => corrected,
            Role::Slave => offset,
        };
        let mut body = BytesMut::new();
        let mut behind = false;
        let (status, next_begin_offset) = if max_offset == 0 {
            (Status::NoMessageInQueue, correct(0))
        } else if offset < min_offset {
            (Status::OffsetTooSmall, correct(min_offset))
        } else if offset == max_offset {
            (Status::OffsetOverflowOne, offset)
        } else if offset > max_offset {
            (Status::OffsetOverflowBadly, correct(max_offset))
        } else {
            let queue = self.store.queue(&header.topic, header.queue_id);
            let max_msg_nums = usize::try_from(header.max_msg_nums).unwrap_or(0);
            let end = max_offset.min(offset.saturating_add(MAX_SCAN_ENTRIES));
            let (mut count, mut bytes, mut at) = (0usize, 0usize, offset);
            // `maxPhyOffsetPulling`: where the last entry scanned lies in the commit log.
            let mut last_scanned = None;
            while at < end {
                let Some(message) = queue.and_then(|q| q.get(at)) else {
                    break;
                };
                let size = message.record().len();
                // `isTheBatchFull`: never before the first message.
                if count > 0
                    && (count >= max_msg_nums
                        || count >= max_count
                        || bytes.saturating_add(size) > MAX_TRANSFER_BYTES)
                {
                    break;
                }
                at += 1;
                last_scanned = Some(message.commit_log_offset);
                if !filter.matches(message.tags_code) {
                    continue;
                }
                body.extend_from_slice(message.record());
                count += 1;
                bytes = bytes.saturating_add(size);
            }
            let status = if count > 0 {
                Status::Found
            } else {
                Status::NoMatchedMessage
            };
            if let (Some(memory), Some(pulled)) = (in_memory, last_scanned) {
                behind = self.store.commit_log_end().saturating_sub(pulled) > memory;
            }
            (status, at)
        };
        Read {
            status,
            next_begin_offset,
            min_offset,
            max_offset,
            body,
            behind,
        }
    }
}
