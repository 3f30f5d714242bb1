//! A fault-injecting TCP proxy on loopback, for the network-fault scenarios: clients connect
//! to [`FaultProxy::addr`], and every connection is relayed to the upstream address (a real
//! broker or name server) byte for byte, until a test injects a fault:
//!
//! - [`FaultProxy::reset_all`]: every relayed connection is reset (RST, both sides);
//! - [`FaultProxy::black_hole`]: every relayed connection goes dead without a FIN, for ever,
//!   as behind a firewall that dropped its state (what is written to it is discarded, nothing
//!   arrives, nothing closes); connections made afterwards are relayed again;
//! - [`Fault::Stall`]: nothing is relayed (each side's writes wait in the socket buffers),
//!   on every connection, new ones included, until the fault is lifted; then everything
//!   queued is delivered, as after a partition that TCP rides out;
//! - [`Fault::Trickle`]: writes are relayed in chunks of a few bytes with a delay between them;
//! - [`Fault::Refuse`]: new connections are accepted and reset at once.
//!
//! Plain threads and blocking sockets (with short read timeouts, so relays notice faults
//! promptly), so tests on any async runtime can use it. Everything stops when the proxy is
//! dropped.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

/// How long a relay waits for bytes before looking at the fault again.
const POLL: Duration = Duration::from_millis(20);

/// A fault applied to the relayed traffic until replaced ([`FaultProxy::set`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// Relay everything as it comes.
    #[default]
    None,
    /// Relay nothing, on every connection (new ones too); bytes wait, nothing is lost.
    Stall,
    /// Relay writes in `chunk`-byte pieces, `delay` apart.
    Trickle {
        /// Bytes per piece (at least 1).
        chunk: usize,
        /// Pause after each piece.
        delay: Duration,
    },
    /// Reset new connections as soon as they are accepted.
    Refuse,
}

/// One relayed connection: the client's socket and the upstream one.
struct Link {
    client: TcpStream,
    upstream: TcpStream,
    /// Black-holed: its bytes are discarded for ever.
    dead: AtomicBool,
    /// Reset or closed: its relays stop.
    gone: AtomicBool,
}

