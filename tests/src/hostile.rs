//! Hostile peers: a fake name server and a fake broker on loopback that speak just enough of
//! the remoting protocol to lead a push consumer to the request they then answer badly
//! (issue 11, "hostile peers").
//!
//! Std threads and blocking sockets only, no async runtime, so the tests of both adapters
//! (tokio and smol) can use them. A [`Peer`] listens on `127.0.0.1:0`, counts the connections
//! it accepts (with when each was accepted, when it misbehaved on it and when the client hung
//! up) and serves one [`Role`] in one [`Mode`]:
//!
//! - the name server answers `GET_ROUTEINFO_BY_TOPIC` for its topic with one queue on one
//!   broker, at the address it was given (a fake broker, or [`closed_port`]);
//! - the broker answers heartbeats, the consumer list (the client id taken from the heartbeat),
//!   offset queries and commits, and pulls.
//!
//! The request a mode spoils is the route for a name server and the pull for a broker (the
//! *trigger*); everything before it is answered correctly, with frames from `rocketmq-proto`'s
//! encoder. The hostile bytes are written by hand. After a mode that breaks the framing the
//! peer answers nothing more on that connection and waits for the client to close it.
//!
//! Every loop here is bounded by the peer's stop flag (set when the [`Peer`] is dropped) and by
//! socket timeouts, so a test that fails never leaves a thread spinning.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use proto::body::{BrokerData, ConsumerListBody, HeartbeatData, QueueData, TopicRouteData};
use proto::headers::{
    GetMaxOffsetResponse, GetMinOffsetResponse, GetRouteInfoRequest, PullMessageRequest,
    PullMessageResponse, QueryConsumerOffsetResponse, UpdateConsumerOffsetRequest,
};
use proto::message::{StoredMessage, encode_stored};
use proto::{Command, CommandHeader, FrameDecoder, HeaderEncoding, RequestCode, ResponseCode};

/// The broker name the fake name server's routes give the fake broker.
pub const BROKER_NAME: &str = "hostile-broker";

/// The body of the one good record a [`Mode::CorruptBatch`] broker serves, at offset 0.
pub const GOOD_BODY: &[u8] = b"the only good record";

/// The 4-byte length prefix [`Mode::HugeLength`] announces: 2 GiB. As Java's `int` (the frame
/// decoder reads it signed, as `NettyDecoder` does) it is negative.
pub const HUGE_LENGTH: u32 = 1 << 31;

/// Filler [`Mode::HugeLength`] streams after its prefix, at most: well above any memory budget,
/// so a client that buffered towards the announced frame would show it in its RSS.
pub const FILLER_CAP: u64 = 256 * 1024 * 1024;

/// How a peer misbehaves on its trigger request (the route for a name server, the pull for a
/// broker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Answers everything correctly (a broker holds each pull 1 s, then answers
    /// `PULL_NOT_FOUND`).
    Honest,
    /// Junk instead of the answer: a length prefix that fits (256 bytes), then 256 bytes of
    /// pseudo-random junk where the JSON header should be. (Junk whose first four bytes read as
    /// a huge length is what [`Mode::HugeLength`] covers.)
    Garbage,
    /// A length prefix of about 2 GiB, then zero bytes as fast as the client takes them, up
    /// to [`FILLER_CAP`] or until it stops reading. The prefix alternates by connection:
    /// [`HUGE_LENGTH`] (2 GiB: negative as Java's `int`) on the first, third, …, and
    /// `HUGE_LENGTH - 1` (the largest positive `int`, so above the frame limit rather than
    /// below zero) on the others, so both of the decoder's checks are met.
    HugeLength,
    /// A 16-byte frame whose header-length word says 16 MiB − 1.
    HeaderBeyondFrame,
    /// The correct answer, one byte per second.
    Trickle,
    /// Broker only: a `SUCCESS` pull answer whose body is a corrupt message batch. The pull
    /// at offset 0 gets a good record (offset 0, body [`GOOD_BODY`]) followed by a bad one
    /// (offset 1); a pull at any other offset gets just a bad record there. The bad records
    /// alternate between a bad magic code and a record cut short (`TOTALSIZE` larger than the
    /// bytes that follow). (A bad `BODYCRC` alone is not in the rotation: the consumer does
    /// not check it, as Java's does not; see `DecodeOptions::verify_crc`.)
    CorruptBatch,
}

