//! Receipt handles ("extra info") of popped messages and the offset-info strings of a
//! `POP_MESSAGE` answer, in the format of Java's `ExtraInfoUtil`
//! (`remoting/protocol/header/ExtraInfoUtil.java`).
//!
//! A receipt handle is eight fields separated by one space (`MessageConst.KEY_SEPARATOR`):
//!
//! ```text
//! ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId queueOffset
//! ```
//!
//! `ExtraInfoUtil.buildExtraInfo` writes the first seven; the client appends the message's own
//! queue offset (`MQClientAPIImpl.processPopResponse`). `retry` is `0` for the topic itself, `1`
//! for the V1 pop retry topic `%RETRY%<group>_<topic>`, `2` for the V2 one
//! `%RETRY%<group>+<topic>` (`KeyBuilder`).
//!
//! Everything here comes from a peer, so parsing returns errors and never panics.

use std::fmt;

use thiserror::Error;

/// `%RETRY%` (`MixAll.RETRY_GROUP_TOPIC_PREFIX`).
const RETRY_PREFIX: &str = "%RETRY%";

/// The revive queue id of orderly pop checkpoints (`KeyBuilder.POP_ORDER_REVIVE_QUEUE`).
pub const POP_ORDER_REVIVE_QUEUE: i32 = 999;

/// Which topic a popped message came from, as the `retry` field of a handle says it
/// (`ExtraInfoUtil.getRetry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RetryMark {
    /// The subscribed topic itself (`0`).
    Normal,
    /// The V1 pop retry topic `%RETRY%<group>_<topic>` (`1`).
    RetryV1,
    /// The V2 pop retry topic `%RETRY%<group>+<topic>` (`2`).
    RetryV2,
}

impl RetryMark {
    /// The mark of a message stored in `topic` (`ExtraInfoUtil.getRetry(String topic)`): V2
    /// when it is a retry topic with a `+`, V1 for any other retry topic.
    pub fn of_topic(topic: &str) -> Self {
        if topic.starts_with(RETRY_PREFIX) {
            if topic.contains('+') {
                Self::RetryV2
            } else {
                Self::RetryV1
            }
        } else {
            Self::Normal
        }
    }

    /// The wire digit.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "0",
            Self::RetryV1 => "1",
            Self::RetryV2 => "2",
        }
    }

    fn parse(field: &str) -> Option<Self> {
        match field {
            "0" => Some(Self::Normal),
            "1" => Some(Self::RetryV1),
            "2" => Some(Self::RetryV2),
            _ => None,
        }
    }

    /// The topic to ack or change the invisibility in, for a message of `group` subscribed
    /// as `topic` (`ExtraInfoUtil.getRealTopic`, `KeyBuilder.buildPopRetryTopicV1/V2`).
    pub fn real_topic(self, topic: &str, group: &str) -> String {
        match self {
            Self::Normal => topic.to_owned(),
            Self::RetryV1 => format!("{RETRY_PREFIX}{group}_{topic}"),
            Self::RetryV2 => format!("{RETRY_PREFIX}{group}+{topic}"),
        }
    }
}

/// Why a receipt handle or an offset-info string did not parse.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReceiptError {
    /// Not the number of space-separated fields the format has.
    #[error("receipt handle {handle:?} has {found} fields, expected 8")]
    FieldCount {
        /// What arrived.
        handle: String,
        /// How many fields it had.
        found: usize,
    },
    /// A field is not of its type.
    #[error("field `{field}` of {text:?} is not valid")]
    Field {
        /// The field's Java name.
        field: &'static str,
        /// The whole text.
        text: String,
    },
    /// An offset-info entry is not `retry key value`.
    #[error("offset info entry {entry:?} is malformed")]
    Entry {
        /// The entry.
        entry: String,
    },
    /// Two offset-info entries name the same queue (Java refuses these too).
    #[error("offset info names {key:?} twice")]
    Duplicate {
        /// The `retry@queue` key.
        key: String,
    },
    /// A popped message has no entry in the answer's offset info.
    #[error("no offset info for {key:?} at position {index}")]
    MissingOffset {
        /// The `retry@queue` key.
        key: String,
        /// The message's position among that queue's messages.
        index: usize,
    },
}

