//! `rmq consume`: run a push consumer (on tokio or smol) and print each message as a JSON line,
//! with an optional live rate/lag line on a terminal ([`LiveLine`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use driver::{ConsumeOutcome, Messages, Runtime, ShutdownReport};
use futures_channel::{mpsc, oneshot};
use futures_util::StreamExt;
use futures_util::future::{self, Either};
pub use rocketmq_tokio::ConsumeFrom;
use serde_json::Value;

use crate::admin;
use crate::decode::message_json;
use crate::progress;

/// The async runtime the consumer runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RuntimeKind {
    /// `rocketmq-tokio` on a current-thread tokio runtime.
    #[default]
    Tokio,
    /// `rocketmq-smol` on smol's global executor.
    Smol,
}

impl std::str::FromStr for RuntimeKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tokio" => Ok(Self::Tokio),
            "smol" => Ok(Self::Smol),
            other => Err(format!("unknown runtime {other:?}: expected tokio or smol")),
        }
    }
}

/// What to consume.
#[derive(Clone, Debug)]
pub struct ConsumeOptions {
    /// The cluster: its name server, and the ACL credentials when it has ACL.
    pub cluster: admin::Cluster,
    /// The consumer group.
    pub group: String,
    /// The topic.
    pub topic: String,
    /// The tag expression.
    pub expression: String,
    /// Where a queue without a committed offset starts.
    pub from: ConsumeFrom,
    /// Stop after this many messages.
    pub count: Option<usize>,
    /// Stop after this long without a message.
    pub idle_exit: Option<Duration>,
    /// The runtime to consume on.
    pub runtime: RuntimeKind,
    /// Every member gets every message; offsets are kept in a local file.
    pub broadcast: bool,
    /// One delivery per queue at a time, in order, under the queue's broker lock.
    pub orderly: bool,
    /// At most this many messages a second (`None`: as fast as they come).
    pub rate: Option<u32>,
    /// Trace every message to `RMQ_SYS_TRACE_TOPIC` (Java's message trace).
    pub trace: bool,
    /// Pop consumption (RocketMQ 5.x brokers) with this invisibility time, instead of a
    /// classic push consumer: the broker shares messages, not queues, between members.
    pub pop: Option<Duration>,
    /// Ends the run gracefully when told to (`rmq` tells it on SIGINT and SIGTERM).
    pub stop: Option<Stop>,
}

/// A graceful stop for a running `consume`, for a signal handler to trigger: the run stops
/// printing, shuts the consumer down (final commits, queues handed over, the report) and
/// returns as if its count had been reached. Messages delivered but not printed are not
/// acknowledged, so the group gets them again.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    state: Arc<Mutex<StopState>>,
}

#[derive(Debug, Default)]
struct StopState {
    /// How many times a stop was asked for.
    asked: u32,
    /// The running consume's printing loop, once it runs.
    printer: Option<mpsc::UnboundedSender<Item>>,
}

impl Stop {
    /// Asks the run to stop. Returns false when a stop was asked for before (a second signal:
    /// the caller may exit at once).
    pub fn ask(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.asked += 1;
        if let Some(printer) = &state.printer {
            let _ = printer.unbounded_send(Item::Stop);
        }
        state.asked == 1
    }

    /// The run's printing loop listens on `printer` from now on (told at once when a stop
    /// was already asked for).
    fn attach(&self, printer: mpsc::UnboundedSender<Item>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.asked > 0 {
            let _ = printer.unbounded_send(Item::Stop);
        }
        state.printer = Some(printer);
    }
}

/// How a run ended.
#[derive(Clone, Debug)]
pub enum Summary {
    /// A classic consumer's shutdown: offsets committed, deliveries abandoned.
    Push(ShutdownReport),
    /// A pop consumer's: messages acked, deliveries abandoned (their messages come back to the
    /// group after their invisibility), popped messages released unhandled.
    Pop(driver::PopShutdownReport),
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Push(report) => write!(
                f,
                "committed {} queues, {} abandoned deliveries",
                report.committed.len(),
                report.abandoned
            ),
            Self::Pop(report) => write!(
                f,
                "acked {} messages, {} abandoned deliveries, {} released",
                report.acked, report.abandoned, report.released
            ),
        }
    }
}

