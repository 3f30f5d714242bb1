//! The consumer-side requests other than pull, against the real broker: consumer list after a
//! heartbeat, committed offsets (update, then query), queue offset bounds and search by time,
//! and queue locks (granted to one client, refused to another until unlocked).

use proto::body::{ConsumerListBody, LockBatchRequestBody, LockBatchResponseBody};
use proto::headers::{
    GetConsumerListByGroupRequest, GetMaxOffsetRequest, GetMaxOffsetResponse, GetMinOffsetRequest,
    GetMinOffsetResponse, LockBatchMqRequest, QueryConsumerOffsetRequest,
    QueryConsumerOffsetResponse, SearchOffsetRequest, SearchOffsetResponse, UnlockBatchMqRequest,
    UpdateConsumerOffsetRequest,
};
use proto::message::OutgoingMessage;
use proto::{Command, MessageQueue, RequestCode, ResponseCode};
use rmq_cli::blocking::BlockingClient;
use rocketmq_tests::{
    TIMEOUT, any_broker, broker_impl, call, create_topic, heartbeat, master_of, namesrv,
    send_header, unique,
};

#[test]
fn offsets_membership_and_locks() {
    let ns = namesrv();
    let seed_broker = any_broker(&ns);
    let topic = unique("codec-offsets");
    let route = create_topic(&ns, &seed_broker, &topic, 2);
    let broker_name = route.queue_datas[0].broker_name.clone();
    let broker = master_of(&route, &broker_name);
    let group = unique("codec-offsets-group");
    let me = "127.0.0.1@codec-offsets-a";
    let other = "127.0.0.1@codec-offsets-b";

    for i in 0..5 {
        let mut message = OutgoingMessage::new(topic.clone(), format!("m{i}"));
        message.set_tags("t");
        let header = send_header(&topic, 1, 0, message.encoded_properties());
        let response = call(
            &broker,
            Command::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(format!("m{i}")),
        );
        assert_eq!(
            response.response_code(),
            ResponseCode::SUCCESS,
            "{response:?}"
        );
    }

    // The broker forgets a member when its connection closes: keep this one open.
    let mut member = BlockingClient::connect(&broker, TIMEOUT).expect("connect to the broker");
    heartbeat(&mut member, me, &group, &topic, "*");
    let response = member
        .call(
            Command::request(
                RequestCode::GET_CONSUMER_LIST_BY_GROUP,
                &GetConsumerListByGroupRequest {
                    consumer_group: group.clone(),
                },
            ),
            TIMEOUT,
        )
        .expect("consumer list");
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    let members = ConsumerListBody::decode(&response.body).expect("consumer list body");
    assert!(
        members.consumer_id_list.iter().any(|id| id == me),
        "{members:?}"
    );

    let max: GetMaxOffsetResponse = call(
        &broker,
        Command::request(
            RequestCode::GET_MAX_OFFSET,
            &GetMaxOffsetRequest {
                topic: topic.clone(),
                queue_id: 1,
                committed: Some(true),
            },
        ),
    )
    .header()
    .expect("max offset header");
    assert_eq!(max.offset, 5);
    let min: GetMinOffsetResponse = call(
        &broker,
        Command::request(
            RequestCode::GET_MIN_OFFSET,
            &GetMinOffsetRequest {
                topic: topic.clone(),
                queue_id: 1,
            },
        ),
    )
    .header()
    .expect("min offset header");
    assert_eq!(min.offset, 0);
    let search = call(
        &broker,
        Command::request(
            RequestCode::SEARCH_OFFSET_BY_TIMESTAMP,
            &SearchOffsetRequest {
                topic: topic.clone(),
                queue_id: 1,
                timestamp: 0,
                boundary_type: None,
            },
        ),
    );
    assert_eq!(search.response_code(), ResponseCode::SUCCESS, "{search:?}");
    let found: SearchOffsetResponse = search.header().expect("search header");
    assert_eq!(found.offset, 0, "time 0 is before every message");

    // Commits `offset` for queue 1, then reads back what the broker holds.
    let commit_then_query = |offset: i64| -> i64 {
        let update = UpdateConsumerOffsetRequest {
            consumer_group: group.clone(),
            topic: topic.clone(),
            queue_id: 1,
            commit_offset: offset,
        };
        let response = call(
            &broker,
            Command::request(RequestCode::UPDATE_CONSUMER_OFFSET, &update),
        );
        assert_eq!(
            response.response_code(),
            ResponseCode::SUCCESS,
            "{response:?}"
        );
        let query = QueryConsumerOffsetRequest {
            consumer_group: group.clone(),
            topic: topic.clone(),
            queue_id: 1,
            set_zero_if_not_found: None,
        };
        let committed: QueryConsumerOffsetResponse = call(
            &broker,
            Command::request(RequestCode::QUERY_CONSUMER_OFFSET, &query),
        )
        .header()
        .expect("query offset header");
        committed.offset
    };
    assert_eq!(commit_then_query(3), 3);

    // A commit below the stored offset (a reset, a seek back): Apache's brokers store it, the
    // Rust broker 1.0 keeps the higher one (README, Compatibility).
    let stored = commit_then_query(1);
    let expected = if broker_impl().is_java() { 1 } else { 3 };
    assert_eq!(stored, expected, "after committing 1 over 3");

    let queue = MessageQueue::new(&topic, &broker_name, 0);
    let lock = |client: &str| -> Vec<MessageQueue> {
        let body = LockBatchRequestBody::new(&group, client, [queue.clone()]);
        let response = call(
            &broker,
            Command::request(RequestCode::LOCK_BATCH_MQ, &LockBatchMqRequest {})
                .with_body(body.encode()),
        );
        assert_eq!(
            response.response_code(),
            ResponseCode::SUCCESS,
            "{response:?}"
        );
        LockBatchResponseBody::decode(&response.body)
            .expect("lock response body")
            .lock_ok_mq_set
            .into_iter()
            .collect()
    };
    assert_eq!(lock(me), vec![queue.clone()], "a free queue is granted");
    assert_eq!(
        lock(other),
        vec![],
        "a held queue is refused to another client"
    );
    let unlock = LockBatchRequestBody::new(&group, me, [queue.clone()]);
    let response = call(
        &broker,
        Command::request(RequestCode::UNLOCK_BATCH_MQ, &UnlockBatchMqRequest {})
            .with_body(unlock.encode()),
    );
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    assert_eq!(
        lock(other),
        vec![queue],
        "an unlocked queue is granted to the next client"
    );
}
