//! The simulated cluster as fuzz-like clients see it: it never panics on any command (random
//! codes, flags, garbage extFields and bodies, on name-server and broker connections, closed
//! or never opened), always answers a non-oneway request to a live broker exactly once or parks
//! a pull, and is deterministic: the same seed and inputs give the same outputs.

use std::time::Duration;

use bytes::Bytes;
use proto::headers::pull_sys_flag;
use proto::{Command, ExtFields, LanguageCode, MessageQueue, RequestCode};
use rocketmq_tests::sim::SimRng;
use rocketmq_tests::sim::harness::{
    Harness, heartbeat_request, lock_request, pull_header, pull_request, send_back_request,
};

const CODES: [i32; 24] = [
    10, 11, 14, 15, 17, 29, 30, 31, 32, 34, 35, 36, 38, 40, 41, 42, 46, 105, 106, 310, 320, 361,
    9999, -1,
];
const KEYS: [&str; 16] = [
    "consumerGroup",
    "topic",
    "queueId",
    "queueOffset",
    "maxMsgNums",
    "sysFlag",
    "commitOffset",
    "suspendTimeoutMillis",
    "subVersion",
    "subscription",
    "expressionType",
    "offset",
    "group",
    "delayLevel",
    "clientID",
    "timestamp",
];
const VALUES: [&str; 14] = [
    "0",
    "1",
    "-1",
    "2",
    "T",
    "g",
    "%RETRY%g",
    "9223372036854775807",
    "-9223372036854775808",
    "2147483647",
    "",
    "x y",
    "SQL92",
    "TAG",
];

fn random_command(rng: &mut SimRng) -> Command {
    let code = CODES[rng.index(CODES.len())];
    let mut ext = ExtFields::new();
    for _ in 0..rng.below(10) {
        ext.insert(KEYS[rng.index(KEYS.len())], VALUES[rng.index(VALUES.len())]);
    }
    let mut command = Command::request_with_fields(RequestCode(code), ext);
    command.flag = [0, 0, 0, 2, 1, 3][rng.index(6)];
    command.version = [0, 117, 397, 475][rng.index(4)];
    command.language = LanguageCode(rng.below(16) as u8);
    command.opaque = rng.next_u64() as i32;
    let bodies: [&[u8]; 6] = [
        b"",
        b"{",
        b"[]",
        b"{\"consumerGroup\":\"g\",\"clientId\":\"c\",\"mqSet\":[{\"topic\":\"T\",\"brokerName\":\"broker-a\",\"queueId\":0}]}",
        b"{\"clientID\":\"c\",\"consumerDataSet\":[{\"groupName\":\"g\",\"subscriptionDataSet\":[{\"topic\":\"T\",\"subString\":\"*\"}]}]}",
        b"\x00\x00\x00\x10garbage-garbage",
    ];
    command.with_body(Bytes::from_static(bodies[rng.index(bodies.len())]))
}

/// Runs a seeded random session and returns a transcript of everything the cluster emitted.
fn session(seed: u64) -> Vec<String> {
    let mut h = Harness::new(|mut c| {
        c.seed = seed;
        c
    });
    h.cluster.create_topic("T", 2);
    let mut rng = SimRng::new(seed);
    let mut transcript = Vec::new();
    let addrs = ["namesrv:9876", "broker-a:10911", "broker-b:10911"];
    for conn in 0..6u64 {
        assert!(h.cluster.connect(conn, addrs[conn as usize % 3]));
    }
    for step in 0..2_000 {
        let conn = rng.below(7); // 6 is never connected
        match rng.below(20) {
            0 => {
                h.cluster.disconnect(h.now, conn);
            }
            1 => {
                h.cluster.connect(conn, addrs[rng.index(3)]);
            }
            2 => h.advance(Duration::from_millis(rng.below(30_000))),
            3 => {
                h.produce(
                    "T",
                    ["broker-a", "broker-b"][rng.index(2)],
                    rng.index(2) as i32,
                    "m",
                    Some("TagA"),
                );
            }
            4 if step % 200 == 0 => h.cluster.restart_broker(h.now, "broker-b"),
            5 => {
                h.send(
                    conn,
                    heartbeat_request(&format!("c{conn}"), "g", &[("T", "*")], 1),
                );
            }
            6 => {
                let q = MessageQueue::new("T", "broker-a", rng.index(2) as i32);
                let mut header = pull_header("g", &q, rng.below(5) as i64 - 1);
                header.sys_flag = rng.below(32) as i32;
                header.suspend_timeout_millis = [0, 15_000, i64::MAX, -5][rng.index(4)];
                h.send(conn, pull_request(&header));
            }
            7 => {
                h.send(
                    conn,
                    send_back_request("g", rng.below(2_000) as i64, rng.below(5) as i32 - 1, 2),
                );
            }
            8 => {
                let q = MessageQueue::new("T", "broker-a", 0);
                h.send(conn, lock_request("g", &format!("c{conn}"), &[q]));
            }
            _ => {
                let command = random_command(&mut rng);
                h.cluster.handle_command(h.now, conn, command);
                h.collect();
            }
        }
        for c in 0..7 {
            for command in h.take_all(c) {
                transcript.push(format!(
                    "{step} {c} {} {} {} {:?} {:?} {}",
                    command.code,
                    command.flag,
                    command.opaque,
                    command.remark,
                    command.ext_fields,
                    command.body.len()
                ));
            }
        }
        for c in h.take_closed() {
            transcript.push(format!("{step} closed {c}"));
        }
    }
    transcript
}

#[test]
fn random_commands_never_panic_and_replay_exactly() {
    for seed in [1, 2, 3] {
        let first = session(seed);
        assert!(
            first.len() > 200,
            "the session exercised the cluster: {}",
            first.len()
        );
        assert_eq!(first, session(seed), "seed {seed} replays");
    }
    assert_ne!(session(1), session(2));
}

#[test]
fn every_request_is_answered_once() {
    let mut h = Harness::new(|c| c);
    h.cluster.create_topic("T", 1);
    h.connect(1, "broker-a:10911");
    let mut rng = SimRng::new(99);
    for _ in 0..500 {
        let mut command = random_command(&mut rng);
        command.flag = 0;
        let code = command.code;
        let is_pull = code == 11 || code == 361;
        let opaque = h.send(1, command);
        let answers = h.take_all(1);
        let responses: Vec<_> = answers.iter().filter(|c| c.is_response()).collect();
        assert!(
            responses.len() == 1 || (is_pull && responses.is_empty()),
            "code {code}: {answers:?}"
        );
        if let Some(response) = responses.first() {
            assert_eq!(response.opaque, opaque);
        }
    }
    // A parked pull with a suspend bit is the only silent case.
    let q = MessageQueue::new("T", "broker-a", 0);
    let mut header = pull_header("g", &q, 0);
    header.sys_flag = pull_sys_flag::SUSPEND | pull_sys_flag::SUBSCRIPTION;
    let opaque = h.send(1, pull_request(&header));
    assert!(h.take_response(1, opaque).is_none());
}