/// Consumes until the count or the idle time is reached, calling `emit` with each message's
/// JSON object (and telling `live` about it, when given), then shuts down (committing offsets)
/// and returns the report.
pub fn consume(
    options: &ConsumeOptions,
    live: Option<&LiveLine>,
    emit: impl FnMut(Value),
) -> Result<Summary, String> {
    match options.runtime {
        RuntimeKind::Tokio => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("tokio runtime: {e}"))?;
            runtime.block_on(run::<rocketmq_tokio::TokioRuntime>(options, live, emit))
        }
        RuntimeKind::Smol => smol::block_on(run::<rocketmq_smol::SmolRuntime>(options, live, emit)),
    }
}

/// How long a message that was not printed waits before it is delivered again: longer than
/// `rmq consume` runs after its last message, so it is left for the next run.
const KEEP: Duration = Duration::from_secs(30);

/// A delivered message on its way to the printer, with the channel for the printer's verdict.
struct Printed {
    json: Value,
    store_host: String,
    queue_id: i32,
    queue_offset: i64,
    verdict: oneshot::Sender<bool>,
}

async fn run<R: Runtime>(
    options: &ConsumeOptions,
    live: Option<&LiveLine>,
    emit: impl FnMut(Value),
) -> Result<Summary, String> {
    match options.pop {
        Some(invisible) => run_pop::<R>(options, invisible, live, emit).await,
        None => run_push::<R>(options, live, emit).await,
    }
}

/// The handler both consumer kinds run: each message goes to the printer, and the delivery
/// succeeds only when every message of it was printed. A message that arrives after
/// `--count` was reached is not printed; `unprinted` is the outcome then (the classic
/// consumer keeps it for the next run, the pop consumer lets it come back to the group).
fn printing_handler(
    tx: mpsc::UnboundedSender<Item>,
    unprinted: ConsumeOutcome,
) -> impl Fn(Messages) -> future::BoxFuture<'static, ConsumeOutcome> + Send + Sync + 'static {
    move |messages: Messages| {
        let tx = tx.clone();
        Box::pin(async move {
            let mut outcome = ConsumeOutcome::Success;
            for message in messages {
                let (verdict, printed) = oneshot::channel();
                let item = Item::Message(Printed {
                    json: message_json(&message),
                    store_host: message.store_host().to_string(),
                    queue_id: message.queue_id(),
                    queue_offset: message.queue_offset(),
                    verdict,
                });
                if tx.unbounded_send(item).is_err() {
                    return unprinted;
                }
                if !printed.await.unwrap_or(false) {
                    outcome = unprinted;
                }
            }
            outcome
        })
    }
}

/// Prints what arrives on `rx` until the count, the idle time or a refusal ends the run;
/// returns how many were printed and the refusal.
async fn print_loop<R: Runtime>(
    options: &ConsumeOptions,
    rx: &mut mpsc::UnboundedReceiver<Item>,
    live: Option<&LiveLine>,
    emit: &mut impl FnMut(Value),
) -> (usize, Option<String>) {
    // Messages carry the address of the broker that stored them; the route names it.
    let mut broker_names = BrokerNames::new(&options.cluster, &options.topic);
    let runtime = R::default();
    let mut seen = 0;
    loop {
        if options.count.is_some_and(|count| seen >= count) {
            return (seen, None);
        }
        let next = match options.idle_exit {
            Some(idle) => {
                let timer = runtime.sleep_until(runtime.now() + idle);
                match future::select(rx.next(), timer).await {
                    Either::Left((next, _)) => next,
                    Either::Right(((), _)) => return (seen, None),
                }
            }
            None => rx.next().await,
        };
        let mut item = match next {
            None => return (seen, None),
            Some(Item::Denied(what)) => return (seen, Some(what)),
            Some(Item::Stop) => return (seen, None),
            Some(Item::Message(printed)) => printed,
        };
        if let Some(fields) = item.json.as_object_mut() {
            let name = broker_names.of(&item.store_host);
            fields.insert(
                "broker_name".to_owned(),
                name.map_or(Value::Null, Value::from),
            );
        }
        emit(item.json);
        if let Some(live) = live {
            live.record(&item.store_host, item.queue_id, item.queue_offset);
        }
        seen += 1;
        let _ = item.verdict.send(true);
    }
}

