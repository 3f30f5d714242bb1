//! Where this process is and what time it is: what the core takes as arguments because it
//! reads no clock and knows no network interface.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock in milliseconds since the Unix epoch (0 before it), for `Consumer::new`'s
/// `unix_ms` and the producer's message born times.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The wall clock in nanoseconds since the Unix epoch, for a unique instance name.
pub fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The local address this host reaches `name_server` from, which brokers show as the client's
/// (Java takes the first non-loopback interface): a UDP socket "connected" to it, which sends
/// nothing, says which. Loopback, host names and failures give `127.0.0.1`.
pub fn local_ip(name_server: &str) -> IpAddr {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let Ok(peer) = name_server.parse::<SocketAddr>() else {
        return loopback;
    };
    if peer.ip().is_loopback() {
        return loopback;
    }
    let any: SocketAddr = match peer {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    UdpSocket::bind(any)
        .and_then(|socket| {
            socket.connect(peer)?;
            socket.local_addr()
        })
        .map_or(loopback, |local| local.ip())
}
