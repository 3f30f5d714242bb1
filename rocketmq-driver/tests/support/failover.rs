//! Master failover on a cluster of two masters, each with a slave (`slaveReadEnable`: Apache
//! 4.9, or the Rust broker, whose slave is restarted first so that it serves what it
//! replicated). A producer streams to both brokers the whole time and a push consumer reads the
//! stream; broker-a's master is killed (SIGKILL) mid-stream and kept down:
//!
//! - the name server's route then lists only broker-a's slave, the consumer's address book
//!   follows it (each route replaces its brokers' addresses, as Java's `brokerAddrTable`), and
//!   every message of broker-a the slave holds is consumed from it while the master is down;
//!   the time from the kill to the first of them is reported;
//! - the producer moves to broker-b, whose stream the consumer keeps reading;
//! - the master comes back: the group's offsets are committed to it again, past every message,
//!   so pulls are back on it (the time is reported);
//! - every message the brokers acknowledged to the producer is consumed, and no queue's
//!   deliveries go back by more than the in-flight window (a pull of one message and one
//!   cached per queue), counting duplicates.
//!
//! Pulls of one message, at most one cached per queue, and a handler that holds broker-a's
//! messages until the master is gone make sure broker-a's backlog is pulled after the crash.
//! The cluster is a second one (`scripts/test` starts it with `--brokers 2 --slaves` and
//! exports `FAILOVER_NAMESRV_ADDR`, `FAILOVER_CLUSTER_DIR` and `FAILOVER_BROKER_PORT`); the
//! master is started again at the end, passed or failed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::broker_scenario::{Topic, group_offset, max_offset, sleep, wait_for};
use driver::prelude::*;
use proto::{Command, RequestCode, ResponseCode};
use rocketmq_tests::{create_topic, route, unique};

/// Messages per queue in each broker's backlog, and queues per broker.
const PER_QUEUE: usize = 5;
const QUEUES: i32 = 2;
/// The pause between two sends of the producer's stream.
const STREAM_INTERVAL: Duration = Duration::from_millis(20);
/// How far a queue's deliveries may go back: the pull in flight and the message cached when
/// the consumer changes broker (pulls of one, one cached per queue).
const WINDOW: i64 = 2;

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

/// The failover cluster's brokers, from the name server's route of `topic`.
struct Brokers {
    master_a: String,
    slave_a: String,
    master_b: String,
}

impl Brokers {
    fn of(namesrv: &str, topic: &str) -> Self {
        let route = route(namesrv, topic)
            .unwrap_or_else(|| panic!("the failover cluster has no route of {topic}"));
        let addr = |name: &str, id: i64| {
            route
                .broker_datas
                .iter()
                .find(|b| b.broker_name == name)
                .and_then(|b| b.broker_addrs.get(&id).cloned())
                .unwrap_or_else(|| {
                    panic!(
                        "the route of {topic} has no {name} with id {id} (the failover cluster \
                         runs two masters with a slave each): {route:?}"
                    )
                })
        };
        Self {
            master_a: addr("broker-a", 0),
            slave_a: addr("broker-a", 1),
            master_b: addr("broker-b", 0),
        }
    }
}

/// One message as the handler saw it.
#[derive(Clone, Debug)]
struct Delivery {
    /// Stored by broker-a (its store host is broker-a's master, also when pulled from the
    /// slave, which replicates the master's records byte for byte).
    from_a: bool,
    queue: i32,
    offset: i64,
    body: String,
    at: Instant,
}

/// Every delivery, in the order the handler saw them.
#[derive(Clone, Default)]
struct Deliveries(Arc<Mutex<Vec<Delivery>>>);

impl Deliveries {
    fn push(&self, delivery: Delivery) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(delivery);
    }

    fn snapshot(&self) -> Vec<Delivery> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn bodies(&self) -> BTreeSet<String> {
        self.snapshot().into_iter().map(|d| d.body).collect()
    }
}

/// A message the producer's stream got acknowledged.
#[derive(Clone, Debug)]
struct Acked {
    body: String,
    broker: String,
    queue: i32,
    offset: i64,
    at: Instant,
}

/// A producer sending one message every [`STREAM_INTERVAL`] to the topic (the producer's own
/// queue choice, both brokers while both are up) until it is stopped.
struct Stream {
    acked: Arc<Mutex<Vec<Acked>>>,
    failed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    stopped: futures_channel::oneshot::Receiver<()>,
}

