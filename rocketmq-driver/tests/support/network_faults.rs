//! Network faults between a push consumer and the real local cluster, through the project's
//! fault proxy (`rocketmq_tests::fault_proxy`): the consumer reaches the name server and the
//! broker only through proxies on loopback, a producer sends a steady stream to the broker
//! directly, and a schedule of faults runs while it consumes. Every schedule must end with every
//! message consumed (duplicates allowed: at-least-once), and reports the consumer's recovery
//! time: from the end of each fault to the first delivery of a message sent after the fault
//! began (messages cached before it do not count).
//!
//! The consumer is routed through the proxies by a runtime wrapper ([`Proxied`]) that connects
//! to a proxy wherever the route says the broker is: the Java 4.9 broker binds every interface
//! and has no bind setting, so a proxy cannot take over its advertised address on loopback.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::broker_scenario::{Topic, body_of, builder_at, start_forwarding};
use driver::BoxFuture;
use driver::prelude::*;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::fault_proxy::{Fault, FaultProxy};
use rocketmq_tests::{route, unique};

/// Where [`Proxied`] connects instead: upstream address → proxy address.
static REDIRECTS: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
/// One scenario at a time per test binary: they share [`REDIRECTS`].
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Connections to `upstream` go to `proxy` from now on (`None`: to `upstream` again).
fn redirect(upstream: &str, proxy: Option<&str>) {
    let mut redirects = REDIRECTS.lock().unwrap_or_else(PoisonError::into_inner);
    match proxy {
        Some(proxy) => redirects.insert(upstream.to_owned(), proxy.to_owned()),
        None => redirects.remove(upstream),
    };
}

/// Runtime `R`, except that connections to a redirected address go to its proxy.
#[derive(Clone, Default)]
pub(crate) struct Proxied<R>(R);

impl<R: Runtime> Runtime for Proxied<R> {
    type Stream = R::Stream;

    fn now(&self) -> Instant {
        self.0.now()
    }

    fn sleep_until(&self, deadline: Instant) -> BoxFuture<()> {
        self.0.sleep_until(deadline)
    }

    fn spawn(&self, task: BoxFuture<()>) {
        self.0.spawn(task);
    }

    fn connect(&self, addr: String) -> BoxFuture<io::Result<Self::Stream>> {
        let target = REDIRECTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&addr)
            .cloned()
            .unwrap_or(addr);
        self.0.connect(target)
    }

    fn poll_read_in_place(
        stream: std::pin::Pin<&mut Self::Stream>,
        cx: &mut std::task::Context<'_>,
        buf: &mut driver::bytes::BytesMut,
    ) -> Option<std::task::Poll<io::Result<usize>>> {
        R::poll_read_in_place(stream, cx, buf)
    }
}

/// Rounds of messages the producer sends, [`PER_ROUND`] each, [`ROUND_EVERY`] apart.
const ROUNDS: usize = 24;
const PER_ROUND: usize = 20;
const ROUND_EVERY: Duration = Duration::from_millis(500);
/// How long consuming everything may take, faults included.
const CONSUME_TIMEOUT: Duration = Duration::from_secs(120);

/// A fault schedule.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code, reason = "smol's binary runs the liveness schedules only")]
pub(crate) enum Schedule {
    /// Every connection to the broker and the name server reset, every 2 s, five times.
    Resets,
    /// Every connection to the broker dies without a FIN (a firewall that dropped its state),
    /// for good; new connections work.
    BlackHole,
    /// Nothing gets through to the broker for 8 s, longer than the 3 s request timeout, new
    /// connections included; then everything queued is delivered.
    Stall,
    /// For 6 s every write either way is split into 1-byte pieces 1 ms apart.
    Trickle,
    /// The name server is unreachable for 20 s (its connection black-holed, new ones reset)
    /// while the broker is fine, with routes refreshed every 5 s.
    NameServerDown,
}

impl Schedule {
    /// The longest recovery this schedule allows, and why.
    fn bound(self) -> Duration {
        Duration::from_secs(match self {
            // The reconnect backoff (1 s), then a pull; one the broker refuses because the new
            // connection's heartbeat is not handled yet goes again once it is answered, not
            // after the 1 s pull backoff.
            Self::Resets => 3,
            // The liveness probe: 10 s quiet, a 5 s check period, a 3 s probe timeout; then a
            // reconnect and a pull.
            Self::BlackHole => 25,
            // Requests on the stalled connections time out and it is replaced; the last one
            // answers as soon as the stall ends, or a new one opens within the backoff.
            Self::Stall => 12,
            // Whatever piece of a response was trickling goes at once.
            Self::Trickle => 5,
            // Nothing depends on the name server once routes are known.
            Self::NameServerDown => 3,
        })
    }
}