/// The error of a run that printed nothing and never reached the cluster, naming the last
/// failure.
fn never_reached(options: &ConsumeOptions, reach: &Reach) -> String {
    let last = reach
        .last_failure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    match last {
        Some(failure) => format!(
            "no queue of {} was ever assigned (name server {}); last failure: {failure}",
            options.topic, options.cluster.namesrv
        ),
        None => format!(
            "no queue of {} was ever assigned (name server {})",
            options.topic, options.cluster.namesrv
        ),
    }
}

async fn run_push<R: Runtime>(
    options: &ConsumeOptions,
    live: Option<&LiveLine>,
    mut emit: impl FnMut(Value),
) -> Result<Summary, String> {
    let (tx, mut rx) = mpsc::unbounded::<Item>();
    if let Some(stop) = &options.stop {
        stop.attach(tx.clone());
    }
    let mut builder = driver::PushConsumer::<R>::builder(options.group.clone())
        .name_server(options.cluster.namesrv.clone())
        .subscribe(options.topic.clone(), options.expression.clone())
        .consume_from(options.from);
    if options.broadcast {
        builder = builder.broadcasting();
    }
    if let Some(credentials) = &options.cluster.credentials {
        builder = builder.credentials(credentials.clone());
    }
    if let Some(namespace) = &options.cluster.namespace {
        builder = builder.namespace(namespace.clone());
    }
    if options.trace {
        builder = builder.trace();
    }
    if let Some(rate) = options.rate {
        builder = builder.rate_limit(driver::RateLimit::messages(rate));
    }
    if let Some(tls) = &options.cluster.tls {
        builder = builder.tls(tls.clone());
    }
    // Whether the cluster ever gave this consumer a queue, and the last request that failed:
    // a run that never got a queue ends with an error naming that failure, not a quiet exit 0.
    let reach = Arc::new(Reach::default());
    let observed = Arc::clone(&reach);
    // A refusal ends the run: retrying with the same credentials cannot succeed.
    let refusals = tx.clone();
    let consumer = builder
        .build()
        .map_err(|e| e.to_string())?
        .on_event(move |event| {
            observed.observe(event);
            if let Some(denied) = denial(event) {
                let _ = refusals.unbounded_send(Item::Denied(denied));
            }
        });
    // Each handler waits for the printer's verdict, so a message that arrives after `--count`
    // was reached is not acknowledged: it is kept (suspended, not sent to the retry topic), its
    // offset is not committed, and the next run gets it.
    let handler = printing_handler(tx, ConsumeOutcome::Suspend(KEEP));
    let running = if options.orderly {
        consumer.start_orderly(handler)
    } else {
        consumer.start_concurrently(handler)
    };
    let (seen, denied) = print_loop::<R>(options, &mut rx, live, &mut emit).await;
    // Deliveries still queued get no verdict and are redelivered later.
    drop(rx);
    let report = running.shutdown().await.map_err(|e| e.to_string())?;
    if let Some(denied) = denied {
        return Err(denied);
    }
    if seen == 0 && !reach.assigned.load(Ordering::Relaxed) {
        return Err(never_reached(options, &reach));
    }
    Ok(Summary::Push(report))
}