impl Link {
    /// Resets both sockets (linger 0 makes the close an RST) and stops the relays.
    fn reset(&self) {
        self.gone.store(true, Ordering::SeqCst);
        for socket in [&self.client, &self.upstream] {
            let _ = socket2::SockRef::from(socket).set_linger(Some(Duration::ZERO));
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

struct Shared {
    upstream: String,
    fault: Mutex<Fault>,
    links: Mutex<Vec<Arc<Link>>>,
    accepted: AtomicUsize,
    stopped: AtomicBool,
}

impl Shared {
    fn fault(&self) -> Fault {
        *lock(&self.fault)
    }
}

/// The proxy. See the [module documentation](self).
pub struct FaultProxy {
    addr: String,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Starts relaying connections to `upstream` (`host:port`) from a new loopback port.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound (the test cannot run).
    pub fn start(upstream: &str) -> Self {
        let listener =
            TcpListener::bind("127.0.0.1:0").expect("bind a loopback port for the proxy");
        listener
            .set_nonblocking(true)
            .expect("the proxy's listener polls for connections");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address")
            .to_string();
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            fault: Mutex::new(Fault::None),
            links: Mutex::new(Vec::new()),
            accepted: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        thread::spawn(move || accept_loop(&listener, &accepting));
        Self { addr, shared }
    }

    /// Where clients connect.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The upstream address.
    pub fn upstream(&self) -> &str {
        &self.shared.upstream
    }

    /// Applies `fault` from now on, to current connections and new ones.
    pub fn set(&self, fault: Fault) {
        *lock(&self.shared.fault) = fault;
    }

    /// Resets every relayed connection; returns how many there were.
    pub fn reset_all(&self) -> usize {
        let links = std::mem::take(&mut *lock(&self.shared.links));
        for link in &links {
            link.reset();
        }
        links.len()
    }

    /// Black-holes every relayed connection (see the [module documentation](self)); returns
    /// how many there were. Later connections are relayed as usual.
    pub fn black_hole(&self) -> usize {
        let links = lock(&self.shared.links);
        for link in links.iter() {
            link.dead.store(true, Ordering::SeqCst);
        }
        links.len()
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.reset_all();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A relay that panicked leaves plain data behind; keep going with it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stopped.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                if let Err(e) = open_link(client, shared) {
                    eprintln!("fault proxy to {}: {e}", shared.upstream);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(POLL),
            Err(e) => {
                eprintln!("fault proxy to {}: accept: {e}", shared.upstream);
                thread::sleep(POLL);
            }
        }
    }
}

/// Connects upstream for `client` and starts the two relays (unless new connections are
/// refused: then `client` is reset).
fn open_link(client: TcpStream, shared: &Arc<Shared>) -> io::Result<()> {
    client.set_nonblocking(false)?;
    if shared.fault() == Fault::Refuse {
        socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO))?;
        return Ok(());
    }
    let upstream = TcpStream::connect(&shared.upstream)?;
    for socket in [&client, &upstream] {
        socket.set_nodelay(true)?;
        socket.set_read_timeout(Some(POLL))?;
    }
    let link = Arc::new(Link {
        client,
        upstream,
        dead: AtomicBool::new(false),
        gone: AtomicBool::new(false),
    });
    lock(&shared.links).push(Arc::clone(&link));
    for towards_upstream in [true, false] {
        let (link, shared) = (Arc::clone(&link), Arc::clone(shared));
        thread::spawn(move || {
            let (from, to) = if towards_upstream {
                (&link.client, &link.upstream)
            } else {
                (&link.upstream, &link.client)
            };
            relay(from, to, &link, &shared);
            // One side ended: end the other too, so nothing lingers half open.
            link.gone.store(true, Ordering::SeqCst);
            let _ = to.shutdown(Shutdown::Write);
        });
    }
    Ok(())
}

/// Moves bytes from `from` to `to` under the current fault until either side ends.
fn relay(mut from: &TcpStream, mut to: &TcpStream, link: &Link, shared: &Shared) {
    let mut buf = vec![0u8; 64 * 1024];
    while !link.gone.load(Ordering::SeqCst) {
        if shared.fault() == Fault::Stall && !link.dead.load(Ordering::SeqCst) {
            thread::sleep(POLL);
            continue;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => return,
        };
        // Read just before a stall began: held back until it ends.
        while shared.fault() == Fault::Stall && !link.gone.load(Ordering::SeqCst) {
            thread::sleep(POLL);
        }
        if link.dead.load(Ordering::SeqCst) {
            continue;
        }
        let written = match shared.fault() {
            Fault::Trickle { chunk, delay } => {
                trickle(to, &buf[..n], (chunk.max(1), delay), link, shared)
            }
            _ => to.write_all(&buf[..n]),
        };
        if written.is_err() {
            return;
        }
    }
}

fn trickle(
    mut to: &TcpStream,
    bytes: &[u8],
    (chunk, delay): (usize, Duration),
    link: &Link,
    shared: &Shared,
) -> io::Result<()> {
    for (i, piece) in bytes.chunks(chunk).enumerate() {
        if link.gone.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        if !matches!(shared.fault(), Fault::Trickle { .. }) {
            // Lifted meanwhile: the rest goes at once.
            return to.write_all(&bytes[i * chunk..]);
        }
        to.write_all(piece)?;
        thread::sleep(delay);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An upstream that echoes every connection's bytes back.
    fn echo_server() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the echo server");
        let addr = listener.local_addr().expect("bound").to_string();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                thread::spawn(move || {
                    let mut stream = stream;
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 || stream.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn connect(proxy: &FaultProxy) -> TcpStream {
        let stream = TcpStream::connect(proxy.addr()).expect("connect to the proxy");
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("set a read timeout");
        stream
    }

    fn echo(stream: &mut TcpStream, bytes: &[u8]) -> io::Result<Vec<u8>> {
        stream.write_all(bytes)?;
        let mut got = vec![0u8; bytes.len()];
        stream.read_exact(&mut got)?;
        Ok(got)
    }

    /// Relays, resets, black holes and stalls do what the module says.
    #[test]
    fn the_proxy_relays_and_injects_each_fault() {
        let proxy = FaultProxy::start(&echo_server());
        let mut first = connect(&proxy);
        assert_eq!(echo(&mut first, b"hello").expect("relayed"), b"hello");

        assert_eq!(proxy.black_hole(), 1);
        assert!(echo(&mut first, b"lost").is_err(), "nothing comes back");
        let mut second = connect(&proxy);
        assert_eq!(
            echo(&mut second, b"again").expect("a new one is relayed"),
            b"again"
        );

        proxy.set(Fault::Stall);
        second.write_all(b"held").expect("written into the buffers");
        let mut byte = [0u8; 1];
        assert!(second.read(&mut byte).is_err(), "stalled: nothing arrives");
        proxy.set(Fault::None);
        let mut held = [0u8; 4];
        second
            .read_exact(&mut held)
            .expect("delivered once the stall ends");
        assert_eq!(&held, b"held");

        proxy.set(Fault::Trickle {
            chunk: 1,
            delay: Duration::from_millis(1),
        });
        assert_eq!(echo(&mut second, b"slowly").expect("trickled"), b"slowly");
        proxy.set(Fault::None);

        assert_eq!(proxy.reset_all(), 2);
        let mut buf = [0u8; 8];
        let ended = second.read(&mut buf);
        assert!(
            matches!(ended, Ok(0) | Err(_)),
            "a reset connection ends: {ended:?}"
        );
        proxy.set(Fault::Refuse);
        let mut refused = connect(&proxy);
        assert!(
            echo(&mut refused, b"x").is_err(),
            "refused connections end at once"
        );
        assert_eq!(proxy.accepted(), 3);
    }
}