/// A fault as it happened: what, when it began, when it ended.
struct Injected {
    what: String,
    began: Instant,
    ended: Instant,
}

/// Runs `schedule` on `broker` and `namesrv` (the proxies), from 3 s in; returns the faults.
fn run_schedule(schedule: Schedule, broker: &FaultProxy, namesrv: &FaultProxy) -> Vec<Injected> {
    thread::sleep(Duration::from_secs(3));
    let mut faults = Vec::new();
    let mut record = |what: String, began: Instant| {
        faults.push(Injected {
            what,
            began,
            ended: Instant::now(),
        });
    };
    match schedule {
        Schedule::Resets => {
            for i in 0..5 {
                let began = Instant::now();
                let reset = broker.reset_all() + namesrv.reset_all();
                record(format!("reset #{i} ({reset} connections)"), began);
                thread::sleep(Duration::from_secs(2));
            }
        }
        Schedule::BlackHole => {
            let began = Instant::now();
            let holed = broker.black_hole();
            assert!(
                holed > 0,
                "the consumer has a broker connection to black-hole"
            );
            record(format!("black hole ({holed} connections)"), began);
        }
        Schedule::Stall => {
            let began = Instant::now();
            broker.set(Fault::Stall);
            thread::sleep(Duration::from_secs(8));
            broker.set(Fault::None);
            record("8 s stall".to_owned(), began);
        }
        Schedule::Trickle => {
            let began = Instant::now();
            let trickle = Fault::Trickle {
                chunk: 1,
                delay: Duration::from_millis(1),
            };
            broker.set(trickle);
            namesrv.set(trickle);
            thread::sleep(Duration::from_secs(6));
            broker.set(Fault::None);
            namesrv.set(Fault::None);
            record("6 s of 1-byte writes".to_owned(), began);
        }
        Schedule::NameServerDown => {
            let began = Instant::now();
            namesrv.set(Fault::Refuse);
            namesrv.black_hole();
            // The consumer goes on meanwhile: the fault "ends" at once for the recovery
            // measure, which then is the longest the consumer stopped consuming.
            record("name server unreachable".to_owned(), began);
            thread::sleep(Duration::from_secs(20));
            namesrv.set(Fault::None);
        }
    }
    faults
}

/// Sends [`ROUNDS`] rounds to `topic`; returns each body with when it was sent.
fn produce(topic: &Topic) -> BTreeMap<String, Instant> {
    let mut sent = BTreeMap::new();
    for round in 0..ROUNDS {
        let at = Instant::now();
        for body in topic.send(&format!("r{round}"), PER_ROUND, None) {
            sent.insert(body, at);
        }
        thread::sleep(ROUND_EVERY);
    }
    sent
}