/// A popped message's receipt handle: what ack and change-invisible-time need, and what they
/// carry back to the broker as `extraInfo`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReceiptHandle {
    /// The queue offset of the checkpoint the message belongs to (the first message popped
    /// from its queue by that request).
    pub ck_queue_offset: i64,
    /// The broker's wall clock (Unix ms) when the checkpoint was written.
    pub pop_time: i64,
    /// The invisibility from `pop_time`, in milliseconds.
    pub invisible_time: i64,
    /// The revive queue of the checkpoint; [`POP_ORDER_REVIVE_QUEUE`] for orderly pop.
    pub revive_qid: i32,
    /// Which topic the message was stored in.
    pub retry: RetryMark,
    /// The broker that popped it.
    pub broker_name: String,
    /// The queue it was popped from.
    pub queue_id: i32,
    /// The message's own queue offset.
    pub queue_offset: i64,
}

impl ReceiptHandle {
    /// Reads a handle (`ExtraInfoUtil.split` and its getters). Any other number of fields,
    /// or a field that is not a number where one belongs, is an error.
    pub fn parse(text: &str) -> Result<Self, ReceiptError> {
        let fields: Vec<&str> = text.split(' ').collect();
        let [ck, pop, invisible, revive, retry, broker, queue, offset] = fields[..] else {
            return Err(ReceiptError::FieldCount {
                handle: text.to_owned(),
                found: fields.len(),
            });
        };
        let bad = |field| ReceiptError::Field {
            field,
            text: text.to_owned(),
        };
        if broker.is_empty() {
            return Err(bad("brokerName"));
        }
        Ok(Self {
            ck_queue_offset: ck.parse().map_err(|_| bad("ckQueueOffset"))?,
            pop_time: pop.parse().map_err(|_| bad("popTime"))?,
            invisible_time: invisible.parse().map_err(|_| bad("invisibleTime"))?,
            revive_qid: revive.parse().map_err(|_| bad("reviveQid"))?,
            retry: RetryMark::parse(retry).ok_or_else(|| bad("retry"))?,
            broker_name: broker.to_owned(),
            queue_id: queue.parse().map_err(|_| bad("queueId"))?,
            queue_offset: offset.parse().map_err(|_| bad("queueOffset"))?,
        })
    }

    /// The topic to ack in, for a message of `group` subscribed as `topic`
    /// (`ExtraInfoUtil.getRealTopic`).
    pub fn real_topic(&self, topic: &str, group: &str) -> String {
        self.retry.real_topic(topic, group)
    }

    /// Whether it came from orderly pop (`ExtraInfoUtil.isOrder`).
    pub fn is_order(&self) -> bool {
        self.revive_qid == POP_ORDER_REVIVE_QUEUE
    }

    /// When the message becomes visible again, in the broker's Unix milliseconds.
    pub fn visible_at_ms(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }

    /// The handle after a successful `CHANGE_MESSAGE_INVISIBLETIME`: the broker wrote a
    /// checkpoint for this message alone, so its checkpoint offset is the message's own
    /// offset (`MQClientAPIImpl.changeInvisibleTimeAsync` builds it so).
    pub fn renewed(&self, pop_time: i64, invisible_time: i64, revive_qid: i32) -> Self {
        Self {
            ck_queue_offset: self.queue_offset,
            pop_time,
            invisible_time,
            revive_qid,
            ..self.clone()
        }
    }
}

impl fmt::Display for ReceiptHandle {
    /// The wire form (`ExtraInfoUtil.buildExtraInfo` plus the message offset).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {} {}",
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry.as_str(),
            self.broker_name,
            self.queue_id,
            self.queue_offset
        )
    }
}

/// The queue an offset-info entry is about: its id, or, in orderly count info, one message of
/// it (`qo<queueId>%<offset>`, `ExtraInfoUtil.getQueueOffsetKeyValueKey`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OffsetInfoKey {
    /// A whole queue.
    Queue(i32),
    /// One message of a queue.
    QueueOffset {
        /// The queue.
        queue_id: i32,
        /// The message's offset.
        offset: i64,
    },
}

impl OffsetInfoKey {
    fn parse(text: &str) -> Option<Self> {
        match text.strip_prefix("qo") {
            Some(rest) => {
                let (queue, offset) = rest.split_once('%')?;
                Some(Self::QueueOffset {
                    queue_id: queue.parse().ok()?,
                    offset: offset.parse().ok()?,
                })
            }
            None => text.parse().ok().map(Self::Queue),
        }
    }
}

