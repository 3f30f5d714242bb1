//! A running push consumer reads on from the slave when its broker's master dies (a master with
//! a slave, `slaveReadEnable`: Apache 4.9, or the Rust broker, whose slave is restarted first so
//! that it serves what it replicated): the name server's route then lists only the slave, the
//! consumer's address book follows it (each route replaces its brokers' addresses, as Java's
//! `brokerAddrTable`), and pulls go to the slave; every message stored before the crash is
//! consumed. Pulls of one message, at most one cached per queue, and a handler held until the
//! master is gone make sure the messages after the first of each queue are pulled after the
//! crash. The time from the kill to the first message pulled from the slave is reported. Then
//! the master comes back: messages sent to it are consumed, and the group's offsets are
//! committed to it again, past every message. The cluster is a second one, with slaves (`scripts/test` starts it and exports
//! `FAILOVER_NAMESRV_ADDR`, `FAILOVER_CLUSTER_DIR` and `FAILOVER_BROKER_PORT`); the master is
//! started again at the end.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::broker_scenario::{Topic, WAIT, group_offset, max_offset, sleep, wait_for};
use driver::prelude::*;
use proto::{Command, RequestCode, ResponseCode};
use rocketmq_tests::{create_topic, route, unique};

/// Messages per queue, and queues.
const PER_QUEUE: usize = 5;
const QUEUES: i32 = 2;

/// An environment variable `scripts/test` sets for this scenario; fails loudly without it.
fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: this test needs the failover cluster (a master with a slave) \
             that scripts/test starts"
        )
    })
}

/// Runs `scripts/broker <action> <broker>` on the failover cluster.
fn failover_broker(action: &str, broker: &str) {
    let status = broker_command(action, broker);
    assert!(
        status.success(),
        "scripts/broker {action} {broker}: {status}"
    );
}

/// `scripts/broker <action> <broker>` on the failover cluster, and how it ended.
fn broker_command(action: &str, broker: &str) -> std::process::ExitStatus {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/broker");
    std::process::Command::new(script)
        .args([action, broker])
        .env("RMQ_CLUSTER_DIR", env("FAILOVER_CLUSTER_DIR"))
        .env(
            "RMQ_NAMESRV_PORT",
            env("FAILOVER_NAMESRV_ADDR")
                .rsplit(':')
                .next()
                .unwrap_or_default(),
        )
        .env("RMQ_BROKER_PORT", env("FAILOVER_BROKER_PORT"))
        .status()
        .unwrap_or_else(|e| panic!("run {script} {action}: {e}"))
}

/// Starts the killed master again when the scenario ends, passed or failed, so the failover
/// cluster is whole for the next run.
struct ReviveMaster;

impl Drop for ReviveMaster {
    fn drop(&mut self) {
        if !broker_command("revive", "broker-a").success() {
            eprintln!("scripts/broker revive broker-a failed on the failover cluster");
        }
    }
}

/// Whether the broker at `slave` has `topic` in its topic config (`GET_ALL_TOPIC_CONFIG`).
fn slave_knows_topic(slave: &str, topic: &str) -> bool {
    let request =
        Command::request_with_fields(RequestCode::GET_ALL_TOPIC_CONFIG, Default::default());
    let answer = rocketmq_tests::call(slave, request);
    answer.response_code() == ResponseCode::SUCCESS
        && String::from_utf8_lossy(&answer.body).contains(&format!("\"{topic}\""))
}

