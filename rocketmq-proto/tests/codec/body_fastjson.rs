//! Bodies in the shapes fastjson (Java brokers, name servers and tools) and other clients write
//! decode to the same values as standard JSON: unquoted integer map keys (name servers before
//! 4.9.4), `MessageQueue` objects as map keys, the pre-4.9.0 `topicSynFlag` spelling, explicit
//! nulls, members this codec does not know, the C and "gson" reset-offset shapes, and
//! BrowserCompatible `\uXXXX` escapes.

use std::collections::BTreeMap;

use rocketmq_proto::MessageQueue;
use rocketmq_proto::body::{
    ConsumeFromWhere, ConsumeType, ConsumerRunningInfo, ExpressionType, GetConsumerStatusBody,
    HeartbeatData, LockBatchRequestBody, LockBatchResponseBody, MessageModel, OffsetTable,
    ResetOffsetBody, TopicRouteData,
};
use rocketmq_proto::json;

/// What a 4.x Java name server answers a client that did not ask for standard JSON: fastjson's
/// sorted members, unquoted broker ids, and the pre-4.9.0 `topicSynFlag`.
const OLD_NAME_SERVER_ROUTE: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},{"brokerAddrs":{1:"10.0.0.4:10911"},"brokerName":"broker-b","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSynFlag":0,"writeQueueNums":2},{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSynFlag":3,"writeQueueNums":4}]}"#;

#[test]
fn route_with_unquoted_broker_ids_and_topic_syn_flag() {
    let route = TopicRouteData::decode(OLD_NAME_SERVER_ROUTE.as_bytes()).unwrap();
    let a = route.broker("broker-a").unwrap();
    assert_eq!(
        a.broker_addrs.get(&0).map(String::as_str),
        Some("10.0.0.1:10911")
    );
    assert_eq!(
        a.broker_addrs.get(&1).map(String::as_str),
        Some("10.0.0.2:10911")
    );
    assert_eq!(
        route.queue_datas[1].topic_sys_flag, 3,
        "read from topicSynFlag"
    );
    assert_eq!(route.subscribe_queues("T").len(), 6);
    // broker-b has no master: consumers may read it, producers may not write it.
    let publish = route.publish_queues("T");
    assert_eq!(publish.len(), 4);
    assert!(publish.iter().all(|q| q.broker_name() == "broker-a"));
    assert_eq!(route.master_addr("broker-b"), None);
    assert_eq!(
        route.broker("broker-b").unwrap().master_or_any_addr(),
        Some("10.0.0.4:10911")
    );

    // Quoted ids (name servers >= 4.9.4) give the same route.
    let quoted = OLD_NAME_SERVER_ROUTE
        .replace("{0:", "{\"0\":")
        .replace(",1:", ",\"1\":")
        .replace("{1:", "{\"1\":");
    assert_eq!(TopicRouteData::decode(quoted.as_bytes()).unwrap(), route);
}

#[test]
fn route_sys_flag_wins_over_syn_flag() {
    let route = TopicRouteData::decode(
        br#"{"queueDatas":[{"brokerName":"b","topicSynFlag":1,"topicSysFlag":2}]}"#,
    )
    .unwrap();
    assert_eq!(route.queue_datas[0].topic_sys_flag, 2);
}

#[test]
fn route_with_nulls_and_unknown_members() {
    let body = br#"{
        "orderTopicConf": null, "queueDatas": null, "filterServerTable": null,
        "brokerDatas": [{"cluster": null, "brokerName": "b", "brokerAddrs": {0: "h:1"},
                         "zoneName": null, "enableActingMaster": null, "newIn6x": {"x": [1, 2]}}],
        "topicQueueMappingByBroker": null, "futureMember": 12345678901234567890
    }"#;
    let route = TopicRouteData::decode(body).unwrap();
    assert!(route.queue_datas.is_empty());
    assert_eq!(route.broker_datas[0].cluster, "");
    assert!(!route.broker_datas[0].enable_acting_master);
    assert_eq!(route.master_addr("b"), Some("h:1"));
}

#[test]
fn route_with_order_topic_conf() {
    let route = TopicRouteData::decode(
        br#"{"orderTopicConf":"broker-b:2;broker-a:1","queueDatas":[],"brokerDatas":[]}"#,
    )
    .unwrap();
    assert!(route.is_order_topic());
    assert_eq!(
        route.publish_queues("T"),
        vec![
            MessageQueue::new("T", "broker-b", 0),
            MessageQueue::new("T", "broker-b", 1),
            MessageQueue::new("T", "broker-a", 0),
        ]
    );
}

