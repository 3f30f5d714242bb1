//! Every body survives `encode` → `decode` unchanged, and so does its serde form (string keys
//! in place of fastjson's object keys); the route also in its fastjson form and the reset-offset
//! body in its C form. Decoding arbitrary bytes never panics.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use rocketmq_proto::MessageQueue;
use rocketmq_proto::body::{
    BrokerData, CheckClientRequestBody, ConsumeFromWhere, ConsumeMessageDirectlyResult,
    ConsumeResult, ConsumeStatus, ConsumeType, ConsumerData, ConsumerListBody, ConsumerRunningInfo,
    ExpressionType, GetConsumerStatusBody, HeartbeatData, LockBatchRequestBody,
    LockBatchResponseBody, MAX_QUEUES_PER_BROKER, MessageModel, OffsetTable, PopProcessQueueInfo,
    ProcessQueueInfo, ProducerData, QueueData, ResetOffsetBody, SubscriptionData, TopicRouteData,
};
use serde_json::Value;

fn text() -> impl Strategy<Value = String> {
    "(?s).{0,8}"
}

fn mq() -> impl Strategy<Value = MessageQueue> {
    (text(), text(), any::<i32>()).prop_map(|(t, b, q)| MessageQueue::new(&t, &b, q))
}

fn mq_set() -> impl Strategy<Value = BTreeSet<MessageQueue>> {
    prop::collection::btree_set(mq(), 0..5)
}

fn offsets() -> impl Strategy<Value = BTreeMap<MessageQueue, i64>> {
    prop::collection::btree_map(mq(), any::<i64>(), 0..5)
}

fn finite() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |f| f.is_finite())
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
        finite().prop_map(Value::from),
        text().prop_map(Value::from),
    ]
}

prop_compose! {
    fn route()(
        order_topic_conf in prop::option::of(text()),
        queue_datas in prop::collection::vec(
            (text(), 0..=MAX_QUEUES_PER_BROKER, 0..=MAX_QUEUES_PER_BROKER, any::<i32>(), any::<i32>()).prop_map(
                |(broker_name, read_queue_nums, write_queue_nums, perm, topic_sys_flag)| QueueData {
                    broker_name, read_queue_nums, write_queue_nums, perm, topic_sys_flag,
                },
            ),
            0..4,
        ),
        broker_datas in prop::collection::vec(
            (
                text(),
                text(),
                prop::collection::btree_map(any::<i64>(), text(), 0..4),
                prop::option::of(text()),
                any::<bool>(),
            )
                .prop_map(|(cluster, broker_name, broker_addrs, zone_name, enable_acting_master)| {
                    BrokerData { cluster, broker_name, broker_addrs, zone_name, enable_acting_master }
                }),
            0..4,
        ),
        filter_server_table in prop::collection::btree_map(text(), prop::collection::vec(text(), 0..3), 0..3),
        topic_queue_mapping_by_broker in prop::collection::btree_map(text(), json_leaf(), 0..3),
    ) -> TopicRouteData {
        TopicRouteData {
            order_topic_conf, queue_datas, broker_datas, filter_server_table,
            topic_queue_mapping_by_broker,
        }
    }
}

prop_compose! {
    fn subscription()(
        class_filter_mode in any::<bool>(),
        topic in text(),
        sub_string in text(),
        tags_set in prop::collection::btree_set(text(), 0..4),
        code_set in prop::collection::btree_set(any::<i32>(), 0..4),
        sub_version in any::<i64>(),
        sql in any::<bool>(),
    ) -> SubscriptionData {
        SubscriptionData {
            class_filter_mode, topic, sub_string, tags_set, code_set, sub_version,
            expression_type: if sql { ExpressionType::Sql92 } else { ExpressionType::Tag },
        }
    }
}

fn consume_type() -> impl Strategy<Value = ConsumeType> {
    prop_oneof![
        Just(ConsumeType::Actively),
        Just(ConsumeType::Passively),
        Just(ConsumeType::Pop)
    ]
}

