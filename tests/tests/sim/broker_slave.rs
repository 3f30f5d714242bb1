//! A simulated broker's slave (4.9, `brokerRole=SLAVE`, `slaveReadEnable=true`): listed in the
//! route as broker id 1 while it is up, alone when its master is down; a copy of its master's
//! messages a lag behind, which stops while the master is down; pulls served without offset
//! corrections (an offset it lacks is `PULL_RETRY_IMMEDIATELY` at that offset, suggesting the
//! master), the commit bit ignored, and a consumer that keeps up sent back to the master; long
//! polls woken by the 5 s check, not by copies; writes refused; members, offsets and locks of
//! its own, its offsets replaced by the master's every 10 s while the master is up; and the
//! slave suggested (id 1) to a pull reading farther back than fits in memory.

use std::time::Duration;

use proto::headers::{PullMessageResponse, SendMessageRequestV2, pull_sys_flag};
use proto::message::{DecodeOptions, decode_messages};
use proto::{Command, MessageQueue, RequestCode, ResponseCode};
use rocketmq_tests::sim::Role;
use rocketmq_tests::sim::harness::{
    Harness, heartbeat_request, lock_request, pull_header, pull_request, query_offset_request,
    send_back_request, update_offset_request,
};

/// A client connection to broker-a's master.
const M: u64 = 1;
/// A client connection to broker-a's slave.
const S: u64 = 2;
const SLAVE: &str = "broker-a-s:10911";

/// broker-a with a slave copying 100 ms behind, topic `T` (2 queues), and a member of group `g`
/// registered on both nodes.
fn setup() -> (Harness, MessageQueue) {
    let mut h = Harness::new(|mut c| {
        c.slaves = vec!["broker-a".into()];
        c.replication_lag = Duration::from_millis(100);
        c
    });
    h.cluster.create_topic("T", 2);
    h.connect(M, "broker-a:10911");
    h.connect(S, SLAVE);
    for conn in [M, S] {
        h.call(conn, heartbeat_request("c1", "g", &[("T", "*")], 1));
        h.take_requests(conn);
    }
    (h, MessageQueue::new("T", "broker-a", 0))
}

fn header(response: &Command) -> PullMessageResponse {
    response.header().expect("pull response header")
}

/// A plain pull of `q` at `offset` without the suspend bit, on `conn`.
fn pull_now(h: &mut Harness, conn: u64, q: &MessageQueue, offset: i64) -> Command {
    let mut pull = pull_header("g", q, offset);
    pull.sys_flag = 0;
    h.call(conn, pull_request(&pull))
}

#[test]
fn a_slave_is_in_the_route_as_id_1_while_it_is_up() {
    let (mut h, _) = setup();
    let addrs = |h: &Harness| {
        h.cluster.route("T").map(|route| {
            let a = route
                .broker_datas
                .iter()
                .find(|b| b.broker_name == "broker-a")
                .map(|b| b.broker_addrs.clone());
            (route.subscribe_queues("T").len(), a)
        })
    };
    let both = [(0, "broker-a:10911".to_owned()), (1, SLAVE.to_owned())].into();
    assert_eq!(addrs(&h), Some((4, Some(both))));
    assert_eq!(h.cluster.slave_addr("broker-a").as_deref(), Some(SLAVE));
    assert_eq!(h.cluster.slave_addr("broker-b"), None);

    // Each node has its own members: the heartbeats of `setup` registered c1 on both.
    assert_eq!(h.cluster.members_on("broker-a", Role::Slave, "g"), ["c1"]);
    assert_eq!(h.cluster.members("broker-a", "g"), ["c1"]);

    // The master down: the slave alone, the master's queues kept, and its members.
    h.cluster.set_broker_down("broker-a", true);
    assert!(h.cluster.members("broker-a", "g").is_empty());
    assert_eq!(h.cluster.members_on("broker-a", Role::Slave, "g"), ["c1"]);
    assert_eq!(
        addrs(&h),
        Some((4, Some([(1, SLAVE.to_owned())].into()))),
        "the slave alone"
    );
    assert!(!h.cluster.connect(9, "broker-a:10911"));
    assert!(h.cluster.connect(9, SLAVE));

    // Both down: broker-a leaves the route.
    h.cluster.set_slave_down("broker-a", true);
    assert_eq!(addrs(&h), Some((2, None)));
    h.collect();
    assert!(
        h.take_closed().contains(&S),
        "the slave's connections close"
    );

    h.cluster.set_broker_down("broker-a", false);
    h.cluster.set_slave_down("broker-a", false);
    assert_eq!(
        addrs(&h).and_then(|(_, a)| a).map(|a| a.len()),
        Some(2),
        "both back"
    );
}

