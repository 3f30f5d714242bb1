//! Pull responses interpreted as Java's `PullAPIWrapper.processPullResult` and the push
//! consumer's pull callback do (`remoting-protocol.md` §4.2), as a pure function.

use proto::body::SubscriptionData;
use proto::headers::PullMessageResponse;
use proto::message::{DecodeOptions, Message, decode_messages, property};
use proto::{Command, ResponseCode};

/// What one pull response means for its queue.
#[derive(Debug)]
pub(crate) enum PullOutcome {
    /// Messages (after the client-side tag re-check; maybe none survived it). Nothing new
    /// (`PULL_NOT_FOUND`) or nothing matching (`PULL_RETRY_IMMEDIATELY`) is a find of none:
    /// the position moves on alike.
    Found {
        /// The messages to cache, in offset order.
        messages: Vec<Message>,
        /// Where the next pull starts.
        next_offset: i64,
        /// The queue's max offset, for lag.
        max_offset: i64,
        /// The broker id the broker suggests pulling from next.
        suggested_broker: i64,
        /// A record failed to decode: its error, and the offset to pull again from.
        corrupt: Option<(String, i64)>,
    },
    /// The requested offset is illegal (`PULL_OFFSET_MOVED`); continue at `next_offset`.
    OffsetMoved {
        /// The broker's correction.
        next_offset: i64,
    },
    /// The broker flow-controlled the pull (`FLOW_CONTROL`): retry shortly.
    BrokerBusy,
    /// Any other answer: retry after the exception backoff.
    Failed {
        /// The code.
        code: ResponseCode,
        /// The broker's reason, or why the response did not make sense.
        remark: Option<String>,
    },
}