/// What the peer is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// A name server that routes `topic` (one read and write queue) to broker [`BROKER_NAME`]
    /// at `broker` (`host:port`), and knows no other topic.
    NameServer {
        /// The one topic it routes.
        topic: String,
        /// The broker master's address in that route.
        broker: String,
    },
    /// A broker serving one queue (id 0) of every topic asked for.
    Broker,
}

/// One connection the peer accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// When it was accepted.
    pub accepted: Instant,
    /// When the peer started misbehaving on it (wrote the first hostile byte).
    pub misbehaved: Option<Instant>,
    /// When the client closed it (the peer read end of stream or a reset, or a write failed).
    pub closed_by_client: Option<Instant>,
    /// Bytes written after the hostile start that the client took: [`Mode::HugeLength`]'s
    /// filler, [`Mode::Trickle`]'s bytes.
    pub hostile_bytes: u64,
}

/// What a peer saw, for the test to check.
#[derive(Debug, Default)]
struct Log {
    connections: Vec<ConnectionRecord>,
    /// Every request's code, with when it arrived.
    requests: Vec<(Instant, RequestCode)>,
    /// The client ids of the heartbeats the broker got.
    client_ids: BTreeSet<String>,
    /// Every offset committed with `UPDATE_CONSUMER_OFFSET`.
    commits: Vec<i64>,
    /// Corrupt batches served ([`Mode::CorruptBatch`]).
    corrupt_batches: u64,
}

/// State the accept thread and every connection thread share.
struct Shared {
    role: Role,
    mode: Mode,
    stop: AtomicBool,
    log: Mutex<Log>,
}

impl Shared {
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        // A connection thread that panicked (a bug in this file) leaves the log as it was.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn record(&self, conn: usize, change: impl FnOnce(&mut ConnectionRecord)) {
        if let Some(record) = self.log().connections.get_mut(conn) {
            change(record);
        }
    }
}