#[test]
fn a_slave_copies_its_master_a_lag_behind_and_not_while_it_is_down() {
    let (mut h, q) = setup();
    h.produce("T", "broker-a", 0, "m0", None);
    assert_eq!(h.cluster.slave_max_offset(&q), 0);
    h.advance(Duration::from_millis(99));
    assert_eq!(h.cluster.slave_max_offset(&q), 0, "not before the lag");
    h.advance(Duration::from_millis(1));
    assert_eq!(h.cluster.slave_max_offset(&q), 1);

    // Stored, then the master is lost before its slave has it: it stays on the master.
    h.produce("T", "broker-a", 0, "m1", None);
    h.cluster.set_broker_down("broker-a", true);
    h.advance(Duration::from_secs(60));
    assert_eq!(h.cluster.slave_max_offset(&q), 1);

    // Back: the copy resumes where it stood, the same bytes at the same offsets.
    h.cluster.set_broker_down("broker-a", false);
    h.advance(Duration::from_millis(1));
    assert_eq!(h.cluster.slave_max_offset(&q), 2);
    let response = pull_now(&mut h, S, &q, 0);
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let on_master: Vec<u8> = h
        .cluster
        .messages(&q)
        .flat_map(|(_, m)| m.record().to_vec())
        .collect();
    assert_eq!(response.body.as_ref(), on_master.as_slice());
    let from_slave = decode_messages(&response.body, &DecodeOptions::default()).messages;
    assert_eq!(from_slave.len(), 2);
}

#[test]
fn a_slave_serves_pulls_without_correcting_offsets() {
    let (mut h, q) = setup();
    for i in 0..3 {
        h.produce("T", "broker-a", 0, &format!("m{i}"), None);
    }
    h.advance(Duration::from_secs(1));

    let response = pull_now(&mut h, S, &q, 1);
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let found = header(&response);
    assert_eq!(
        (found.next_begin_offset, found.max_offset),
        (3, 3),
        "{response:?}"
    );
    assert_eq!(
        found.suggest_which_broker_id, 0,
        "a consumer that keeps up is sent back to the master"
    );

    // Past its end: no correction, retry at the same offset, from the master.
    let response = pull_now(&mut h, S, &q, 7);
    assert_eq!(
        response.response_code(),
        ResponseCode::PULL_RETRY_IMMEDIATELY
    );
    assert_eq!(response.remark.as_deref(), Some("OFFSET_OVERFLOW_BADLY"));
    let header_past = header(&response);
    assert_eq!(
        (
            header_past.next_begin_offset,
            header_past.suggest_which_broker_id
        ),
        (7, 0)
    );
    // The master moves the same pull.
    let response = pull_now(&mut h, M, &q, 7);
    assert_eq!(response.response_code(), ResponseCode::PULL_OFFSET_MOVED);
    assert_eq!(header(&response).next_begin_offset, 3);

    // The commit bit is ignored on the slave, applied on the master.
    let mut pull = pull_header("g", &q, 3);
    pull.sys_flag = pull_sys_flag::COMMIT_OFFSET;
    pull.commit_offset = 3;
    h.call(S, pull_request(&pull));
    assert_eq!(h.cluster.committed_offset_on(Role::Slave, "g", &q), None);
    h.call(M, pull_request(&pull));
    assert_eq!(h.cluster.committed_offset("g", &q), Some(3));
}

#[test]
fn a_slaves_long_poll_is_answered_by_the_check_not_by_a_copy() {
    let (mut h, q) = setup();
    let opaque = h.send(S, pull_request(&pull_header("g", &q, 0)));
    assert_eq!(h.cluster.held_pulls_on("broker-a", Role::Slave), 1);
    h.produce("T", "broker-a", 0, "m0", None);
    h.advance(Duration::from_millis(200));
    assert_eq!(h.cluster.slave_max_offset(&q), 1, "copied");
    assert!(h.take_response(S, opaque).is_none(), "a copy wakes no pull");
    h.advance(Duration::from_secs(5));
    let response = h.take_response(S, opaque).expect("the check answers it");
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
}

