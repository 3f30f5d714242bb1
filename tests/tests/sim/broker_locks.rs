//! Queue locks on a simulated broker: `LOCK_BATCH_MQ` grants free queues and the caller's own,
//! refuses queues another client holds until that lock is 60 s old, and `UNLOCK_BATCH_MQ`
//! releases only the caller's; locks outlive the client's connection but not a broker restart,
//! which also forgets every member.

use std::collections::BTreeSet;
use std::time::Duration;

use proto::body::LockBatchResponseBody;
use proto::{Command, MessageQueue, ResponseCode};
use rocketmq_tests::sim::harness::{Harness, heartbeat_request, lock_request, unlock_request};

const C1: u64 = 1;
const C2: u64 = 2;

fn granted(response: &Command) -> BTreeSet<MessageQueue> {
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    LockBatchResponseBody::decode(&response.body)
        .expect("lock response body")
        .lock_ok_mq_set
}

fn queues() -> Vec<MessageQueue> {
    (0..3)
        .map(|i| MessageQueue::new("T", "broker-a", i))
        .collect()
}

#[test]
fn locks_are_exclusive_until_they_expire() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 3);
    h.connect(C1, "broker-a:10911");
    h.connect(C2, "broker-a:10911");
    let qs = queues();

    let got = granted(&h.call(C1, lock_request("g", "c1", &qs[..2])));
    assert_eq!(got, qs[..2].iter().cloned().collect());
    assert_eq!(
        h.cluster.lock_owner("g", &qs[0], h.now).as_deref(),
        Some("c1")
    );

    // c2 gets only the free one; another group is independent.
    let got = granted(&h.call(C2, lock_request("g", "c2", &qs)));
    assert_eq!(got, [qs[2].clone()].into());
    let got = granted(&h.call(C2, lock_request("other", "c2", &qs)));
    assert_eq!(got.len(), 3);

    // c1 renews at 40 s; c2 cannot take q0 at 80 s (renewed 40 s ago), but q1 stays with c1
    // only until 60 s after its last lock.
    h.advance(Duration::from_secs(40));
    granted(&h.call(C1, lock_request("g", "c1", &qs[..1])));
    h.advance(Duration::from_secs(40));
    let got = granted(&h.call(C2, lock_request("g", "c2", &qs[..2])));
    assert_eq!(got, [qs[1].clone()].into());
    assert_eq!(
        h.cluster.lock_owner("g", &qs[1], h.now).as_deref(),
        Some("c2")
    );

    // Only the owner unlocks.
    h.call(C2, unlock_request("g", "c2", &qs[..1]));
    assert_eq!(
        h.cluster.lock_owner("g", &qs[0], h.now).as_deref(),
        Some("c1")
    );
    let response = h.call(C1, unlock_request("g", "c1", &qs[..1]));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    assert_eq!(h.cluster.lock_owner("g", &qs[0], h.now), None);

    // Locks survive the client's connection.
    h.cluster.disconnect(h.now, C2);
    assert_eq!(
        h.cluster.lock_owner("g", &qs[1], h.now).as_deref(),
        Some("c2")
    );
    assert_eq!(
        h.cluster
            .lock_owner("g", &qs[1], h.now + Duration::from_secs(61)),
        None
    );

    let bad = h.call(C1, lock_request("g", "c1", &[]).with_body("{not json"));
    assert_eq!(bad.response_code(), ResponseCode::SYSTEM_ERROR);
}

#[test]
fn restart_loses_locks_and_members() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 3);
    h.connect(C1, "broker-a:10911");
    h.call(C1, heartbeat_request("c1", "g", &[("T", "*")], 1));
    let qs = queues();
    granted(&h.call(C1, lock_request("g", "c1", &qs)));
    h.call(
        C1,
        rocketmq_tests::sim::harness::update_offset_request("g", &qs[0], 7),
    );

    h.cluster.restart_broker(h.now, "broker-a");
    h.collect();
    assert_eq!(h.take_closed(), vec![C1]);
    assert!(!h.cluster.is_connected(C1));
    assert_eq!(h.cluster.lock_owner("g", &qs[0], h.now), None);
    assert!(h.cluster.members("broker-a", "g").is_empty());
    assert_eq!(h.cluster.committed_offset("g", &qs[0]), Some(7));

    // Anything else may take the queues now.
    h.connect(C2, "broker-a:10911");
    let got = granted(&h.call(C2, lock_request("g", "c2", &qs)));
    assert_eq!(got.len(), 3);
}