/// A fake name server or broker listening on loopback; stops (and joins its threads) when
/// dropped.
pub struct Peer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Peer {
    /// Starts a peer playing `role` in `mode` on `127.0.0.1` (an ephemeral port).
    pub fn start(role: Role, mode: Mode) -> Self {
        assert!(
            !(mode == Mode::CorruptBatch && matches!(role, Role::NameServer { .. })),
            "a corrupt message batch is a broker's answer; a name server has none"
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port is free to bind");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        listener
            .set_nonblocking(true)
            .expect("a listener can be made non-blocking");
        let shared = Arc::new(Shared {
            role,
            mode,
            stop: AtomicBool::new(false),
            log: Mutex::default(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("hostile-peer-{}", addr.port()))
                .spawn(move || accept_loop(&listener, &shared))
                .expect("a thread can be spawned for the peer")
        };
        Self {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// Its address, `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// Every connection accepted so far, in order.
    pub fn connections(&self) -> Vec<ConnectionRecord> {
        self.shared.log().connections.clone()
    }

    /// Connections accepted in `from..to`.
    pub fn accepted_between(&self, from: Instant, to: Instant) -> usize {
        self.shared
            .log()
            .connections
            .iter()
            .filter(|c| (from..to).contains(&c.accepted))
            .count()
    }

    /// How many requests with `code` arrived.
    pub fn requests(&self, code: RequestCode) -> usize {
        self.shared
            .log()
            .requests
            .iter()
            .filter(|(_, c)| *c == code)
            .count()
    }

    /// Every request code seen, in order of arrival.
    pub fn request_log(&self) -> Vec<(Instant, RequestCode)> {
        self.shared.log().requests.clone()
    }

    /// The client ids the broker's heartbeats carried.
    pub fn client_ids(&self) -> BTreeSet<String> {
        self.shared.log().client_ids.clone()
    }

    /// Every offset committed with `UPDATE_CONSUMER_OFFSET`, in order.
    pub fn commits(&self) -> Vec<i64> {
        self.shared.log().commits.clone()
    }

    /// Corrupt batches served so far ([`Mode::CorruptBatch`]).
    pub fn corrupt_batches(&self) -> u64 {
        self.shared.log().corrupt_batches
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(acceptor) = self.acceptor.take() {
            // A thread that panicked already failed whatever it was doing; dropping must not
            // panic again (it may run while a failed test unwinds).
            let _ = acceptor.join();
        }
    }
}

/// A fake name server routing one topic to a fake broker, each playing its own [`Mode`] (the
/// usual set-up: one of the two hostile, the other honest).
pub struct Pair {
    /// The name server; clients start here.
    pub name_server: Peer,
    /// The broker its route names.
    pub broker: Peer,
}

impl Pair {
    /// Starts a broker in `broker` mode, then a name server in `name_server` mode routing
    /// `topic` to it.
    pub fn start(topic: &str, name_server: Mode, broker: Mode) -> Self {
        let broker = Peer::start(Role::Broker, broker);
        let name_server = Peer::start(
            Role::NameServer {
                topic: topic.to_owned(),
                broker: broker.addr(),
            },
            name_server,
        );
        Self {
            name_server,
            broker,
        }
    }
}

/// An address on loopback where nothing listens: a listener bound to an ephemeral port, its
/// port taken, then dropped. (Another process could bind it in between; on a test machine
/// that is rare, and a peer there would show up as accepted connections, not as a pass.)
pub fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port is free to bind");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    drop(listener);
    addr.to_string()
}

/// The warnings and errors the process logs through `tracing`, captured from the first call
/// of [`capture_logs`] on (a global subscriber, so one per process: the hostile-peer test
/// binaries have no other).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

/// Captured log text kept at most; later lines are dropped, so a chatty failure cannot grow
/// the memory the scenarios measure.
const LOG_CAP: usize = 1024 * 1024;

impl Logs {
    /// The captured lines that contain every one of `words`.
    pub fn lines_with(&self, words: &[&str]) -> Vec<String> {
        let text = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&text)
            .lines()
            .filter(|line| words.iter().all(|w| line.contains(w)))
            .map(str::to_owned)
            .collect()
    }
}

impl Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut text = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let room = LOG_CAP.saturating_sub(text.len());
        text.extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs (once) a global `tracing` subscriber that keeps every warning and error as text,
/// and returns what it captured. Panics if another global subscriber was installed first.
pub fn capture_logs() -> Logs {
    static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs::default();
        let sink = logs.clone();
        tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .with_max_level(tracing_subscriber::filter::LevelFilter::WARN)
            .try_init()
            .expect("no other global tracing subscriber in a hostile-peer test binary");
        logs
    })
    .clone()
}

