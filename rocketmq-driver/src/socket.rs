//! The TCP options of every client connection, set by each adapter right after it connects, so
//! both runtimes' sockets behave alike.
//!
//! Keepalive is the second line of defence against a connection that died without a FIN: the
//! core's liveness probe (`ConsumerConfig::probe_after`) finds a silent broker in seconds, but
//! only while requests are in flight; the kernel's probes also catch an idle connection whose
//! peer vanished, so it is not found dead only when the next request times out.

use std::io;
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};

/// Idle time before the kernel's first keepalive probe.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// Time between unanswered keepalive probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes after which the kernel resets the connection (where the platform lets
/// the count be set): a dead peer is found about 60 s after the last traffic.
pub const KEEPALIVE_RETRIES: u32 = 3;

/// Sets no Nagle delay (requests are small and latency-bound, as Java's `tcpNoDelay`) and TCP
/// keepalive ([`KEEPALIVE_IDLE`], [`KEEPALIVE_INTERVAL`], [`KEEPALIVE_RETRIES`]) on a connected
/// socket.
#[cfg(unix)]
pub fn configure_tcp(socket: &impl std::os::fd::AsFd) -> io::Result<()> {
    apply(SockRef::from(socket))
}

/// Sets no Nagle delay (requests are small and latency-bound, as Java's `tcpNoDelay`) and TCP
/// keepalive ([`KEEPALIVE_IDLE`], [`KEEPALIVE_INTERVAL`], [`KEEPALIVE_RETRIES`]) on a connected
/// socket.
#[cfg(windows)]
pub fn configure_tcp(socket: &impl std::os::windows::io::AsSocket) -> io::Result<()> {
    apply(SockRef::from(socket))
}

fn apply(socket: SockRef<'_>) -> io::Result<()> {
    socket.set_tcp_nodelay(true)?;
    let keepalive = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL);
    #[cfg(not(any(target_os = "redox", target_os = "wasi", target_os = "horizon")))]
    let keepalive = keepalive.with_retries(KEEPALIVE_RETRIES);
    socket.set_tcp_keepalive(&keepalive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    /// The options read back from a real loopback socket are the ones set.
    #[test]
    fn a_configured_socket_has_nodelay_and_keepalive() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener");
        let addr = listener.local_addr().expect("the listener has an address");
        let stream = TcpStream::connect(addr).expect("connect on loopback");
        configure_tcp(&stream).expect("set the options");
        let socket = SockRef::from(&stream);
        assert!(socket.tcp_nodelay().expect("read TCP_NODELAY"));
        assert!(socket.keepalive().expect("read SO_KEEPALIVE"));
        #[cfg(target_os = "linux")]
        {
            assert_eq!(
                socket.tcp_keepalive_time().expect("TCP_KEEPIDLE"),
                KEEPALIVE_IDLE
            );
            assert_eq!(
                socket.tcp_keepalive_interval().expect("TCP_KEEPINTVL"),
                KEEPALIVE_INTERVAL
            );
            assert_eq!(
                socket.tcp_keepalive_retries().expect("TCP_KEEPCNT"),
                KEEPALIVE_RETRIES
            );
        }
    }
}