/// The failover cluster's implementation (`scripts/broker impl` there).
fn failover_impl() -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/broker");
    let output = std::process::Command::new(script)
        .arg("impl")
        .env("RMQ_CLUSTER_DIR", env("FAILOVER_CLUSTER_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("run {script} impl: {e}"));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The Rust broker 1.0's slave replicates the master's commit log (its HA client connects and
/// the bytes arrive) and copies the topic's config, but builds the consume queues from what it
/// replicated only when it starts (its log repeats "Dispatch task fall behind commit log N
/// bytes" until then): it serves none of the messages before a restart. Pinned, then the slave
/// is restarted so that the scenario can go on from it.
async fn restart_rust_slave<R: Runtime>(slave: &str, topic: &str) {
    // Its topic config comes from the master every 10 s (`SlaveSynchronize`).
    wait_for::<R>("the Rust slave knows the topic", || {
        slave_knows_topic(slave, topic)
    })
    .await;
    // Replication of the few kilobytes takes milliseconds; give the slave ample time.
    sleep::<R>(Duration::from_secs(5)).await;
    for q in 0..QUEUES {
        assert_eq!(
            max_offset(slave, topic, q),
            Ok(0),
            "queue {q} of the Rust slave: no message before a restart (README, Compatibility, \
             11); when this fails, the slave serves what it replicates: drop the restart"
        );
    }
    failover_broker("kill", "broker-a-s");
    failover_broker("revive", "broker-a-s");
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn reads_from_the_slave_when_the_master_dies<R: Runtime>(prefix: &str) {
    let namesrv = env("FAILOVER_NAMESRV_ADDR");
    let master = format!("127.0.0.1:{}", env("FAILOVER_BROKER_PORT"));
    let name = unique(prefix);
    create_topic(&namesrv, &master, &name, QUEUES);
    let topic = Topic::at(&namesrv, &master, &name, QUEUES);
    let slave = route(&namesrv, &name)
        .and_then(|r| {
            r.broker_datas
                .iter()
                .find_map(|b| b.broker_addrs.get(&1).cloned())
        })
        .unwrap_or_else(|| panic!("the failover cluster's route of {name} has no slave"));
    let sent = topic.send("before", PER_QUEUE * QUEUES as usize, None);
    if failover_impl() == "rust" {
        restart_rust_slave::<R>(&slave, &name).await;
    }
    // The slave serves the topic once it has the messages and the topic's config, which it
    // copies from its master every 10 s (`SlaveSynchronize`); until then it answers pulls
    // with TOPIC_NOT_EXIST, and once the master is gone it never gets it.
    wait_for::<R>("the slave has every message and the topic", || {
        (0..QUEUES).all(|q| max_offset(&slave, &name, q) == Ok(PER_QUEUE as i64))
            && slave_knows_topic(&slave, &name)
    })
    .await;

    let open = Arc::new(AtomicBool::new(false));
    let (bodies, mut received) = futures_channel::mpsc::unbounded();
    let gate = Arc::clone(&open);
    let group = unique("failover");
    let consumer = driver::PushConsumer::<R>::builder(&group)
        .name_server(&namesrv)
        .subscribe(&name, "*")
        .consume_from(ConsumeFrom::First)
        .configure(|c| {
            c.pull_batch_size = 1;
            c.max_cached_messages_per_queue = 1;
            // The master's return is noticed at the next route refresh.
            c.route_refresh_interval = Duration::from_secs(5);
        })
        .build()
        .expect("the consumer's configuration is valid")
        .start_concurrently(move |messages: Vec<Message>| {
            let gate = Arc::clone(&gate);
            let bodies = bodies.clone();
            async move {
                while !gate.load(Ordering::Acquire) {
                    sleep::<R>(Duration::from_millis(20)).await;
                }
                for message in &messages {
                    let body = String::from_utf8_lossy(message.body()).into_owned();
                    let _ = bodies.unbounded_send(body);
                }
                ConsumeOutcome::Success
            }
        });
    // Each queue's first message is held in the handler; nothing else is cached.
    sleep::<R>(Duration::from_secs(3)).await;
    let killed_at = std::time::Instant::now();
    failover_broker("kill", "broker-a");
    let revive = ReviveMaster;
    wait_for::<R>("the route lists only the slave", || {
        route(&namesrv, &name).is_some_and(|r| {
            r.broker_datas
                .iter()
                .all(|b| !b.broker_addrs.contains_key(&0))
        })
    })
    .await;
    let route_moved = killed_at.elapsed();
    open.store(true, Ordering::Release);
    // The messages after each queue's first were pulled after the kill: from the slave.
    let first_per_queue: BTreeSet<String> = (0..QUEUES as usize)
        .map(|i| format!("{name}/before/{i}"))
        .collect();
    let mut from_slave_after = None;

    let mut seen = BTreeSet::new();
    let runtime = R::default();
    let deadline = runtime.now() + WAIT;
    while !sent.iter().all(|b| seen.contains(b)) {
        assert!(
            runtime.now() < deadline,
            "not every message arrived from the slave within {WAIT:?}; missing: {:?}",
            sent.difference(&seen).collect::<Vec<_>>()
        );
        let step = futures_util::future::select(
            futures_util::StreamExt::next(&mut received),
            runtime.sleep_until(runtime.now() + Duration::from_millis(200)),
        )
        .await;
        if let futures_util::future::Either::Left((Some(body), _)) = step {
            if from_slave_after.is_none() && !first_per_queue.contains(&body) {
                from_slave_after = Some(killed_at.elapsed());
            }
            seen.insert(body);
        }
    }
    let unexpected: Vec<_> = seen.difference(&sent).collect();
    assert!(unexpected.is_empty(), "bodies nobody sent: {unexpected:?}");
    eprintln!(
        "failover: the route lost the master {route_moved:?} after the kill; the first message \
         pulled from the slave arrived {:?} after it",
        from_slave_after.expect("messages after each queue's first came from the slave")
    );

    // The master comes back: the consumer uses it again. Messages sent to it now are consumed,
    // and the group's offsets are committed to it (Java's rule: offsets go to the master when
    // it is in the route), past every message, so none went backwards.
    drop(revive);
    let revived_at = std::time::Instant::now();
    wait_for::<R>("the route lists the master again", || {
        route(&namesrv, &name).is_some_and(|r| {
            r.broker_datas
                .iter()
                .all(|b| b.broker_addrs.contains_key(&0))
        })
    })
    .await;
    let after = topic.send("after", 2 * QUEUES as usize, None);
    let deadline = runtime.now() + WAIT;
    while !after.iter().all(|b| seen.contains(b)) {
        assert!(
            runtime.now() < deadline,
            "not every message sent after the master came back arrived within {WAIT:?}"
        );
        let step = futures_util::future::select(
            futures_util::StreamExt::next(&mut received),
            runtime.sleep_until(runtime.now() + Duration::from_millis(200)),
        )
        .await;
        if let futures_util::future::Either::Left((Some(body), _)) = step {
            seen.insert(body);
        }
    }
    let total = i64::try_from(PER_QUEUE + 2).unwrap_or(i64::MAX);
    wait_for::<R>(
        "the master holds the group's offsets past every message",
        || (0..QUEUES).all(|q| group_offset(&master, &group, &name, q) == Ok(Some(total))),
    )
    .await;
    eprintln!(
        "failover: back on the master {:?} after its restart began",
        revived_at.elapsed()
    );
    consumer
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
}