fn message_model() -> impl Strategy<Value = MessageModel> {
    prop_oneof![
        Just(MessageModel::Broadcasting),
        Just(MessageModel::Clustering)
    ]
}

fn consume_from_where() -> impl Strategy<Value = ConsumeFromWhere> {
    prop_oneof![
        Just(ConsumeFromWhere::LastOffset),
        Just(ConsumeFromWhere::LastOffsetAndFromMinWhenBootFirst),
        Just(ConsumeFromWhere::MinOffset),
        Just(ConsumeFromWhere::MaxOffset),
        Just(ConsumeFromWhere::FirstOffset),
        Just(ConsumeFromWhere::Timestamp),
    ]
}

prop_compose! {
    fn heartbeat()(
        client_id in text(),
        producers in prop::collection::vec(text(), 0..3),
        consumers in prop::collection::vec(
            (text(), consume_type(), message_model(), consume_from_where(),
             prop::collection::vec(subscription(), 0..3), any::<bool>()),
            0..3,
        ),
        heartbeat_fingerprint in any::<i32>(),
        without_sub in any::<bool>(),
    ) -> HeartbeatData {
        HeartbeatData {
            client_id,
            producer_data_set: producers.into_iter().map(|group_name| ProducerData { group_name }).collect(),
            consumer_data_set: consumers
                .into_iter()
                .map(|(group_name, consume_type, message_model, consume_from_where, subscription_data_set, unit_mode)| {
                    ConsumerData {
                        group_name, consume_type, message_model, consume_from_where,
                        subscription_data_set, unit_mode,
                    }
                })
                .collect(),
            heartbeat_fingerprint,
            without_sub,
        }
    }
}

prop_compose! {
    fn process_queue_info()(
        longs in prop::array::uniform8(any::<i64>()),
        ints in prop::array::uniform3(any::<i32>()),
        flags in prop::array::uniform2(any::<bool>()),
    ) -> ProcessQueueInfo {
        ProcessQueueInfo {
            commit_offset: longs[0],
            cached_msg_min_offset: longs[1],
            cached_msg_max_offset: longs[2],
            cached_msg_count: ints[0],
            cached_msg_size_in_mib: ints[1],
            transaction_msg_min_offset: longs[3],
            transaction_msg_max_offset: longs[4],
            transaction_msg_count: ints[2],
            locked: flags[0],
            try_unlock_times: longs[5],
            last_lock_timestamp: longs[6],
            dropped: flags[1],
            last_pull_timestamp: longs[7],
            last_consume_timestamp: longs[0].wrapping_add(1),
        }
    }
}

prop_compose! {
    fn consume_status()(rates in prop::array::uniform5(finite()), failed in any::<i64>()) -> ConsumeStatus {
        ConsumeStatus {
            pull_rt: rates[0],
            pull_tps: rates[1],
            consume_rt: rates[2],
            consume_ok_tps: rates[3],
            consume_failed_tps: rates[4],
            consume_failed_msgs: failed,
        }
    }
}

prop_compose! {
    fn running_info()(
        properties in prop::collection::btree_map(text(), text(), 0..4),
        subscription_set in prop::collection::vec(subscription(), 0..3),
        mq_table in prop::collection::btree_map(mq(), process_queue_info(), 0..3),
        mq_pop_table in prop::collection::btree_map(
            mq(),
            (any::<i32>(), any::<bool>(), any::<i64>()).prop_map(|(wait_ack_count, dropped, last_pop_timestamp)| {
                PopProcessQueueInfo { wait_ack_count, dropped, last_pop_timestamp }
            }),
            0..3,
        ),
        status_table in prop::collection::btree_map(text(), consume_status(), 0..3),
        user_consumer_info in prop::collection::btree_map(text(), text(), 0..3),
        jstack in prop::option::of(text()),
    ) -> ConsumerRunningInfo {
        ConsumerRunningInfo {
            properties, subscription_set, mq_table, mq_pop_table, status_table,
            user_consumer_info, jstack,
        }
    }
}

