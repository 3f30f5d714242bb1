//! Consumer-group membership on a simulated broker: a heartbeat registers the client on its
//! connection and shows in `GET_CONSUMER_LIST_BY_GROUP`; a new member makes the broker send
//! oneway `NOTIFY_CONSUMER_IDS_CHANGED` to every member's connection (before the heartbeat's
//! response); leaving by unregister or by closing the connection notifies the rest; an empty
//! group answers `SYSTEM_ERROR` "no consumer for this group"; a member that stops heartbeating
//! has its connection closed after 120 s.

use std::time::Duration;

use proto::body::ConsumerListBody;
use proto::headers::NotifyConsumerIdsChangedRequest;
use proto::{Command, LanguageCode, RequestCode, ResponseCode};
use rocketmq_tests::sim::harness::{
    Harness, consumer_list_request, heartbeat_request, unregister_request,
};

const C1: u64 = 1;
const C2: u64 = 2;

fn list(h: &mut Harness, conn: u64, group: &str) -> Command {
    h.call(conn, consumer_list_request(group))
}

fn ids(response: &Command) -> Vec<String> {
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{response:?}"
    );
    let mut ids = ConsumerListBody::decode(&response.body)
        .expect("consumer list body")
        .consumer_id_list;
    ids.sort();
    ids
}

fn assert_notify(command: &Command, group: &str) {
    assert_eq!(
        command.request_code(),
        RequestCode::NOTIFY_CONSUMER_IDS_CHANGED
    );
    assert!(command.is_oneway(), "{command:?}");
    let header: NotifyConsumerIdsChangedRequest = command.header().expect("notify header");
    assert_eq!(header.consumer_group, group);
}

#[test]
fn heartbeat_registers_and_notifies_every_member() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 4);
    h.connect(C1, "broker-a:10911");
    h.connect(C2, "broker-a:10911");

    let empty = list(&mut h, C1, "g");
    assert_eq!(empty.response_code(), ResponseCode::SYSTEM_ERROR);
    assert_eq!(
        empty.remark.as_deref(),
        Some("no consumer for this group, g")
    );

    let mut first = heartbeat_request("c1", "g", &[("T", "*")], 1);
    first.language = LanguageCode::RUST;
    let opaque = h.send(C1, first);
    // The new member itself is told, before its heartbeat is answered.
    let out = h.take_all(C1);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_notify(&out[0], "g");
    assert!(out[1].is_response() && out[1].opaque == opaque);
    assert_eq!(out[1].response_code(), ResponseCode::SUCCESS);
    assert_eq!(ids(&list(&mut h, C1, "g")), ["c1"]);
    let infos = h.cluster.member_infos("broker-a", "g");
    assert_eq!(infos.len(), 1);
    assert_eq!((infos[0].conn, infos[0].language), (C1, LanguageCode::RUST));

    // The same heartbeat again changes nothing: no notification.
    h.call(C1, heartbeat_request("c1", "g", &[("T", "*")], 1));
    assert!(h.take_requests(C1).is_empty());

    // A second member: both hear about it.
    h.call(C2, heartbeat_request("c2", "g", &[("T", "*")], 1));
    let to_first = h.take_requests(C1);
    assert_eq!(to_first.len(), 1);
    assert_notify(&to_first[0], "g");
    assert_eq!(h.take_requests(C2).len(), 1);
    assert_eq!(ids(&list(&mut h, C2, "g")), ["c1", "c2"]);
    assert_eq!(h.cluster.members("broker-a", "g"), ["c1", "c2"]);
    assert!(h.cluster.members("broker-b", "g").is_empty());

    // A changed subscription (a new topic) is a change too.
    h.cluster.create_topic("U", 1);
    h.call(
        C2,
        heartbeat_request("c2", "g", &[("T", "*"), ("U", "*")], 2),
    );
    assert_eq!(h.take_requests(C1).len(), 1);
    assert_eq!(h.take_requests(C2).len(), 1);
    assert!(h.cluster.subscription("broker-a", "g", "U").is_some());
}

#[test]
fn leaving_notifies_the_others() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 4);
    h.connect(C1, "broker-a:10911");
    h.connect(C2, "broker-a:10911");
    h.call(C1, heartbeat_request("c1", "g", &[("T", "*")], 1));
    h.call(C2, heartbeat_request("c2", "g", &[("T", "*")], 1));
    h.take_requests(C1);
    h.take_requests(C2);

    let response = h.call(C2, unregister_request("c2", "g"));
    assert_eq!(response.response_code(), ResponseCode::SUCCESS);
    let to_first = h.take_requests(C1);
    assert_eq!(to_first.len(), 1);
    assert_notify(&to_first[0], "g");
    assert!(h.take_requests(C2).is_empty(), "the leaver is not told");
    assert_eq!(h.cluster.members("broker-a", "g"), ["c1"]);

    // Back in, then the connection drops.
    h.call(C2, heartbeat_request("c2", "g", &[("T", "*")], 1));
    h.take_requests(C1);
    h.cluster.disconnect(h.now, C2);
    h.collect();
    assert_eq!(h.take_requests(C1).len(), 1);
    assert_eq!(h.cluster.members("broker-a", "g"), ["c1"]);

    // The last member leaves: the group is gone.
    h.cluster.disconnect(h.now, C1);
    h.connect(C2, "broker-a:10911");
    assert_eq!(
        list(&mut h, C2, "g").response_code(),
        ResponseCode::SYSTEM_ERROR
    );
}

#[test]
fn silent_members_expire_after_120_seconds() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 4);
    h.connect(C1, "broker-a:10911");
    h.connect(C2, "broker-a:10911");
    h.call(C1, heartbeat_request("c1", "g", &[("T", "*")], 1));
    h.call(C2, heartbeat_request("c2", "g", &[("T", "*")], 1));
    h.take_requests(C1);

    // c1 heartbeats every 30 s, c2 never again.
    for _ in 0..4 {
        h.advance(Duration::from_secs(30));
        h.call(C1, heartbeat_request("c1", "g", &[("T", "*")], 1));
    }
    assert_eq!(h.take_closed(), vec![C2]);
    assert!(!h.cluster.is_connected(C2));
    assert_eq!(h.cluster.members("broker-a", "g"), ["c1"]);
    assert_eq!(h.take_requests(C1).len(), 1, "c1 hears that c2 left");
}