#[test]
fn cluster_info_reads_as_a_value() {
    // GET_BROKER_CLUSTER_INFO never uses standard JSON (`remoting-protocol.md` §3.18).
    let body = br#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"c"}},"clusterAddrTable":{"c":["broker-a"]}}"#;
    let value = json::parse(body).unwrap();
    assert_eq!(
        value["brokerAddrTable"]["broker-a"]["brokerAddrs"]["0"],
        json::Value::from("10.0.0.1:10911")
    );
}

fn reset_expected() -> BTreeMap<MessageQueue, i64> {
    [
        (MessageQueue::new("T", "broker-a", 0), 100),
        (MessageQueue::new("T", "broker-a", 1), 7),
    ]
    .into()
}

#[test]
fn reset_offset_with_object_keys() {
    // As a Java broker writes it; key members in fastjson's alphabetical order.
    let body = br#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:100,{"brokerName":"broker-a","queueId":1,"topic":"T"}:7}}"#;
    assert_eq!(
        ResetOffsetBody::decode(body).unwrap().offset_table,
        reset_expected()
    );
    // Any member order and whitespace inside the key object.
    let body =
        br#"{"offsetTable":{ { "topic" : "T" , "queueId" : 1 , "brokerName" : "broker-a" } : 7 ,
        {"queueId":0,"topic":"T","brokerName":"broker-a"}:100 }}"#;
    assert_eq!(
        ResetOffsetBody::decode(body).unwrap().offset_table,
        reset_expected()
    );
}