/// Consumes a steady stream through the proxies while `schedule` runs, on runtime `R`:
/// everything is consumed, and each fault's recovery is within the schedule's bound.
#[allow(
    clippy::await_holding_lock,
    reason = "the lock serializes whole scenarios, each on its own test thread and runtime"
)]
pub(crate) async fn consumes_everything_through<R: Runtime>(prefix: &str, schedule: Schedule) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let topic = Topic::create(prefix, 4);
    let broker_addrs: BTreeSet<String> = route(&topic.namesrv, &topic.name)
        .expect("the new topic is routed")
        .broker_datas
        .iter()
        .flat_map(|b| b.broker_addrs.values().cloned())
        .collect();
    assert_eq!(
        broker_addrs.len(),
        1,
        "the local cluster has one broker: {broker_addrs:?}"
    );
    let broker_addr = broker_addrs.first().expect("one broker").clone();
    let broker = Arc::new(FaultProxy::start(&broker_addr));
    let namesrv = Arc::new(FaultProxy::start(&topic.namesrv));
    redirect(&broker_addr, Some(broker.addr()));

    let consumer = builder_at::<Proxied<R>>(
        namesrv.addr(),
        &topic.name,
        &unique("faults"),
        "*",
        ConsumeFrom::First,
    )
    .configure(|c| {
        c.pull_batch_size = 8;
        c.route_refresh_interval = Duration::from_secs(5);
    })
    .build()
    .expect("the consumer's configuration is valid");
    let (running, mut bodies) =
        start_forwarding(consumer, |message| (body_of(message), Instant::now()));

    let producer_topic = Topic::at(&topic.namesrv, topic.broker(), &topic.name, 4);
    let producer = thread::spawn(move || produce(&producer_topic));
    let faults = {
        let (broker, namesrv) = (Arc::clone(&broker), Arc::clone(&namesrv));
        thread::spawn(move || run_schedule(schedule, &broker, &namesrv))
    };

    let runtime = R::default();
    let mut deadline = runtime.sleep_until(runtime.now() + CONSUME_TIMEOUT);
    let mut delivered: BTreeMap<String, Instant> = BTreeMap::new();
    let mut deliveries = 0usize;
    let expected = ROUNDS * PER_ROUND;
    while delivered.len() < expected {
        match future::select(bodies.next(), deadline.as_mut()).await {
            Either::Left((Some((body, at)), _)) => {
                deliveries += 1;
                delivered.entry(body).or_insert(at);
            }
            Either::Left((None, _)) => panic!("the handler was dropped while consuming"),
            Either::Right(((), _)) => panic!(
                "{schedule:?}: only {} of {expected} messages consumed within {CONSUME_TIMEOUT:?}; \
                 stats: {:?}",
                delivered.len(),
                running.stats().await
            ),
        }
    }
    let sent = producer.join().expect("the producer thread ends");
    let faults = faults.join().expect("the fault schedule ends");
    let missing: Vec<_> = sent
        .keys()
        .filter(|b| !delivered.contains_key(*b))
        .collect();
    assert!(
        missing.is_empty(),
        "{schedule:?}: never consumed: {missing:?}"
    );
    assert_eq!(
        delivered.len(),
        sent.len(),
        "{schedule:?}: only the sent bodies arrive"
    );

    if let Schedule::NameServerDown = schedule {
        let last = delivered.values().max().expect("messages were delivered");
        let began = faults
            .first()
            .expect("the schedule injected its fault")
            .began;
        assert!(
            *last < began + Duration::from_secs(20),
            "{schedule:?}: everything is consumed while the name server is unreachable, from \
             the cached route (the last message arrived {:?} after it went)",
            last.saturating_duration_since(began)
        );
    }
    let bound = schedule.bound();
    let mut too_slow = Vec::new();
    for fault in &faults {
        let recovered = delivered
            .iter()
            .filter(|(body, _)| sent.get(*body).is_some_and(|at| *at >= fault.began))
            .map(|(_, at)| *at)
            .min()
            .unwrap_or_else(|| panic!("{schedule:?}: nothing sent after {} arrived", fault.what));
        let recovery = recovered.saturating_duration_since(fault.ended);
        eprintln!(
            "{schedule:?}: {}: recovered {recovery:?} after it ended ({} of {expected} \
             messages, {deliveries} deliveries, {} connections to the broker proxy)",
            fault.what,
            delivered.len(),
            broker.accepted()
        );
        if recovery > bound {
            too_slow.push(format!("{}: {recovery:?}", fault.what));
        }
    }
    assert!(
        too_slow.is_empty(),
        "{schedule:?}: the first message sent after each of these faults began arrived longer \
         than {bound:?} after it ended: {too_slow:?}"
    );
    running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    redirect(&broker_addr, None);
}