fn consume_result() -> impl Strategy<Value = ConsumeResult> {
    prop_oneof![
        Just(ConsumeResult::Success),
        Just(ConsumeResult::Later),
        Just(ConsumeResult::Rollback),
        Just(ConsumeResult::Commit),
        Just(ConsumeResult::ThrowException),
        Just(ConsumeResult::ReturnNull),
    ]
}

/// `decode(encode(x)) == x` and `decode(serde form of x) == x`.
macro_rules! round_trips {
    ($ty:ty, $value:expr) => {{
        let value: $ty = $value;
        prop_assert_eq!(&<$ty>::decode(&value.encode()).unwrap(), &value);
        let serde_form = serde_json::to_vec(&value).unwrap();
        prop_assert_eq!(&<$ty>::decode(&serde_form).unwrap(), &value);
    }};
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn topic_route_data(route in route()) {
        round_trips!(TopicRouteData, route.clone());
        prop_assert_eq!(TopicRouteData::decode(&route.encode_fastjson()).unwrap(), route);
    }

    #[test]
    fn heartbeat_data(heartbeat in heartbeat()) {
        round_trips!(HeartbeatData, heartbeat);
    }

    #[test]
    fn lock_bodies(group in text(), client in text(), only in any::<bool>(), set in mq_set(), ok in mq_set()) {
        round_trips!(LockBatchRequestBody, LockBatchRequestBody {
            consumer_group: group, client_id: client, only_this_broker: only, mq_set: set,
        });
        round_trips!(LockBatchResponseBody, LockBatchResponseBody { lock_ok_mq_set: ok });
    }

    #[test]
    fn consumer_list(ids in prop::collection::vec(text(), 0..5)) {
        round_trips!(ConsumerListBody, ConsumerListBody { consumer_id_list: ids });
    }

    #[test]
    fn reset_offset(table in offsets()) {
        let body = ResetOffsetBody { offset_table: table };
        round_trips!(ResetOffsetBody, body.clone());
        prop_assert_eq!(ResetOffsetBody::decode(&body.encode_for_c()).unwrap(), body);
    }

    #[test]
    fn offset_table(table in offsets()) {
        round_trips!(OffsetTable, OffsetTable { offset_table: table });
    }

    #[test]
    fn consumer_status(table in offsets(), clients in prop::collection::btree_map(text(), offsets(), 0..3)) {
        round_trips!(GetConsumerStatusBody, GetConsumerStatusBody {
            message_queue_table: table, consumer_table: clients,
        });
    }

    #[test]
    fn consumer_running_info(info in running_info()) {
        round_trips!(ConsumerRunningInfo, info);
    }

    #[test]
    fn check_client(client_id in text(), group in text(), sub in subscription(), namespace in prop::option::of(text())) {
        round_trips!(CheckClientRequestBody, CheckClientRequestBody {
            client_id, group, subscription_data: sub, namespace,
        });
    }

    #[test]
    fn consume_directly(
        order in any::<bool>(),
        auto_commit in any::<bool>(),
        consume_result in prop::option::of(consume_result()),
        remark in prop::option::of(text()),
        spent_time_mills in any::<i64>(),
    ) {
        round_trips!(ConsumeMessageDirectlyResult, ConsumeMessageDirectlyResult {
            order, auto_commit, consume_result, remark, spent_time_mills,
        });
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = TopicRouteData::decode(&bytes);
        let _ = HeartbeatData::decode(&bytes);
        let _ = ResetOffsetBody::decode(&bytes);
        let _ = ConsumerRunningInfo::decode(&bytes);
        let _ = GetConsumerStatusBody::decode(&bytes);
        let _ = OffsetTable::decode(&bytes);
    }

    #[test]
    fn decoding_body_like_text_never_panics(
        text in r#"[\[\]{}:,"0-9 ]{0,16}(\{"offsetTable":|\{"brokerDatas":\[\{"brokerAddrs":|\{"mqTable":)[\[\]{}:,"0-9a-zA-Z ]{0,64}"#,
    ) {
        let _ = TopicRouteData::decode(text.as_bytes());
        let _ = ResetOffsetBody::decode(text.as_bytes());
        let _ = ConsumerRunningInfo::decode(text.as_bytes());
    }
}