#[test]
fn reset_offset_in_c_and_gson_shapes() {
    let c = br#"{"offsetTable":[{"brokerName":"broker-a","offset":100,"queueId":0,"topic":"T"},{"topic":"T","brokerName":"broker-a","queueId":1,"offset":7}]}"#;
    assert_eq!(
        ResetOffsetBody::decode(c).unwrap().offset_table,
        reset_expected()
    );
    let gson = br#"{"offsetTable":[[{"brokerName":"broker-a","queueId":0,"topic":"T"},100],[{"brokerName":"broker-a","queueId":1,"topic":"T"},7]]}"#;
    assert_eq!(
        ResetOffsetBody::decode(gson).unwrap().offset_table,
        reset_expected()
    );
    let empty = ResetOffsetBody::decode(br#"{"offsetTable":null}"#).unwrap();
    assert!(empty.offset_table.is_empty());
}

#[test]
fn reset_offset_with_bad_keys_is_an_error() {
    let e = ResetOffsetBody::decode(br#"{"offsetTable":{0:100}}"#).unwrap_err();
    assert!(e.to_string().contains("is not a MessageQueue"), "{e}");
    let e = ResetOffsetBody::decode(br#"{"offsetTable":[{"topic":"T"}]}"#).unwrap_err();
    assert!(e.to_string().contains("offset entry"), "{e}");
    let e = ResetOffsetBody::decode(
        br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:"x"}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("invalid type"), "{e}");
}

#[test]
fn java_offsets_file() {
    // fastjson's pretty printer: tabs and newlines everywhere, including inside object keys.
    let file = "{\n\t\"offsetTable\":{{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":0,\n\t\t\t\"topic\":\"T\"\n\t\t}:100,{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":1,\n\t\t\t\"topic\":\"T\"\n\t\t}:7\n\t}\n}";
    let table = OffsetTable::decode(file.as_bytes()).unwrap();
    assert_eq!(table.offset_table, reset_expected());
}

#[test]
fn heartbeat_from_a_java_4_9_client() {
    // 4.9.x has no heartbeatFingerprint/withoutSub; codeSet values may be negative; Java sets
    // serialize in hash order; a BrowserCompatible writer escapes non-ASCII.
    let body = r#"{"clientID":"10.0.0.5@12345#1234567890123","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_ACTIVELY","groupName":"g","messageModel":"BROADCASTING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[857175,-1],"expressionType":"TAG","subString":"\u6807\u7b7e || x","subVersion":1718000000000,"tagsSet":["x","\u6807\u7b7e"],"topic":"T","filterClassSource":null}],"unitMode":false}],"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}"#;
    let heartbeat = HeartbeatData::decode(body.as_bytes()).unwrap();
    assert_eq!(heartbeat.heartbeat_fingerprint, 0);
    assert!(!heartbeat.without_sub);
    let consumer = &heartbeat.consumer_data_set[0];
    assert_eq!(consumer.consume_type, ConsumeType::Actively);
    assert_eq!(consumer.message_model, MessageModel::Broadcasting);
    assert_eq!(consumer.consume_from_where, ConsumeFromWhere::FirstOffset);
    let sub = &consumer.subscription_data_set[0];
    assert_eq!(sub.sub_string, "标签 || x");
    assert!(sub.tags_set.contains("标签"));
    assert!(sub.code_set.contains(&-1));
    assert_eq!(sub.expression_type, ExpressionType::Tag);
    assert_eq!(sub.sub_version, 1_718_000_000_000);
}

#[test]
fn subscription_without_expression_type_is_tag() {
    let heartbeat = HeartbeatData::decode(
        br#"{"consumerDataSet":[{"subscriptionDataSet":[{"topic":"T","expressionType":null}]}]}"#,
    )
    .unwrap();
    assert_eq!(
        heartbeat.consumer_data_set[0].subscription_data_set[0].expression_type,
        ExpressionType::Tag
    );
}

#[test]
fn lock_bodies_with_unknown_members() {
    let request = LockBatchRequestBody::decode(
        br#"{"consumerGroup":"g","clientId":"c","mqSet":[{"brokerName":"b","queueId":3,"topic":"T","extra":1}]}"#,
    )
    .unwrap();
    assert!(!request.only_this_broker, "absent in 4.x requests");
    assert!(request.mq_set.contains(&MessageQueue::new("T", "b", 3)));
    let response =
        LockBatchResponseBody::decode(br#"{"lockOKMQSet":[],"serializeTypeCurrentRPC":"JSON"}"#)
            .unwrap();
    assert!(response.lock_ok_mq_set.is_empty());
}

#[test]
fn running_info_as_a_java_client_writes_it() {
    let body = br#"{"jstack":"\"main\" ...","mqTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"cachedMsgCount":2,"cachedMsgMaxOffset":11,"cachedMsgMinOffset":10,"cachedMsgSizeInMiB":0,"commitOffset":10,"droped":false,"lastConsumeTimestamp":1718000000000,"lastLockTimestamp":0,"lastPullTimestamp":1718000000001,"locked":false,"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,"tryUnlockTimes":0}},"properties":{"PROP_CONSUMEORDERLY":"false","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","consumeThreadMin":"20"},"statusTable":{"T":{"consumeFailedMsgs":0,"consumeFailedTPS":0.0,"consumeOKTPS":12.5,"consumeRT":3.0,"pullRT":1.25,"pullTPS":12.5}},"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"T"}]}"#;
    let info = ConsumerRunningInfo::decode(body).unwrap();
    let queue = &info.mq_table[&MessageQueue::new("T", "broker-a", 0)];
    assert_eq!(queue.commit_offset, 10);
    assert_eq!(queue.cached_msg_count, 2);
    assert_eq!(queue.last_pull_timestamp, 1_718_000_000_001);
    assert_eq!(info.status_table["T"].pull_rt, 1.25);
    assert_eq!(
        info.properties[ConsumerRunningInfo::PROP_CONSUME_TYPE],
        "CONSUME_PASSIVELY"
    );
    assert!(info.subscription_set[0].is_sub_all());
    assert_eq!(info.jstack.as_deref(), Some("\"main\" ..."));
    assert_eq!(ConsumerRunningInfo::decode(&info.encode()).unwrap(), info);
}

#[test]
fn consumer_status_with_string_keys_from_a_non_java_writer() {
    // A writer that quotes the key objects' JSON text is read like fastjson's object keys.
    let body = br#"{"messageQueueTable":{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}":4},"consumerTable":{}}"#;
    let status = GetConsumerStatusBody::decode(body).unwrap();
    assert_eq!(
        status.message_queue_table[&MessageQueue::new("T", "b", 0)],
        4
    );
}

/// Found by the `route_json` fuzz target: a garbled queue count made `subscribe_queues`
/// allocate millions of queues. Counts outside 0..=65536 are refused at decode.
#[test]
fn absurd_queue_counts_are_refused() {
    for count in ["8443772", "-1"] {
        let body = format!(
            r#"{{"queueDatas":[{{"brokerName":"b","readQueueNums":{count},"writeQueueNums":8,"perm":6}}],"brokerDatas":[]}}"#
        );
        let err = TopicRouteData::decode(body.as_bytes()).expect_err("refused");
        assert!(err.to_string().contains("readQueueNums"), "{err}");
    }
}