/// A producer whose broker connection dies without a FIN (through the proxy, black-holed) does
/// not time out on it for ever: after `close_after_timeouts` (3) sends in a row time out on it,
/// the connection is dropped and the next send opens a new one, which works. Without the rule
/// every send would time out on the dead connection.
#[allow(
    clippy::await_holding_lock,
    reason = "the lock serializes whole scenarios, each on its own test thread and runtime"
)]
pub(crate) async fn producer_replaces_a_dead_connection<R: Runtime>(prefix: &str) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let topic = Topic::create(prefix, 4);
    let broker = FaultProxy::start(topic.broker());
    let namesrv = FaultProxy::start(&topic.namesrv);
    redirect(topic.broker(), Some(broker.addr()));
    let producer = driver::Producer::<Proxied<R>>::builder(unique("faults-producer"))
        .name_server(namesrv.addr())
        .build()
        .expect("the producer's configuration is valid");
    producer
        .send(&topic.name, "before")
        .await
        .expect("a send before the fault");
    assert_eq!(broker.accepted(), 1, "one connection to the broker");

    assert_eq!(broker.black_hole(), 1, "the producer's connection dies");
    let holed = Instant::now();
    let mut failed = 0;
    let mut sent_after = None;
    for i in 0..6 {
        match producer.send(&topic.name, format!("after/{i}")).await {
            Ok(_) => {
                sent_after = Some(holed.elapsed());
                break;
            }
            Err(e) => {
                eprintln!("send {i} after the black hole: {e}");
                failed += 1;
            }
        }
    }
    let sent_after = sent_after.unwrap_or_else(|| {
        panic!(
            "no send worked after the black hole ({failed} failed, {} connections)",
            broker.accepted()
        )
    });
    eprintln!(
        "producer: a send worked {sent_after:?} after the black hole, after {failed} timed out; \
         {} connections to the broker proxy",
        broker.accepted()
    );
    assert!(
        failed <= 3,
        "at most close_after_timeouts sends time out on the dead connection: {failed}"
    );
    assert_eq!(
        broker.accepted(),
        2,
        "one new connection replaced the dead one"
    );
    redirect(topic.broker(), None);
}

/// A consumer whose broker connection is reset 100 ms before it shuts down (the Rust broker
/// dropped ours so under the whole suite's load): its final commits meet the broker's address
/// in the reconnect backoff, wait it out, go over a new connection, and every queue's offset
/// is stored at the broker, as the report says. Before, they failed at once and were reported
/// uncommitted (the next owner would consume again everything since the last periodic
/// commit).
#[allow(
    clippy::await_holding_lock,
    reason = "the lock serializes whole scenarios, each on its own test thread and runtime"
)]
pub(crate) async fn shutdown_commits_after_a_reset<R: Runtime>(prefix: &str) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    const QUEUES: i32 = 4;
    let topic = Topic::create(prefix, QUEUES);
    let broker = FaultProxy::start(topic.broker());
    redirect(topic.broker(), Some(broker.addr()));
    let group = unique("reset-shutdown");
    let consumer =
        builder_at::<Proxied<R>>(&topic.namesrv, &topic.name, &group, "*", ConsumeFrom::First)
            // No periodic commit meanwhile: the final commits are all the broker will have.
            .configure(|c| c.persist_interval = Duration::from_secs(600))
            .build()
            .expect("the consumer's configuration is valid");
    let (running, mut bodies) = start_forwarding(consumer, body_of);
    let sent = topic.send("before-reset", 40, None);
    let runtime = R::default();
    let mut deadline = runtime.sleep_until(runtime.now() + CONSUME_TIMEOUT);
    let mut consumed = BTreeSet::new();
    while !sent.is_subset(&consumed) {
        match future::select(bodies.next(), deadline.as_mut()).await {
            Either::Left((Some(body), _)) => {
                consumed.insert(body);
            }
            Either::Left((None, _)) => panic!("the handler was dropped while consuming"),
            Either::Right(((), _)) => panic!(
                "{} of {} consumed within {CONSUME_TIMEOUT:?}",
                consumed.len(),
                sent.len()
            ),
        }
    }

    let reset = broker.reset_all();
    assert!(reset > 0, "the consumer was connected through the proxy");
    runtime
        .sleep_until(runtime.now() + Duration::from_millis(100))
        .await;
    let report = running
        .shutdown()
        .await
        .expect("the consumer shuts down and reports");
    redirect(topic.broker(), None);
    assert!(report.uncommitted.is_empty(), "{report:?}");
    for queue in 0..QUEUES {
        let stored =
            super::broker_scenario::group_offset(topic.broker(), &group, &topic.name, queue)
                .expect("the broker answers");
        let end = super::broker_scenario::max_offset(topic.broker(), &topic.name, queue)
            .expect("the broker answers");
        assert_eq!(
            stored,
            Some(end),
            "queue {queue}: the broker stores the final commit"
        );
        assert!(
            report
                .committed
                .iter()
                .any(|(mq, offset)| mq.topic() == topic.name
                    && mq.queue_id() == queue
                    && *offset == end),
            "queue {queue} at {end} in the report: {report:?}"
        );
    }
    assert!(
        broker.accepted() >= 2,
        "the final commits went over a new connection ({} accepted)",
        broker.accepted()
    );
}