/// One `retry key values` entry of an offset-info string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetInfoEntry {
    /// The topic of the entry.
    pub retry: RetryMark,
    /// The queue (or message) it is about.
    pub key: OffsetInfoKey,
    /// Its numbers: one for start offsets and counts, one per message for message offsets.
    pub values: Vec<i64>,
}

/// Reads `startOffsetInfo`: one start offset per popped queue
/// (`ExtraInfoUtil.parseStartOffsetInfo`).
pub fn parse_start_offset_info(text: &str) -> Result<Vec<OffsetInfoEntry>, ReceiptError> {
    parse_entries(text, false)
}

/// Reads `orderCountInfo`: delivery counts per queue or message
/// (`ExtraInfoUtil.parseOrderCountInfo`).
pub fn parse_order_count_info(text: &str) -> Result<Vec<OffsetInfoEntry>, ReceiptError> {
    parse_entries(text, false)
}

/// Reads `msgOffsetInfo`: the offsets popped from each queue (`ExtraInfoUtil.parseMsgOffsetInfo`).
///
/// Java separates entries with `;` and the offsets of one entry with `,`. An item after a `;`
/// that is a bare number continues the entry before it, so an answer that separates offsets
/// with `;` as well reads the same.
pub fn parse_msg_offset_info(text: &str) -> Result<Vec<OffsetInfoEntry>, ReceiptError> {
    parse_entries(text, true)
}

fn parse_entries(text: &str, many: bool) -> Result<Vec<OffsetInfoEntry>, ReceiptError> {
    let mut entries: Vec<OffsetInfoEntry> = Vec::new();
    if text.is_empty() {
        return Ok(entries);
    }
    for item in text.split(';') {
        let bad = || ReceiptError::Entry {
            entry: item.to_owned(),
        };
        let fields: Vec<&str> = item.split(' ').collect();
        match fields[..] {
            [retry, key, values] => {
                let retry = RetryMark::parse(retry).ok_or_else(bad)?;
                let key = OffsetInfoKey::parse(key).ok_or_else(bad)?;
                let values = if many {
                    values
                        .split(',')
                        .map(|v| v.parse().map_err(|_| bad()))
                        .collect::<Result<Vec<i64>, _>>()?
                } else {
                    vec![values.parse().map_err(|_| bad())?]
                };
                if entries.iter().any(|e| e.retry == retry && e.key == key) {
                    return Err(ReceiptError::Duplicate {
                        key: format!("{}@{}", retry.as_str(), item_key(key)),
                    });
                }
                entries.push(OffsetInfoEntry { retry, key, values });
            }
            [value] if many => {
                let value = value.parse().map_err(|_| bad())?;
                entries.last_mut().ok_or_else(bad)?.values.push(value);
            }
            _ => return Err(bad()),
        }
    }
    Ok(entries)
}

fn item_key(key: OffsetInfoKey) -> String {
    match key {
        OffsetInfoKey::Queue(q) => q.to_string(),
        OffsetInfoKey::QueueOffset { queue_id, offset } => format!("qo{queue_id}%{offset}"),
    }
}

/// Where a popped message was stored, as its record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoppedAt<'a> {
    /// The topic of the stored record (a pop retry topic for a redelivery).
    pub topic: &'a str,
    /// Its queue.
    pub queue_id: i32,
    /// Its queue offset.
    pub queue_offset: i64,
}