/// How often blocked threads look at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// Accepts connections until the peer stops; each is served on a thread of its own, joined
/// before this returns.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut served = Vec::new();
    while !shared.stopped() {
        match listener.accept() {
            Ok((stream, _)) => {
                let conn = {
                    let mut log = shared.log();
                    log.connections.push(ConnectionRecord {
                        accepted: Instant::now(),
                        misbehaved: None,
                        closed_by_client: None,
                        hostile_bytes: 0,
                    });
                    log.connections.len() - 1
                };
                let shared = Arc::clone(shared);
                let spawned = std::thread::Builder::new()
                    .name(format!("hostile-conn-{conn}"))
                    .spawn(move || serve(stream, conn, &shared));
                match spawned {
                    Ok(handle) => served.push(handle),
                    // The connection drops with the closure: the client sees it closed.
                    Err(e) => eprintln!("hostile peer: no thread for connection {conn}: {e}"),
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) => {
                eprintln!("hostile peer: accept failed: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
    for handle in served {
        let _ = handle.join();
    }
}

/// What the connection does after a request.
enum Next {
    /// Read the next request.
    Read,
    /// The framing is broken: answer nothing more, wait for the client to close.
    Hold,
    /// The client is gone.
    Closed,
}

/// Serves one connection until the client closes it or the peer stops.
fn serve(mut stream: TcpStream, conn: usize, shared: &Shared) {
    // Accepted sockets may inherit the listener's non-blocking mode on some systems.
    let configured = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(POLL)))
        .and_then(|()| stream.set_write_timeout(Some(Duration::from_secs(1))))
        .and_then(|()| stream.set_nodelay(true));
    if let Err(e) = configured {
        eprintln!("hostile peer: cannot configure connection {conn}: {e}");
        return;
    }
    let mut decoder = FrameDecoder::default();
    let mut buf = BytesMut::new();
    let mut chunk = vec![0; 64 * 1024];
    while !shared.stopped() {
        match read_some(&mut stream, &mut chunk) {
            Got::Data(n) => buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Got::Idle => continue,
            Got::Closed => {
                shared.record(conn, |r| r.closed_by_client = Some(Instant::now()));
                return;
            }
        }
        loop {
            let command = match decoder.decode(&mut buf) {
                Ok(Some(command)) => command,
                Ok(None) => break,
                Err(e) => {
                    // The client under test sent something that is not a frame: a client bug
                    // the test will see as this connection closing.
                    eprintln!("hostile peer: connection {conn}: bad frame from the client: {e}");
                    return;
                }
            };
            match handle(&mut stream, conn, shared, &command) {
                Next::Read => {}
                Next::Hold => {
                    hold(&mut stream, conn, shared);
                    return;
                }
                Next::Closed => {
                    shared.record(conn, |r| r.closed_by_client = Some(Instant::now()));
                    return;
                }
            }
        }
    }
}

/// One read's outcome.
enum Got {
    Data(usize),
    /// Nothing within [`POLL`].
    Idle,
    /// End of stream, or the connection was reset.
    Closed,
}

fn read_some(stream: &mut TcpStream, chunk: &mut [u8]) -> Got {
    match stream.read(chunk) {
        Ok(0) => Got::Closed,
        Ok(n) => Got::Data(n),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Got::Idle,
        Err(e) if e.kind() == ErrorKind::Interrupted => Got::Idle,
        Err(_) => Got::Closed,
    }
}

/// After broken framing: reads and discards until the client closes or the peer stops.
fn hold(stream: &mut TcpStream, conn: usize, shared: &Shared) {
    let mut chunk = vec![0; 64 * 1024];
    while !shared.stopped() {
        if let Got::Closed = read_some(stream, &mut chunk) {
            shared.record(conn, |r| r.closed_by_client = Some(Instant::now()));
            return;
        }
    }
}

/// Answers one request: honestly, or in the peer's mode when it is the trigger.
fn handle(stream: &mut TcpStream, conn: usize, shared: &Shared, request: &Command) -> Next {
    if request.is_response() {
        // The client answering a request of ours; we send none.
        return Next::Read;
    }
    shared
        .log()
        .requests
        .push((Instant::now(), request.request_code()));
    let trigger = match shared.role {
        Role::NameServer { .. } => RequestCode::GET_ROUTEINFO_BY_TOPIC,
        Role::Broker => RequestCode::PULL_MESSAGE,
    };
    // The honest answer is made only when it is sent (or trickled): a broker's honest pull
    // answer waits a second, which must not delay the hostile ones.
    let honest = || match &shared.role {
        Role::NameServer { topic, broker } => name_server_answer(request, topic, broker),
        Role::Broker => broker_answer(request, shared),
    };
    if request.request_code() != trigger || shared.mode == Mode::Honest {
        return match honest() {
            Some(answer) if !request.is_oneway() => write_frame(stream, &answer),
            _ => Next::Read,
        };
    }
    shared.record(conn, |r| r.misbehaved = Some(Instant::now()));
    match shared.mode {
        Mode::Honest => Next::Read,
        Mode::Garbage => write_hostile(stream, &garbage()),
        Mode::HugeLength => huge_length(stream, conn, shared),
        Mode::HeaderBeyondFrame => write_hostile(stream, &header_beyond_frame()),
        Mode::Trickle => match honest() {
            Some(answer) => trickle(stream, conn, shared, &answer),
            None => Next::Read,
        },
        Mode::CorruptBatch => {
            shared.log().corrupt_batches += 1;
            write_frame(stream, &corrupt_batch(request, shared))
        }
    }
}

/// Writes `answer` as one frame.
fn write_frame(stream: &mut TcpStream, answer: &Command) -> Next {
    let mut frame = BytesMut::new();
    if let Err(e) = proto::frame::encode(answer, HeaderEncoding::Json, &mut frame) {
        eprintln!("hostile peer: an answer did not encode: {e}");
        return Next::Read;
    }
    match stream.write_all(&frame) {
        Ok(()) => Next::Read,
        Err(_) => Next::Closed,
    }
}

/// Writes bytes that break the framing; the connection is held after them.
fn write_hostile(stream: &mut TcpStream, bytes: &[u8]) -> Next {
    match stream.write_all(bytes) {
        Ok(()) => Next::Hold,
        Err(_) => Next::Closed,
    }
}

/// [`Mode::Garbage`]'s bytes: a 256-byte frame of junk from a fixed xorshift, its first byte
/// forced to something no JSON starts with.
fn garbage() -> Vec<u8> {
    const LEN: usize = 256;
    let mut bytes = Vec::with_capacity(4 + LEN);
    bytes.put_u32(LEN as u32);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..LEN {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.push((x >> 56) as u8);
    }
    // The header word: JSON (type 0), 200 bytes of "header" (all junk).
    if let Some(word) = bytes.get_mut(4..8) {
        word.copy_from_slice(&200u32.to_be_bytes());
    }
    if let Some(first) = bytes.get_mut(8) {
        *first = 0xFF;
    }
    bytes
}

/// [`Mode::HeaderBeyondFrame`]'s bytes: total length 16, header length 16 MiB − 1, JSON.
fn header_beyond_frame() -> Vec<u8> {
    let mut bytes = Vec::with_capacity(20);
    bytes.put_u32(16);
    bytes.put_u32(0x00FF_FFFF);
    bytes.extend_from_slice(b"{\"code\":0,\"fla");
    bytes.truncate(20);
    bytes
}

/// [`Mode::HugeLength`]: the prefix of about 2 GiB, then filler until the client stops taking it.
fn huge_length(stream: &mut TcpStream, conn: usize, shared: &Shared) -> Next {
    let prefix = if conn.is_multiple_of(2) {
        HUGE_LENGTH
    } else {
        HUGE_LENGTH - 1
    };
    if stream.write_all(&prefix.to_be_bytes()).is_err() {
        return Next::Closed;
    }
    let filler = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    let mut next = Next::Hold;
    while written < FILLER_CAP && !shared.stopped() {
        match stream.write(&filler) {
            Ok(0) => {
                next = Next::Closed;
                break;
            }
            Ok(n) => written += n as u64,
            // The client stopped reading (the socket buffers are full): it holds no more of
            // the filler than those buffers.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                next = Next::Closed;
                break;
            }
        }
    }
    shared.record(conn, |r| r.hostile_bytes = written);
    next
}

/// [`Mode::Trickle`]: `answer`'s frame one byte a second, reading (and dropping) whatever the
/// client sends meanwhile, until the client closes, the peer stops or the frame is out.
fn trickle(stream: &mut TcpStream, conn: usize, shared: &Shared, answer: &Command) -> Next {
    let mut frame = BytesMut::new();
    if let Err(e) = proto::frame::encode(answer, HeaderEncoding::Json, &mut frame) {
        eprintln!("hostile peer: an answer did not encode: {e}");
        return Next::Read;
    }
    let mut chunk = vec![0; 64 * 1024];
    for (sent, byte) in frame.iter().enumerate() {
        if stream.write_all(&[*byte]).is_err() {
            return Next::Closed;
        }
        shared.record(conn, |r| r.hostile_bytes = sent as u64 + 1);
        let tick = Instant::now() + Duration::from_secs(1);
        while Instant::now() < tick {
            if shared.stopped() {
                return Next::Hold;
            }
            if let Got::Closed = read_some(stream, &mut chunk) {
                return Next::Closed;
            }
        }
    }
    // Whatever the client asked meanwhile was dropped; it will time those requests out.
    Next::Hold
}

// ----- honest answers -----

fn success(request: &Command) -> Command {
    Command::response(ResponseCode::SUCCESS, request.opaque)
}

fn with_header(mut response: Command, header: &impl CommandHeader) -> Command {
    header.encode_into(&mut response.ext_fields);
    response
}

fn refuse(request: &Command, code: ResponseCode, remark: &str) -> Command {
    Command::response(code, request.opaque).with_remark(remark)
}

/// The name server's answer; `None` for oneway requests it ignores.
fn name_server_answer(request: &Command, topic: &str, broker: &str) -> Option<Command> {
    if request.request_code() != RequestCode::GET_ROUTEINFO_BY_TOPIC {
        eprintln!(
            "hostile name server: unexpected request {:?}",
            request.request_code()
        );
        return Some(refuse(
            request,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            "not supported by the hostile name server",
        ));
    }
    let asked = match request.header::<GetRouteInfoRequest>() {
        Ok(header) => header.topic,
        Err(e) => return Some(refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string())),
    };
    if asked != topic {
        // RouteInfoManager.pickupTopicRouteData found nothing: the retry topic, for one.
        return Some(refuse(
            request,
            ResponseCode::TOPIC_NOT_EXIST,
            &format!("No topic route info in name server for the topic: {asked}"),
        ));
    }
    let route = TopicRouteData {
        queue_datas: vec![QueueData {
            broker_name: BROKER_NAME.to_owned(),
            read_queue_nums: 1,
            write_queue_nums: 1,
            perm: 6,
            topic_sys_flag: 0,
        }],
        broker_datas: vec![BrokerData {
            cluster: "hostile-cluster".to_owned(),
            broker_name: BROKER_NAME.to_owned(),
            broker_addrs: [(0, broker.to_owned())].into_iter().collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    Some(success(request).with_body(route.encode()))
}

/// The broker's honest answer; `None` for requests that get none.
fn broker_answer(request: &Command, shared: &Shared) -> Option<Command> {
    let code = request.request_code();
    let answer = if code == RequestCode::HEART_BEAT {
        match HeartbeatData::decode(&request.body) {
            Ok(data) => {
                shared.log().client_ids.insert(data.client_id);
                success(request)
            }
            Err(e) => refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        }
    } else if code == RequestCode::GET_CONSUMER_LIST_BY_GROUP {
        // One member: whoever heartbeat here (ConsumerManager keeps the group's channels).
        let list = ConsumerListBody {
            consumer_id_list: shared.log().client_ids.iter().cloned().collect(),
        };
        success(request).with_body(list.encode())
    } else if code == RequestCode::QUERY_CONSUMER_OFFSET {
        with_header(success(request), &QueryConsumerOffsetResponse { offset: 0 })
    } else if code == RequestCode::GET_MAX_OFFSET {
        with_header(success(request), &GetMaxOffsetResponse { offset: 2 })
    } else if code == RequestCode::GET_MIN_OFFSET {
        with_header(success(request), &GetMinOffsetResponse { offset: 0 })
    } else if code == RequestCode::UPDATE_CONSUMER_OFFSET {
        match request.header::<UpdateConsumerOffsetRequest>() {
            Ok(header) => {
                shared.log().commits.push(header.commit_offset);
                success(request)
            }
            Err(e) => refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
        }
    } else if code == RequestCode::UNREGISTER_CLIENT {
        success(request)
    } else if code == RequestCode::PULL_MESSAGE {
        // A crude long poll: hold the pull a second (this connection's thread waits), then
        // answer that nothing is there.
        let offset = request
            .header::<PullMessageRequest>()
            .map_or(0, |h| h.queue_offset);
        std::thread::sleep(Duration::from_secs(1));
        with_header(
            Command::response(ResponseCode::PULL_NOT_FOUND, request.opaque),
            &pull_header(offset, 2),
        )
    } else {
        eprintln!("hostile broker: unexpected request {code:?}");
        refuse(
            request,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            "not supported by the hostile broker",
        )
    };
    Some(answer)
}

fn pull_header(next_begin_offset: i64, max_offset: i64) -> PullMessageResponse {
    PullMessageResponse {
        suggest_which_broker_id: 0,
        next_begin_offset,
        min_offset: 0,
        max_offset,
        offset_delta: None,
        topic_sys_flag: None,
        group_sys_flag: None,
        forbidden_type: None,
    }
}

/// [`Mode::CorruptBatch`]'s answer to a pull.
fn corrupt_batch(request: &Command, shared: &Shared) -> Command {
    let header = match request.header::<PullMessageRequest>() {
        Ok(header) => header,
        Err(e) => return refuse(request, ResponseCode::SYSTEM_ERROR, &e.to_string()),
    };
    let record = |offset: i64, body: &[u8]| StoredMessage {
        queue_id: header.queue_id,
        queue_offset: offset,
        commit_log_offset: offset.saturating_mul(1000),
        born_host: SocketAddr::from(([127, 0, 0, 1], 40000)),
        store_host: SocketAddr::from(([127, 0, 0, 1], 10911)),
        body: bytes::Bytes::copy_from_slice(body),
        topic: header.topic.clone(),
        ..Default::default()
    };
    let mut body = BytesMut::new();
    let mut bad_offset = header.queue_offset;
    if header.queue_offset == 0 {
        encode_stored(&record(0, GOOD_BODY), &mut body)
            .expect("a small record with a short topic encodes");
        bad_offset = 1;
    }
    let good_len = body.len();
    encode_stored(&record(bad_offset, b"this record is spoiled"), &mut body)
        .expect("a small record with a short topic encodes");
    let served = shared.log().corrupt_batches;
    if served % 2 == 1 {
        // MAGICCODE is the second int of a record (MessageDecoder.decode).
        if let Some(magic) = body.get_mut(good_len + 4..good_len + 8) {
            magic.copy_from_slice(&0x0BAD_F00Du32.to_be_bytes());
        }
    } else {
        // Cut the record in its properties: TOTALSIZE promises bytes that never come.
        body.truncate(body.len() - 7);
    }
    let next = bad_offset.saturating_add(1);
    with_header(success(request), &pull_header(next, next)).with_body(body.freeze())
}

#[cfg(test)]
mod tests {
    use proto::message::{DecodeOptions, decode_messages};

    use super::*;

    /// Each hostile byte string breaks the frame decoder the way its mode says, and none of
    /// them decodes as a command.
    #[test]
    fn hostile_bytes_break_the_framing() {
        let mut decoder = FrameDecoder::default();
        for bytes in [
            garbage(),
            header_beyond_frame(),
            HUGE_LENGTH.to_be_bytes().to_vec(),
            (HUGE_LENGTH - 1).to_be_bytes().to_vec(),
        ] {
            let mut buf = BytesMut::from(&bytes[..]);
            assert!(
                decoder.decode(&mut buf).is_err(),
                "{bytes:02x?} decoded as a frame"
            );
        }
    }

    /// The corrupt batch keeps the good record at offset 0 and fails at the bad one, both ways
    /// it is spoiled.
    #[test]
    fn corrupt_batches_fail_after_the_good_record() {
        let shared = Shared {
            role: Role::Broker,
            mode: Mode::CorruptBatch,
            stop: AtomicBool::new(false),
            log: Mutex::default(),
        };
        let pull = PullMessageRequest {
            consumer_group: "g".to_owned(),
            topic: "t".to_owned(),
            queue_id: 0,
            queue_offset: 0,
            max_msg_nums: 32,
            ..Default::default()
        };
        let request = Command::request(RequestCode::PULL_MESSAGE, &pull);
        for served in 1..=2 {
            shared.log().corrupt_batches = served;
            let answer = corrupt_batch(&request, &shared);
            let batch = decode_messages(&answer.body, &DecodeOptions::default());
            assert_eq!(batch.messages.len(), 1, "served {served}");
            assert!(batch.error.is_some(), "served {served}: no error");
        }
    }
}