async fn run_pop<R: Runtime>(
    options: &ConsumeOptions,
    invisible: Duration,
    live: Option<&LiveLine>,
    mut emit: impl FnMut(Value),
) -> Result<Summary, String> {
    let (tx, mut rx) = mpsc::unbounded::<Item>();
    if let Some(stop) = &options.stop {
        stop.attach(tx.clone());
    }
    let mut builder = driver::PopConsumer::<R>::builder(options.group.clone())
        .name_server(options.cluster.namesrv.clone())
        .subscribe(options.topic.clone(), options.expression.clone())
        .invisible_time(invisible);
    if options.orderly {
        builder = builder.orderly();
    }
    if let Some(credentials) = &options.cluster.credentials {
        builder = builder.credentials(credentials.clone());
    }
    if let Some(namespace) = &options.cluster.namespace {
        builder = builder.namespace(namespace.clone());
    }
    if let Some(tls) = &options.cluster.tls {
        builder = builder.tls(tls.clone());
    }
    let reach = Arc::new(Reach::default());
    let observed = Arc::clone(&reach);
    let builder = builder.on_event(move |event| observed.observe_pop(event));
    // A message popped after `--count` was reached is not printed nor acked: it comes back to
    // the group after its retry delay, for another member or the next run.
    let handler = printing_handler(tx, ConsumeOutcome::ReconsumeLater);
    let running = builder
        .build()
        .and_then(|consumer| consumer.start(handler))
        .map_err(|e| e.to_string())?;
    let (seen, _) = print_loop::<R>(options, &mut rx, live, &mut emit).await;
    drop(rx);
    let report = running.shutdown().await.map_err(|e| e.to_string())?;
    if seen == 0 && !reach.assigned.load(Ordering::Relaxed) {
        return Err(never_reached(options, &reach));
    }
    Ok(Summary::Pop(report))
}

/// What reaches the printing loop: a message, a refusal that ends the run, or a stop.
enum Item {
    Message(Printed),
    Denied(String),
    Stop,
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Message(printed) => write!(f, "Message({})", printed.queue_offset),
            Self::Denied(what) => write!(f, "Denied({what})"),
            Self::Stop => f.write_str("Stop"),
        }
    }
}

/// The one line `rmq consume` ends with when a peer refuses it for want of permission.
fn denial(event: &driver::Event) -> Option<String> {
    let driver::Event::AccessDenied {
        addr,
        request,
        topic,
        group,
        code,
        remark,
        ..
    } = event
    else {
        return None;
    };
    let resource = match topic {
        Some(topic) => format!("topic {topic}, group {group}"),
        None => format!("group {group}"),
    };
    Some(format!(
        "access denied: {request} to {addr} ({resource}) refused with {code}: {} \
         (check --access-key/--secret-key and the user's permissions)",
        remark.as_deref().unwrap_or("no reason given")
    ))
}

/// What `rmq consume` learns from the consumer's events about reaching the cluster.
#[derive(Debug, Default)]
struct Reach {
    assigned: AtomicBool,
    last_failure: Mutex<Option<String>>,
}

impl Reach {
    fn observe_pop(&self, event: &driver::PopEvent) {
        match event {
            driver::PopEvent::Assigned { queues, .. } => self.assigned_some(queues),
            driver::PopEvent::RequestFailed {
                addr,
                request,
                reason,
            } => self.failed(addr, request, reason),
            _ => {}
        }
    }

    fn observe(&self, event: &driver::Event) {
        match event {
            driver::Event::Assigned(queues) => self.assigned_some(queues),
            driver::Event::RequestFailed {
                addr,
                request,
                reason,
            } => self.failed(addr, request, reason),
            _ => {}
        }
    }

    fn assigned_some(&self, queues: &[driver::MessageQueue]) {
        if !queues.is_empty() {
            self.assigned.store(true, Ordering::Relaxed);
        }
    }

    fn failed(&self, addr: &str, request: &str, reason: &driver::FailureReason) {
        *self
            .last_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner) =
            Some(format!("{request} to {addr}: {reason:?}"));
    }
}

/// What the consumer has read so far, shared with the thread that draws the live line.
#[derive(Debug, Default)]
struct Seen {
    count: AtomicU64,
    /// Per (broker address, queue id): the offset after the last message printed.
    next: Mutex<BTreeMap<(String, i32), i64>>,
}