#[test]
fn a_slave_refuses_sends_and_send_backs() {
    let (mut h, q) = setup();
    h.produce("T", "broker-a", 0, "m0", None);
    h.advance(Duration::from_secs(1));
    let send = SendMessageRequestV2 {
        producer_group: "p".into(),
        topic: "T".into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: 1,
        flag: 0,
        properties: None,
        reconsume_times: None,
        unit_mode: None,
        max_reconsume_times: None,
        batch: None,
        broker_name: None,
    };
    let response = h.call(
        S,
        Command::request(RequestCode::SEND_MESSAGE_V2, &send).with_body("x"),
    );
    assert_eq!(
        response.response_code(),
        ResponseCode::SERVICE_NOT_AVAILABLE
    );
    let (_, stored) = h.cluster.messages(&q).next().expect("m0");
    let offset = stored.commit_log_offset;
    let response = h.call(S, send_back_request("g", offset, 0, 16));
    assert_eq!(response.response_code(), ResponseCode::SYSTEM_ERROR);
    assert_eq!(response.remark.as_deref(), Some("SERVICE_NOT_AVAILABLE"));
    assert_eq!(h.cluster.max_offset(&q), 1, "nothing stored");
    let response = h.call(M, send_back_request("g", offset, 0, 16));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
}

#[test]
fn a_slave_keeps_its_own_offsets_until_the_master_syncs_them() {
    let (mut h, q) = setup();
    let other = MessageQueue::new("T", "broker-a", 1);
    h.advance(Duration::from_secs(4)); // past the first sync, 3 s after start
    h.call(M, update_offset_request("g", &q, 5));
    h.cluster.set_broker_down("broker-a", true);

    // Commits to the slave while the master is down stay there, syncs failing.
    h.call(S, update_offset_request("g", &q, 9));
    h.call(S, update_offset_request("g", &other, 4));
    h.advance(Duration::from_secs(60));
    let query = h.call(S, query_offset_request("g", &q));
    assert_eq!(query.response_code(), ResponseCode::SUCCESS);
    assert_eq!(h.cluster.committed_offset_on(Role::Slave, "g", &q), Some(9));

    // The master is back: the next sync replaces the slave's table of `T@g` by the master's,
    // which never heard of those commits.
    h.cluster.set_broker_down("broker-a", false);
    h.advance(Duration::from_secs(10));
    assert_eq!(h.cluster.committed_offset_on(Role::Slave, "g", &q), Some(5));
    assert_eq!(
        h.cluster.committed_offset_on(Role::Slave, "g", &other),
        None,
        "Java's putAll replaces T@g's whole table"
    );
}

#[test]
fn a_slave_grants_locks_of_its_own() {
    let (mut h, q) = setup();
    let locked = h.call(M, lock_request("g", "c1", std::slice::from_ref(&q)));
    assert_eq!(locked.response_code(), ResponseCode::SUCCESS);
    // 4.9's `lockBatchMQ` checks no role: the slave's table knows nothing of the master's.
    let on_slave = h.call(S, lock_request("g", "c2", std::slice::from_ref(&q)));
    assert_eq!(on_slave.response_code(), ResponseCode::SUCCESS);
    let now = h.now;
    assert_eq!(
        h.cluster
            .lock_owner_on(Role::Slave, "g", &q, now)
            .as_deref(),
        Some("c2")
    );
    assert_eq!(h.cluster.lock_owner("g", &q, now).as_deref(), Some("c1"));
}

#[test]
fn a_pull_far_behind_is_suggested_the_slave() {
    let mut h = Harness::new(|mut c| {
        c.slaves = vec!["broker-a".into()];
        c.in_memory_bytes = Some(1000);
        c
    });
    h.cluster.create_topic("T", 1);
    let q = MessageQueue::new("T", "broker-a", 0);
    for conn_addr in [(M, "broker-a:10911"), (S, SLAVE)] {
        h.connect(conn_addr.0, conn_addr.1);
        h.call(conn_addr.0, heartbeat_request("c1", "g", &[("T", "*")], 1));
    }
    for i in 0..40 {
        h.produce("T", "broker-a", 0, &format!("message {i:04}"), None);
    }
    h.advance(Duration::from_secs(1));
    for conn in [M, S] {
        let mut pull = pull_header("g", &q, 0);
        pull.sys_flag = 0;
        pull.max_msg_nums = 1;
        let behind = h.call(conn, pull_request(&pull));
        assert_eq!(header(&behind).suggest_which_broker_id, 1, "{conn}");
        pull.queue_offset = 39;
        let close = h.call(conn, pull_request(&pull));
        assert_eq!(header(&close).suggest_which_broker_id, 0, "{conn}");
    }
    // Without a slave, always the master.
    let mut h = Harness::new(|mut c| {
        c.in_memory_bytes = Some(1000);
        c
    });
    h.cluster.create_topic("T", 1);
    h.connect(M, "broker-a:10911");
    h.call(M, heartbeat_request("c1", "g", &[("T", "*")], 1));
    for i in 0..40 {
        h.produce("T", "broker-a", 0, &format!("message {i:04}"), None);
    }
    let response = pull_now(&mut h, M, &q, 0);
    assert_eq!(header(&response).suggest_which_broker_id, 0);
}