impl Stream {
    fn start<R: Runtime>(namesrv: &str, topic: &str) -> Self {
        // The master's return reaches the producer with its next route fetch: every 30 s by
        // default (Java's `pollNameServerInterval`), which the wait for the stream to reach
        // broker-a again (60 s) would sit on; 5 s here, as the consumer's route refresh.
        let producer = driver::Producer::<R>::builder(unique("failover-producer"))
            .name_server(namesrv)
            .configure(|c| c.route_ttl = Duration::from_secs(5))
            .build()
            .expect("the producer's configuration is valid");
        let acked = Arc::new(Mutex::new(Vec::new()));
        let failed = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (done, stopped) = futures_channel::oneshot::channel();
        let task =
            {
                let (acked, failed, stop, topic) = (
                    Arc::clone(&acked),
                    Arc::clone(&failed),
                    Arc::clone(&stop),
                    topic.to_owned(),
                );
                async move {
                    let mut seq = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        let body = format!("{topic}/stream/{seq}");
                        seq += 1;
                        match producer.send(&topic, body.clone()).await {
                            Ok(result) => acked
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push(Acked {
                                    body,
                                    broker: result.queue.broker_name().to_owned(),
                                    queue: result.queue.queue_id(),
                                    offset: result.queue_offset,
                                    at: Instant::now(),
                                }),
                            // A send that failed was not acknowledged: the scenario owes it
                            // nothing, and counts it.
                            Err(_) => {
                                failed.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        sleep::<R>(STREAM_INTERVAL).await;
                    }
                    producer.close();
                    let _ = done.send(());
                }
            };
        R::default().spawn(Box::pin(task));
        Self {
            acked,
            failed,
            stop,
            stopped,
        }
    }

    fn acked(&self) -> Vec<Acked> {
        self.acked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops the stream and returns every acknowledged message and the failed sends' count.
    async fn stop(self) -> (Vec<Acked>, u64) {
        self.stop.store(true, Ordering::Release);
        let _ = self.stopped.await;
        let acked = self
            .acked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        (acked, self.failed.load(Ordering::Relaxed))
    }
}

/// The address of broker `name`'s master as the name server lists it
/// (`GET_BROKER_CLUSTER_INFO`).
fn registered_master(namesrv: &str, name: &str) -> String {
    let info = rmq_cli::admin::cluster_info(&rmq_cli::admin::Cluster::new(namesrv))
        .unwrap_or_else(|e| panic!("the failover cluster's info: {e}"));
    info.get("brokerAddrTable")
        .and_then(|table| table.get(name)?.get("brokerAddrs")?.get("0")?.as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| {
            panic!(
                "the failover cluster has no master {name} (scripts/test starts it with \
                 --brokers 2 --slaves): {info}"
            )
        })
}

/// Whether the route of `topic` lists broker `name`'s master (id 0).
fn master_routed(namesrv: &str, topic: &str, name: &str) -> bool {
    route(namesrv, topic).is_some_and(|r| {
        r.broker_datas
            .iter()
            .any(|b| b.broker_name == name && b.broker_addrs.contains_key(&0))
    })
}

/// Per queue of one broker, how many deliveries came at or below an offset already delivered
/// (duplicates, or a step back), and the deepest step back.
fn steps_back(deliveries: &[Delivery], from_a: bool) -> BTreeMap<i32, (usize, i64)> {
    let mut highest = BTreeMap::<i32, i64>::new();
    let mut back = BTreeMap::<i32, (usize, i64)>::new();
    for d in deliveries.iter().filter(|d| d.from_a == from_a) {
        match highest.get(&d.queue).copied() {
            Some(top) if d.offset <= top => {
                let entry = back.entry(d.queue).or_default();
                entry.0 += 1;
                entry.1 = entry.1.max(top - d.offset);
            }
            _ => {
                highest.insert(d.queue, d.offset);
            }
        }
    }
    back
}

/// Runs the scenario on runtime `R`.
pub(crate) async fn reads_from_the_slave_when_the_master_dies<R: Runtime>(prefix: &str) {
    let namesrv = env("FAILOVER_NAMESRV_ADDR");
    let first_master = format!("127.0.0.1:{}", env("FAILOVER_BROKER_PORT"));
    let name = unique(prefix);
    create_topic(&namesrv, &first_master, &name, QUEUES);
    let Brokers {
        master_a,
        slave_a,
        master_b,
    } = {
        // broker-b gets the topic too, and the route lists both.
        let master_b = registered_master(&namesrv, "broker-b");
        create_topic(&namesrv, &master_b, &name, QUEUES);
        wait_for::<R>("the route lists both brokers' queues", || {
            route(&namesrv, &name).is_some_and(|r| r.queue_datas.len() == 2)
        })
        .await;
        Brokers::of(&namesrv, &name)
    };
    let store_a: u16 = master_a
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("broker-a's address has a port");
    let backlog_a = Topic::at(&namesrv, &master_a, &name, QUEUES).send(
        "before-a",
        PER_QUEUE * QUEUES as usize,
        None,
    );
    let backlog_b = Topic::at(&namesrv, &master_b, &name, QUEUES).send(
        "before-b",
        PER_QUEUE * QUEUES as usize,
        None,
    );
    if failover_impl() == "rust" {
        restart_rust_slave::<R>(&slave_a, &name).await;
    }
    // The slave serves the topic once it has the messages and the topic's config, which it
    // copies from its master every 10 s (`SlaveSynchronize`); until then it answers pulls
    // with TOPIC_NOT_EXIST, and once the master is gone it never gets it.
    wait_for::<R>("broker-a's slave has the backlog and the topic", || {
        (0..QUEUES).all(|q| max_offset(&slave_a, &name, q) == Ok(PER_QUEUE as i64))
            && slave_knows_topic(&slave_a, &name)
    })
    .await;

    let open = Arc::new(AtomicBool::new(false));
    let deliveries = Deliveries::default();
    let group = unique("failover");
    let consumer = {
        let (gate, deliveries) = (Arc::clone(&open), deliveries.clone());
        driver::PushConsumer::<R>::builder(&group)
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
            .start_concurrently(move |messages: Messages| {
                let (gate, deliveries) = (Arc::clone(&gate), deliveries.clone());
                async move {
                    for message in &messages {
                        let from_a = message.store_host().port() == store_a;
                        while from_a && !gate.load(Ordering::Acquire) {
                            sleep::<R>(Duration::from_millis(20)).await;
                        }
                        deliveries.push(Delivery {
                            from_a,
                            queue: message.queue_id(),
                            offset: message.queue_offset(),
                            body: String::from_utf8_lossy(message.body()).into_owned(),
                            at: Instant::now(),
                        });
                    }
                    ConsumeOutcome::Success
                }
            })
    };
    let stream = Stream::start::<R>(&namesrv, &name);
    // Mid-stream: broker-b's messages flow; each of broker-a's queues holds its first message
    // in the handler, and nothing else of broker-a is cached.
    wait_for::<R>("the stream flows through broker-b", || {
        let acked: BTreeSet<String> = stream
            .acked()
            .into_iter()
            .filter(|a| a.broker == "broker-b")
            .map(|a| a.body)
            .collect();
        acked.len() >= 5
            && acked
                .iter()
                .filter(|b| deliveries.bodies().contains(*b))
                .count()
                >= 5
    })
    .await;
    sleep::<R>(Duration::from_secs(1)).await;
    let killed_at = Instant::now();
    failover_broker("kill", "broker-a");
    let revive = ReviveMaster;
    wait_for::<R>("the route lists broker-a's slave only", || {
        !master_routed(&namesrv, &name, "broker-a") && master_routed(&namesrv, &name, "broker-b")
    })
    .await;
    let route_moved = killed_at.elapsed();
    // What the slave serves: everything it has in its consume queues.
    let on_slave: BTreeMap<i32, i64> = (0..QUEUES)
        .map(|q| {
            let max = max_offset(&slave_a, &name, q)
                .unwrap_or_else(|e| panic!("broker-a's slave, queue {q}: {e}"));
            (q, max)
        })
        .collect();
    open.store(true, Ordering::Release);
    wait_for::<R>(
        "every message broker-a's slave holds is consumed while the master is down",
        || {
            let got = deliveries.snapshot();
            on_slave.iter().all(|(q, max)| {
                let offsets: BTreeSet<i64> = got
                    .iter()
                    .filter(|d| d.from_a && d.queue == *q)
                    .map(|d| d.offset)
                    .collect();
                (0..*max).all(|o| offsets.contains(&o))
            })
        },
    )
    .await;
    let got = deliveries.snapshot();
    // The first of each of broker-a's queues was held in the handler before the kill; the
    // rest was pulled after it, from the slave.
    let from_slave_after = got
        .iter()
        .find(|d| d.from_a && d.offset > 0)
        .map(|d| d.at.duration_since(killed_at))
        .expect("broker-a's later messages came from the slave");
    let acked_a_before: Vec<Acked> = stream
        .acked()
        .into_iter()
        .filter(|a| a.broker == "broker-a" && a.at < killed_at)
        .collect();
    let unreplicated = acked_a_before
        .iter()
        .filter(|a| on_slave.get(&a.queue).is_none_or(|max| a.offset >= *max))
        .count();
    // The producer moved to broker-b, and what it sent there after the kill is consumed
    // while broker-a's master is still down.
    let acked_b_after: BTreeSet<String> = stream
        .acked()
        .into_iter()
        .filter(|a| a.broker == "broker-b" && a.at > killed_at + route_moved)
        .map(|a| a.body)
        .take(5)
        .collect();
    assert!(
        !acked_b_after.is_empty(),
        "the producer sent nothing to broker-b after broker-a's master died"
    );
    wait_for::<R>(
        "broker-b's stream is consumed while broker-a is down",
        || acked_b_after.is_subset(&deliveries.bodies()),
    )
    .await;
    assert!(
        !master_routed(&namesrv, &name, "broker-a"),
        "broker-a's master stayed down throughout"
    );
    eprintln!(
        "failover: the route lost broker-a's master {route_moved:?} after the kill; the first \
         message pulled from its slave arrived {from_slave_after:?} after it; the slave served \
         {:?} messages per queue; of {} messages broker-a acknowledged before the kill, {} \
         were not served by the slave (replication is asynchronous, and a Rust slave serves \
         only what it held when it started); they are consumed from the master once it is back",
        on_slave,
        acked_a_before.len(),
        unreplicated
    );

    // The master comes back: the consumer uses it again, and the group's offsets are committed
    // to it (Java's rule: offsets go to the master when it is in the route), past every
    // message of its queues.
    drop(revive);
    let revived_at = Instant::now();
    wait_for::<R>("the route lists broker-a's master again", || {
        master_routed(&namesrv, &name, "broker-a")
    })
    .await;
    // The stream reaches broker-a again before it stops.
    wait_for::<R>("the producer sends to broker-a again", || {
        stream
            .acked()
            .iter()
            .any(|a| a.broker == "broker-a" && a.at > revived_at)
    })
    .await;
    let (acked, failed) = stream.stop().await;
    let expected: BTreeSet<String> = backlog_a
        .iter()
        .chain(&backlog_b)
        .cloned()
        .chain(acked.iter().map(|a| a.body.clone()))
        .collect();
    wait_for::<R>("every acknowledged message is consumed", || {
        expected.is_subset(&deliveries.bodies())
    })
    .await;
    for (broker, addr) in [("broker-a", &master_a), ("broker-b", &master_b)] {
        wait_for::<R>(
            &format!("{broker}'s master holds the group's offsets past every message"),
            || {
                (0..QUEUES).all(|q| {
                    let end = max_offset(addr, &name, q);
                    end.is_ok() && group_offset(addr, &group, &name, q) == end.map(Some)
                })
            },
        )
        .await;
    }
    let back_on_master = revived_at.elapsed();
    let got = deliveries.snapshot();
    let unexpected: Vec<&String> = got
        .iter()
        .map(|d| &d.body)
        .filter(|b| !expected.contains(*b))
        .collect();
    assert!(unexpected.is_empty(), "bodies nobody sent: {unexpected:?}");
    for (broker, from_a) in [("broker-a", true), ("broker-b", false)] {
        for (queue, (count, deepest)) in steps_back(&got, from_a) {
            assert!(
                deepest < WINDOW && count <= WINDOW as usize,
                "{broker} queue {queue}: {count} deliveries went back, as far as {deepest} \
                 offsets (window {WINDOW})"
            );
        }
    }
    let duplicates = got.len() - got.iter().map(|d| &d.body).collect::<BTreeSet<_>>().len();
    eprintln!(
        "failover: back on broker-a's master {back_on_master:?} after its restart began; {} \
         messages acknowledged ({failed} sends failed), {} deliveries, {duplicates} duplicates",
        acked.len(),
        got.len()
    );
    consumer
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
}