/// The live status line of `rmq consume`: once a second, the messages printed, the rate over
/// the last second, and the lag (messages stored but not yet read: per queue, the broker's
/// max offset minus the offset after the last message read, or minus the committed offset for a
/// queue not read from yet). Drawn on standard error by a thread of its own; erased by
/// [`LiveLine::stop`].
#[derive(Debug)]
pub struct LiveLine {
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveLine {
    /// Starts drawing for `options`' group and topic.
    pub fn start(options: &ConsumeOptions) -> Self {
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (cluster, group, topic) = (
            options.cluster.clone(),
            options.group.clone(),
            options.topic.clone(),
        );
        let thread = {
            let seen = Arc::clone(&seen);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut last = (Instant::now(), 0);
                while !sleep_unless_stopped(&stop, Duration::from_secs(1)) {
                    let count = seen.count.load(Ordering::Relaxed);
                    let now = Instant::now();
                    let rate = (count - last.1) as f64 / now.duration_since(last.0).as_secs_f64();
                    last = (now, count);
                    let lag = lag(&cluster, &group, &topic, &seen)
                        .map_or_else(|e| format!("? ({e})"), |lag| lag.to_string());
                    progress::draw(&format!("consumed {count} ({rate:.0} msg/s), lag {lag}"));
                }
                progress::clear();
            })
        };
        Self {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// Notes that the message at `queue_offset` of queue `queue_id` on broker `store_host` was
    /// printed.
    pub fn record(&self, store_host: &str, queue_id: i32, queue_offset: i64) {
        self.seen.count.fetch_add(1, Ordering::Relaxed);
        let mut next = self
            .seen
            .next
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = next.entry((store_host.to_owned(), queue_id)).or_default();
        *entry = (*entry).max(queue_offset + 1);
    }

    /// Stops drawing and erases the line.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Sleeps `duration` in short steps; true as soon as `stop` is set.
fn sleep_unless_stopped(stop: &AtomicBool, duration: Duration) -> bool {
    let step = Duration::from_millis(50);
    let deadline = Instant::now() + duration;
    while Instant::now() < deadline {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        std::thread::sleep(step);
    }
    stop.load(Ordering::Relaxed)
}

/// Broker names by address, from the topic's route; read again when an address is new.
struct BrokerNames {
    cluster: admin::Cluster,
    topic: String,
    by_addr: BTreeMap<String, String>,
}

impl BrokerNames {
    fn new(cluster: &admin::Cluster, topic: &str) -> Self {
        let mut names = Self {
            cluster: cluster.clone(),
            topic: topic.to_owned(),
            by_addr: BTreeMap::new(),
        };
        names.refresh();
        names
    }

    fn refresh(&mut self) {
        // Without a route the name stays unknown (`null`), which is no reason to stop consuming.
        if let Ok(route) = admin::route(&self.cluster, &self.topic) {
            for broker in route.broker_datas {
                for addr in broker.broker_addrs.into_values() {
                    self.by_addr.insert(addr, broker.broker_name.clone());
                }
            }
        }
    }

    /// The name of the broker at `addr`.
    fn of(&mut self, addr: &str) -> Option<String> {
        if !self.by_addr.contains_key(addr) {
            self.refresh();
        }
        self.by_addr.get(addr).cloned()
    }
}

/// The lag of the topic for the live line (see [`LiveLine`]).
fn lag(
    cluster: &admin::Cluster,
    group: &str,
    topic: &str,
    seen: &Seen,
) -> Result<i64, admin::AdminError> {
    let route = admin::route(cluster, topic)?;
    let queues = admin::offsets(cluster, group, topic)?;
    let next = seen.next.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(queues
        .iter()
        .map(|queue| {
            let read = route
                .master_addr(&queue.broker_name)
                .and_then(|addr| next.get(&(addr.to_owned(), queue.queue_id)))
                .copied();
            let start = queue.committed_offset.unwrap_or(queue.min_offset);
            (queue.max_offset - read.map_or(start, |read| read.max(start))).max(0)
        })
        .sum())
}
