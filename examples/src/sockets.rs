//! The core's connections on plain threads and blocking sockets.
//!
//! The core names each connection ([`ConnId`]) and says what to do with it ([`Wire`]); this
//! carries it out and reports back what happened ([`Io`]) on the loop's channel. Each
//! connection has two threads: one connects and then reads frames, one writes what the loop
//! encoded. The loop never blocks on a socket: it hands bytes to the writer through a channel.
//! Dropping that channel's sender (the core's [`Wire::Close`]) ends the writer, which shuts the
//! socket down, which ends the reader.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

use bytes::BytesMut;
use consumer_core::{ConnId, Wire};
use proto::frame::{self, HeaderEncoding};
use proto::{Command, FrameDecoder};

/// What happened on a connection, for the core's `handle_connected`, `handle_command` and
/// `handle_disconnected`.
#[derive(Debug)]
pub enum Io {
    /// The connection opened.
    Connected(ConnId),
    /// A whole frame arrived.
    Frame(ConnId, Command),
    /// The connection could not be opened, or was lost (reset, closed by the peer, a frame
    /// that does not decode); why, in words.
    Lost(ConnId, String),
}

impl Io {
    /// The connection it is about.
    pub fn conn(&self) -> ConnId {
        match self {
            Self::Connected(conn) | Self::Frame(conn, _) | Self::Lost(conn, _) => *conn,
        }
    }
}

/// The connections the core asked for, by name: each one's writer queue.
///
/// `T` is the loop's own input type: [`Io`] reaches the loop as `T::from(io)`, on the same
/// channel as everything else it waits for.
#[derive(Debug)]
pub struct Sockets<T> {
    writers: BTreeMap<ConnId, Sender<BytesMut>>,
    events: Sender<T>,
    connect_timeout: Duration,
    /// Addresses the core names, and where to connect instead (a broker behind NAT or a
    /// proxy advertises an address this host cannot reach).
    redirects: BTreeMap<String, String>,
}

impl<T: From<Io> + Send + 'static> Sockets<T> {
    /// Connections reporting on `events`; one that takes longer than `connect_timeout` to
    /// open is given up (the core gives up on it at its own connect timeout: pass the same).
    pub fn new(events: Sender<T>, connect_timeout: Duration) -> Self {
        Self {
            writers: BTreeMap::new(),
            events,
            connect_timeout,
            redirects: BTreeMap::new(),
        }
    }

    /// Connects to `to` whenever the core asks for `from`.
    pub fn redirect(&mut self, from: String, to: String) {
        self.redirects.insert(from, to);
    }

    /// Carries out what the core asked.
    pub fn handle_wire(&mut self, wire: Wire) {
        match wire {
            Wire::Connect { conn, addr } => self.connect(conn, addr),
            Wire::Send { conn, command } => {
                // A connection already lost is on its way to the core as `Io::Lost`, which
                // fails its requests; so does a command too large to encode, at its deadline.
                if let Some(writer) = self.writers.get(&conn) {
                    let mut frame = BytesMut::new();
                    if frame::encode(&command, HeaderEncoding::Json, &mut frame).is_ok() {
                        let _ = writer.send(frame);
                    }
                }
            }
            Wire::Close { conn } => {
                self.writers.remove(&conn);
            }
        }
    }

    /// Whether `io` is about a connection the core still has: after `Wire::Close` the core
    /// expects nothing more of it, so the loop drops what its threads still report. A lost
    /// connection is forgotten.
    pub fn is_live(&mut self, io: &Io) -> bool {
        let conn = io.conn();
        if let Io::Lost(..) = io {
            return self.writers.remove(&conn).is_some();
        }
        self.writers.contains_key(&conn)
    }

    /// Closes every connection (after the core is done).
    pub fn close_all(&mut self) {
        self.writers.clear();
    }

    fn connect(&mut self, conn: ConnId, addr: String) {
        let addr = self.redirects.get(&addr).cloned().unwrap_or(addr);
        let (writer, writes) = mpsc::channel();
        self.writers.insert(conn, writer);
        let events = self.events.clone();
        let timeout = self.connect_timeout;
        let spawned = thread::Builder::new()
            .name(format!("rmq-conn-{}", conn.0))
            .spawn(move || run_connection(conn, &addr, timeout, writes, &events));
        if let Err(e) = spawned {
            let _ = self
                .events
                .send(Io::Lost(conn, format!("no thread for the connection: {e}")).into());
        }
    }
}

/// One connection's life, on its own thread: connect, start the writer, read frames until the
/// connection ends, and say so.
fn run_connection<T: From<Io>>(
    conn: ConnId,
    addr: &str,
    timeout: Duration,
    writes: Receiver<BytesMut>,
    events: &Sender<T>,
) {
    let lost = |why: String| {
        let _ = events.send(Io::Lost(conn, why).into());
    };
    let stream = match open(addr, timeout) {
        Ok(stream) => stream,
        Err(e) => return lost(format!("connect to {addr}: {e}")),
    };
    let writer = match stream.try_clone() {
        Ok(writer) => writer,
        Err(e) => return lost(format!("{addr}: {e}")),
    };
    if let Err(e) = thread::Builder::new()
        .name(format!("rmq-write-{}", conn.0))
        .spawn(move || write_frames(&writer, &writes))
    {
        return lost(format!("no writer thread for {addr}: {e}"));
    }
    // Before the first frame: the core must hear of the connection before what comes on it.
    if events.send(Io::Connected(conn).into()).is_err() {
        return;
    }
    let why = read_frames(conn, &stream, events);
    let _ = stream.shutdown(Shutdown::Both);
    lost(why);
}

/// Connects to the first address `addr` resolves to that answers within `timeout`.
fn open(addr: &str, timeout: Duration) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::new(ErrorKind::NotFound, "the address resolves to nothing");
    for resolved in addr.to_socket_addrs()? {
        match TcpStream::connect_timeout(&resolved, timeout) {
            Ok(stream) => {
                // Requests are small and answers awaited: Nagle's delay would only add latency.
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Writes each encoded frame in turn; when the loop drops the queue's sender (the core closed
/// the connection) or a write fails, shuts the socket down, which ends the reader too.
fn write_frames(mut stream: &TcpStream, writes: &Receiver<BytesMut>) {
    for frame in writes {
        if stream.write_all(&frame).is_err() {
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// Reads and decodes frames until the connection ends; returns why it ended.
fn read_frames<T: From<Io>>(conn: ConnId, mut stream: &TcpStream, events: &Sender<T>) -> String {
    let mut decoder = FrameDecoder::default();
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    let mut chunk = vec![0; 64 * 1024];
    loop {
        let read = match stream.read(&mut chunk) {
            Ok(0) => return "closed by the peer".to_owned(),
            Ok(read) => read,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return e.to_string(),
        };
        buffer.extend_from_slice(&chunk[..read]);
        loop {
            match decoder.decode(&mut buffer) {
                Ok(Some(command)) => {
                    if events.send(Io::Frame(conn, command).into()).is_err() {
                        return "the loop is gone".to_owned();
                    }
                }
                Ok(None) => break,
                // Java closes a connection on any frame it cannot decode (`NettyDecoder`).
                Err(e) => return format!("bad frame: {e}"),
            }
        }
    }
}
