//! The per-queue cache (`ProcessQueue`): the committable offset is the lowest unacknowledged
//! offset, retried messages hold it back and come back later, duplicates and consumed offsets
//! are ignored, and under any sequence of operations it never decreases nor passes an
//! unacknowledged message.
// These tests need one real `Instant` as the origin of their virtual clock; the core itself
// never reads the clock (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod unit {
    use std::time::Duration;

    use proto::message::Message;
    use rocketmq_consumer_core::queue::ProcessQueue;

    use crate::stored::messages;
    use std::time::Instant;

    #[test]
    fn committable_is_lowest_unacknowledged() {
        let mut pq = ProcessQueue::new(5);
        assert_eq!(pq.committable(), 5);
        pq.put(messages(5..10));
        assert_eq!(pq.committable(), 5);
        let taken = pq.take_ready(3);
        assert_eq!(taken.len(), 3);
        pq.ack(&[6, 7]);
        assert_eq!(pq.committable(), 5, "offset 5 is still unacknowledged");
        pq.ack(&[5]);
        assert_eq!(pq.committable(), 8);
        let rest: Vec<i64> = pq
            .take_ready(10)
            .iter()
            .map(Message::queue_offset)
            .collect();
        assert_eq!(rest, vec![8, 9]);
        pq.ack(&rest);
        assert_eq!(pq.committable(), 10, "empty: one past the highest cached");
        assert_eq!(pq.bytes(), 0);
    }

    #[test]
    fn retried_messages_hold_the_offset_and_come_back() {
        let start = Instant::now();
        let mut pq = ProcessQueue::new(0);
        pq.put(messages(0..3));
        let taken = pq.take_ready(3);
        assert_eq!(taken.len(), 3);
        pq.ack(&[1, 2]);
        pq.retry_at(&[0], start + Duration::from_secs(1));
        assert_eq!(pq.committable(), 0);
        assert!(!pq.has_ready());
        assert_eq!(pq.release_due(start), Some(start + Duration::from_secs(1)));
        assert_eq!(pq.release_due(start + Duration::from_secs(1)), None);
        assert_eq!(pq.take_ready(1).len(), 1);
    }

    #[test]
    fn duplicates_and_consumed_offsets_are_ignored() {
        let mut pq = ProcessQueue::new(0);
        assert_eq!(pq.put(messages(0..4)), 4);
        assert_eq!(pq.put(messages(2..6)), 2);
        let all: Vec<i64> = pq
            .take_ready(10)
            .iter()
            .map(Message::queue_offset)
            .collect();
        pq.ack(&all);
        assert_eq!(pq.put(messages(0..6)), 0, "already consumed");
        assert_eq!(pq.span(), 0);
    }
}

mod properties {
    use std::time::{Duration, Instant};

    use bytes::BytesMut;
    use proptest::prelude::*;
    use proto::message::{DecodeOptions, StoredMessage, decode_messages, encode_stored};

    use rocketmq_consumer_core::queue::ProcessQueue;

    #[derive(Clone, Debug)]
    enum Op {
        Put(u8),
        Take(u8),
        AckOldest,
        AckNewest,
        Retry,
        Release,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1u8..40).prop_map(Op::Put),
            (1u8..8).prop_map(Op::Take),
            Just(Op::AckOldest),
            Just(Op::AckNewest),
            Just(Op::Retry),
            Just(Op::Release),
        ]
    }

    proptest! {
        /// The committable offset never decreases and never passes an unacknowledged message,
        /// whatever order messages are taken, acknowledged and retried in.
        #[test]
        fn committable_is_monotone_and_safe(ops in proptest::collection::vec(op(), 1..80)) {
            let start = Instant::now();
            let mut pq = ProcessQueue::new(0);
            let mut next = 0i64;
            let mut in_flight: Vec<i64> = Vec::new();
            let mut unacked: std::collections::BTreeSet<i64> = Default::default();
            let mut last = pq.committable();
            for op in ops {
                match op {
                    Op::Put(n) => {
                        let mut buf = BytesMut::new();
                        for offset in next..next + i64::from(n) {
                            let stored = StoredMessage {
                                queue_offset: offset,
                                topic: "T".into(),
                                ..StoredMessage::default()
                            };
                            encode_stored(&stored, &mut buf).expect("valid record");
                            unacked.insert(offset);
                        }
                        next += i64::from(n);
                        pq.put(decode_messages(&buf.freeze(), &DecodeOptions::default()).messages);
                    }
                    Op::Take(n) => in_flight.extend(pq.take_ready(usize::from(n)).iter().map(|m| m.queue_offset())),
                    Op::AckOldest if !in_flight.is_empty() => {
                        let o = in_flight.remove(0);
                        pq.ack(&[o]);
                        unacked.remove(&o);
                    }
                    Op::AckNewest => {
                        if let Some(o) = in_flight.pop() {
                            pq.ack(&[o]);
                            unacked.remove(&o);
                        }
                    }
                    Op::Retry => {
                        if let Some(o) = in_flight.pop() {
                            pq.retry_at(&[o], start + Duration::from_millis(1));
                        }
                    }
                    Op::Release | Op::AckOldest => {
                        pq.release_due(start + Duration::from_millis(1));
                    }
                }
                let now = pq.committable();
                prop_assert!(now >= last, "committable went back from {} to {}", last, now);
                if let Some(first) = unacked.first() {
                    prop_assert!(now <= *first, "committable {} passes unacknowledged {}", now, first);
                }
                last = now;
            }
        }
    }
}