/// The receipt handle of each message of a `POP_MESSAGE` answer, in the messages' order
/// (`MQClientAPIImpl.processPopResponse`).
///
/// Without `startOffsetInfo` (older brokers) a queue's checkpoint starts at the first message
/// popped from it. With it, each queue's start offset comes from there, and the n-th message of
/// a queue (in offset order) takes the n-th offset of the queue's `msgOffsetInfo` entry.
pub fn receipt_handles(
    broker_name: &str,
    pop_time: i64,
    invisible_time: i64,
    revive_qid: i32,
    start_offset_info: Option<&str>,
    msg_offset_info: Option<&str>,
    messages: &[PoppedAt<'_>],
) -> Result<Vec<ReceiptHandle>, ReceiptError> {
    let handle = |at: &PoppedAt<'_>, ck: i64, offset: i64| ReceiptHandle {
        ck_queue_offset: ck,
        pop_time,
        invisible_time,
        revive_qid,
        retry: RetryMark::of_topic(at.topic),
        broker_name: broker_name.to_owned(),
        queue_id: at.queue_id,
        queue_offset: offset,
    };
    let start = start_offset_info.filter(|s| !s.is_empty());
    let Some(start) = start else {
        let mut firsts: Vec<((&str, i32), i64)> = Vec::new();
        return Ok(messages
            .iter()
            .map(|at| {
                let key = (at.topic, at.queue_id);
                let ck = match firsts.iter().find(|(k, _)| *k == key) {
                    Some((_, ck)) => *ck,
                    None => {
                        firsts.push((key, at.queue_offset));
                        at.queue_offset
                    }
                };
                handle(at, ck, at.queue_offset)
            })
            .collect());
    };
    let starts = parse_start_offset_info(start)?;
    let offsets = parse_msg_offset_info(msg_offset_info.unwrap_or(""))?;
    messages
        .iter()
        .map(|at| {
            let retry = RetryMark::of_topic(at.topic);
            let key = OffsetInfoKey::Queue(at.queue_id);
            let missing = |index| ReceiptError::MissingOffset {
                key: format!("{}@{}", retry.as_str(), at.queue_id),
                index,
            };
            let find = |entries: &[OffsetInfoEntry]| {
                entries
                    .iter()
                    .find(|e| e.retry == retry && e.key == key)
                    .map(|e| e.values.clone())
            };
            let ck = find(&starts)
                .and_then(|v| v.first().copied())
                .ok_or_else(|| missing(0))?;
            // The message's rank among the messages of its queue, by offset.
            let index = messages
                .iter()
                .filter(|m| {
                    RetryMark::of_topic(m.topic) == retry
                        && m.queue_id == at.queue_id
                        && m.queue_offset < at.queue_offset
                })
                .count();
            let offset = find(&offsets)
                .and_then(|v| v.get(index).copied())
                .ok_or_else(|| missing(index))?;
            Ok(handle(at, ck, offset))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_round_trips() {
        // The shape of Java's ExtraInfoUtil.buildExtraInfo(...) + " " + queueOffset, with a
        // retry message from the V1 pop retry topic.
        let text = "12 1700000000000 60000 3 1 broker-a 0 14";
        let handle = ReceiptHandle::parse(text).unwrap();
        assert_eq!(handle.ck_queue_offset, 12);
        assert_eq!(handle.pop_time, 1_700_000_000_000);
        assert_eq!(handle.invisible_time, 60_000);
        assert_eq!(handle.revive_qid, 3);
        assert_eq!(handle.retry, RetryMark::RetryV1);
        assert_eq!(handle.broker_name, "broker-a");
        assert_eq!(handle.queue_offset, 14);
        assert_eq!(handle.to_string(), text);
        assert_eq!(handle.real_topic("T", "G"), "%RETRY%G_T");
        assert_eq!(handle.visible_at_ms(), 1_700_000_060_000);
        assert!(!handle.is_order());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for text in [
            "",
            " ",
            "1 2 3 4 0 b 0",
            "1 2 3 4 0 b 0 5 6",
            "x 2 3 4 0 b 0 5",
            "1 2 3 4 7 b 0 5",
            "1 2 3 4 0  0 5",
            "1  2 3 4 0 b 0",
            "1 2 3 99999999999 0 b 0 5",
        ] {
            assert!(ReceiptHandle::parse(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn renewal_makes_a_one_message_checkpoint() {
        let handle = ReceiptHandle::parse("12 1000 60000 3 0 b 2 14").unwrap();
        let renewed = handle.renewed(5000, 30_000, 4);
        assert_eq!(renewed.to_string(), "14 5000 30000 4 0 b 2 14");
    }

    #[test]
    fn retry_marks_follow_key_builder() {
        assert_eq!(RetryMark::of_topic("T"), RetryMark::Normal);
        assert_eq!(RetryMark::of_topic("%RETRY%G_T"), RetryMark::RetryV1);
        assert_eq!(RetryMark::of_topic("%RETRY%G+T"), RetryMark::RetryV2);
        assert_eq!(RetryMark::RetryV2.real_topic("T", "G"), "%RETRY%G+T");
    }

    #[test]
    fn offset_info_parses_as_java_writes_it() {
        // ExtraInfoUtil.buildStartOffsetInfo / buildMsgOffsetInfo for two queues.
        let starts = parse_start_offset_info("0 0 12;1 0 3").unwrap();
        assert_eq!(starts.len(), 2);
        assert_eq!(starts[1].retry, RetryMark::RetryV1);
        assert_eq!(starts[1].values, vec![3]);
        let offsets = parse_msg_offset_info("0 0 12,13,14;1 0 3").unwrap();
        assert_eq!(offsets[0].values, vec![12, 13, 14]);
        // The same offsets separated by `;` read alike.
        assert_eq!(
            parse_msg_offset_info("0 0 12;13;14;1 0 3").unwrap(),
            offsets
        );
        // ExtraInfoUtilTest.testOrderCountInfo: a queue count and a message count.
        let counts = parse_order_count_info("0 0 1;0 qo0%1234 2").unwrap();
        assert_eq!(counts[0].key, OffsetInfoKey::Queue(0));
        assert_eq!(
            counts[1].key,
            OffsetInfoKey::QueueOffset {
                queue_id: 0,
                offset: 1234
            }
        );
        assert_eq!(counts[1].values, vec![2]);
        for bad in ["0 0", "0 0 x", "9 0 1", "0 0 1;0 0 2", "5", "0 qo1 2"] {
            assert!(parse_start_offset_info(bad).is_err(), "{bad:?}");
        }
        assert!(parse_msg_offset_info("7").is_err());
    }

    #[test]
    fn handles_come_from_the_offset_info() {
        let messages = [
            PoppedAt {
                topic: "T",
                queue_id: 0,
                queue_offset: 13,
            },
            PoppedAt {
                topic: "T",
                queue_id: 0,
                queue_offset: 12,
            },
            PoppedAt {
                topic: "%RETRY%G_T",
                queue_id: 0,
                queue_offset: 3,
            },
        ];
        let handles = receipt_handles(
            "b",
            1000,
            60_000,
            2,
            Some("0 0 12;1 0 3"),
            Some("0 0 12,13;1 0 3"),
            &messages,
        )
        .unwrap();
        let texts: Vec<String> = handles.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "12 1000 60000 2 0 b 0 13",
                "12 1000 60000 2 0 b 0 12",
                "3 1000 60000 2 1 b 0 3"
            ]
        );
        // Without start offsets, a queue's first message starts the checkpoint.
        let old = receipt_handles("b", 1000, 60_000, 2, None, None, &messages).unwrap();
        assert_eq!(old[1].ck_queue_offset, 13);
        // An answer naming fewer offsets than messages is an error.
        assert!(receipt_handles("b", 1, 1, 1, Some("0 0 12"), Some("0 0 12"), &messages).is_err());
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        fn handle() -> impl Strategy<Value = ReceiptHandle> {
            (
                any::<i64>(),
                any::<i64>(),
                any::<i64>(),
                any::<i32>(),
                prop_oneof![
                    Just(RetryMark::Normal),
                    Just(RetryMark::RetryV1),
                    Just(RetryMark::RetryV2)
                ],
                "[a-zA-Z0-9_-]{1,20}",
                any::<i32>(),
                any::<i64>(),
            )
                .prop_map(|(ck, pop, inv, rq, retry, broker, q, off)| ReceiptHandle {
                    ck_queue_offset: ck,
                    pop_time: pop,
                    invisible_time: inv,
                    revive_qid: rq,
                    retry,
                    broker_name: broker,
                    queue_id: q,
                    queue_offset: off,
                })
        }

        proptest! {
            #[test]
            fn handles_round_trip(handle in handle()) {
                prop_assert_eq!(ReceiptHandle::parse(&handle.to_string()), Ok(handle));
            }

            #[test]
            fn garbage_never_panics(text in "\\PC{0,80}", info in "[0-9 ;,qo%x-]{0,60}") {
                let _ = ReceiptHandle::parse(&text);
                let _ = parse_start_offset_info(&info);
                let _ = parse_msg_offset_info(&info);
                let _ = parse_order_count_info(&info);
                let at = [PoppedAt { topic: "T", queue_id: 0, queue_offset: 1 }];
                let _ = receipt_handles("b", 1, 1, 1, Some(&info), Some(&info), &at);
            }
        }
    }
}