/// Interprets the response to a pull of `topic` that asked for `requested_offset`.
///
/// `subscription` drives the tag re-check (Java keeps only messages whose `TAGS` is in the
/// subscription's tag set when it names tags); `retry_topic` is the group's `%RETRY%` topic,
/// whose messages get their original topic back from `RETRY_TOPIC`
/// (`DefaultMQPushConsumerImpl.resetRetryAndNamespace`).
pub(crate) fn interpret(
    response: &Command,
    requested_offset: i64,
    subscription: Option<&SubscriptionData>,
    retry_topic: &str,
) -> PullOutcome {
    let code = response.response_code();
    let header = match code {
        ResponseCode::SUCCESS
        | ResponseCode::PULL_NOT_FOUND
        | ResponseCode::PULL_RETRY_IMMEDIATELY
        | ResponseCode::PULL_OFFSET_MOVED => match response.header::<PullMessageResponse>() {
            Ok(header) => header,
            Err(e) => {
                return PullOutcome::Failed {
                    code,
                    remark: Some(format!("bad pull response: {e}")),
                };
            }
        },
        ResponseCode::FLOW_CONTROL => return PullOutcome::BrokerBusy,
        _ => {
            return PullOutcome::Failed {
                code,
                remark: response.remark.clone(),
            };
        }
    };
    match code {
        ResponseCode::SUCCESS => {
            let batch = decode_messages(&response.body, &DecodeOptions::default());
            // A static topic's logical queue: the broker answers the offsets of the physical
            // queue that serves it, and how far the logical ones are from them
            // (`PullAPIWrapper.processPullResult` adds it to every message's offset; the
            // response's next offset is logical already, `rewriteResponseForStaticTopic`).
            let offset_delta = header.offset_delta.unwrap_or(0);
            let corrupt = batch.error.map(|e| {
                let resume = batch.messages.last().map_or(requested_offset, |m| {
                    m.queue_offset()
                        .saturating_add(offset_delta)
                        .saturating_add(1)
                });
                (e.to_string(), resume)
            });
            // Only a subscription naming tags filters; skip the per-message lookup otherwise.
            let tag_filter =
                subscription.filter(|s| !s.tags_set.is_empty() && !s.class_filter_mode);
            // Filtered and fixed up in place: the decoded batch's vector is the one cached.
            let mut messages = batch.messages;
            let fix_up = |message: &mut Message| {
                if message.topic_is(retry_topic)
                    && let Some(original) = message.property(property::RETRY_TOPIC)
                {
                    let original = original.to_owned();
                    message.set_topic(original);
                }
                if offset_delta != 0 {
                    let logical = message.queue_offset().saturating_add(offset_delta);
                    message.set_queue_offset(logical);
                }
            };
            match tag_filter {
                Some(sub) => messages.retain_mut(|message| {
                    let accepted = sub.accepts_tag(message.tags());
                    if accepted {
                        fix_up(message);
                    }
                    accepted
                }),
                // Nothing leaves: one pass without `retain`'s bookkeeping.
                None => messages.iter_mut().for_each(fix_up),
            }
            let next_offset = match &corrupt {
                Some((_, resume)) => *resume,
                None => header.next_begin_offset,
            };
            PullOutcome::Found {
                messages,
                next_offset,
                max_offset: header.max_offset,
                suggested_broker: header.suggest_which_broker_id,
                corrupt,
            }
        }
        ResponseCode::PULL_OFFSET_MOVED => PullOutcome::OffsetMoved {
            next_offset: header.next_begin_offset,
        },
        _ => PullOutcome::Found {
            messages: Vec::new(),
            next_offset: header.next_begin_offset,
            max_offset: header.max_offset,
            suggested_broker: header.suggest_which_broker_id,
            corrupt: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use proto::ext::CommandHeader;
    use proto::message::{StoredMessage, encode_properties, encode_stored};

    use super::*;

    fn response(code: ResponseCode, next: i64, body: bytes::Bytes) -> Command {
        let header = PullMessageResponse {
            suggest_which_broker_id: 1,
            next_begin_offset: next,
            min_offset: 0,
            max_offset: 100,
            ..PullMessageResponse::default()
        };
        let mut command = Command::response(code, 1).with_body(body);
        command.ext_fields = header.to_ext_fields();
        command
    }

    /// Topic, queue offset, tag and extra properties of one record.
    type Record<'a> = (&'a str, i64, Option<&'a str>, &'a [(&'a str, &'a str)]);

    fn body(records: &[Record<'_>]) -> bytes::Bytes {
        let mut buf = BytesMut::new();
        for (topic, offset, tag, extra) in records {
            let mut props: Vec<(&str, &str)> = extra.to_vec();
            if let Some(tag) = tag {
                props.push(("TAGS", tag));
            }
            let stored = StoredMessage {
                topic: (*topic).to_owned(),
                queue_offset: *offset,
                body: "x".into(),
                properties: encode_properties(props),
                ..StoredMessage::default()
            };
            encode_stored(&stored, &mut buf).expect("valid record");
        }
        buf.freeze()
    }

    #[test]
    fn found_filters_tags_and_restores_retry_topic() {
        let body = body(&[
            ("T", 5, Some("A"), &[]),
            ("T", 6, Some("B"), &[]),
            ("T", 7, None, &[]),
            ("%RETRY%g", 8, Some("A"), &[("RETRY_TOPIC", "T")]),
        ]);
        let sub = SubscriptionData::new("T", "A || C", 1);
        let outcome = interpret(
            &response(ResponseCode::SUCCESS, 9, body),
            5,
            Some(&sub),
            "%RETRY%g",
        );
        let PullOutcome::Found {
            messages,
            next_offset,
            max_offset,
            suggested_broker,
            corrupt,
        } = outcome
        else {
            panic!("expected Found, got {outcome:?}");
        };
        let kept: Vec<(String, i64)> = messages
            .iter()
            .map(|m| (m.topic().to_owned(), m.queue_offset()))
            .collect();
        assert_eq!(kept, vec![("T".to_owned(), 5), ("T".to_owned(), 8)]);
        assert_eq!((next_offset, max_offset, suggested_broker), (9, 100, 1));
        assert!(corrupt.is_none());
    }

    #[test]
    fn statuses_map_as_java_maps_them() {
        let empty = bytes::Bytes::new();
        assert!(matches!(
            interpret(
                &response(ResponseCode::PULL_NOT_FOUND, 7, empty.clone()),
                7,
                None,
                "r"
            ),
            PullOutcome::Found { ref messages, next_offset: 7, corrupt: None, .. } if messages.is_empty()
        ));
        assert!(matches!(
            interpret(
                &response(ResponseCode::PULL_RETRY_IMMEDIATELY, 9, empty.clone()),
                7,
                None,
                "r"
            ),
            PullOutcome::Found { ref messages, next_offset: 9, corrupt: None, .. } if messages.is_empty()
        ));
        assert!(matches!(
            interpret(
                &response(ResponseCode::PULL_OFFSET_MOVED, 42, empty.clone()),
                7,
                None,
                "r"
            ),
            PullOutcome::OffsetMoved { next_offset: 42 }
        ));
        assert!(matches!(
            interpret(
                &Command::response(ResponseCode::FLOW_CONTROL, 1),
                7,
                None,
                "r"
            ),
            PullOutcome::BrokerBusy
        ));
        assert!(matches!(
            interpret(
                &Command::response(ResponseCode::SUBSCRIPTION_NOT_EXIST, 1),
                7,
                None,
                "r"
            ),
            PullOutcome::Failed {
                code: ResponseCode::SUBSCRIPTION_NOT_EXIST,
                ..
            }
        ));
        // A SUCCESS without the required header fields is a failure, not a guess.
        assert!(matches!(
            interpret(&Command::response(ResponseCode::SUCCESS, 1), 7, None, "r"),
            PullOutcome::Failed { .. }
        ));
    }

    #[test]
    fn corrupt_record_resumes_after_the_last_good_one() {
        let good = body(&[("T", 5, None, &[]), ("T", 6, None, &[])]);
        let mut bytes = BytesMut::from(&good[..]);
        let second = bytes.len() / 2;
        bytes[second + 4] ^= 0xFF; // the second record's magic code
        let outcome = interpret(
            &response(ResponseCode::SUCCESS, 7, bytes.freeze()),
            5,
            None,
            "r",
        );
        let PullOutcome::Found {
            messages,
            next_offset,
            corrupt,
            ..
        } = outcome
        else {
            panic!("expected Found, got {outcome:?}");
        };
        assert_eq!(messages.len(), 1);
        assert_eq!(next_offset, 6, "pull again from the bad record");
        assert!(corrupt.is_some());
    }

    /// A static topic's logical queue (5.x): the broker answers the physical queue's records
    /// and how far the logical offsets are from them; the messages carry logical offsets, as
    /// Java's `PullAPIWrapper.processPullResult` makes them, and so does the resume point
    /// after a bad record.
    #[test]
    fn a_static_topic_delta_moves_every_offset() {
        let with_delta = |body: bytes::Bytes, next: i64| {
            let mut command = response(ResponseCode::SUCCESS, next, body);
            let mut header: PullMessageResponse = command.header().expect("a pull response header");
            header.offset_delta = Some(1_000);
            command.ext_fields = header.to_ext_fields();
            command
        };
        let good = body(&[("T", 5, None, &[]), ("T", 6, None, &[])]);
        let outcome = interpret(&with_delta(good.clone(), 1_007), 1_005, None, "r");
        let PullOutcome::Found {
            messages,
            next_offset,
            ..
        } = outcome
        else {
            panic!("expected Found, got {outcome:?}");
        };
        let offsets: Vec<i64> = messages.iter().map(|m| m.queue_offset()).collect();
        assert_eq!(offsets, [1_005, 1_006]);
        assert_eq!(next_offset, 1_007);
        assert!(
            messages
                .iter()
                .all(|m| m.topic() == "T" && m.body() == b"x")
        );

        let mut bytes = BytesMut::from(&good[..]);
        let second = bytes.len() / 2;
        bytes[second + 4] ^= 0xFF;
        let outcome = interpret(&with_delta(bytes.freeze(), 1_007), 1_005, None, "r");
        let PullOutcome::Found { next_offset, .. } = outcome else {
            panic!("expected Found, got {outcome:?}");
        };
        assert_eq!(
            next_offset, 1_006,
            "pull again from the bad record, logically"
        );
    }
}
