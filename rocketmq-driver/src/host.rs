//! Where this process is and what time it is: the wall clock (message born times, instance
//! names) and the local address a client names itself by (client ids, message ids).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wall clock, as time since the Unix epoch (zero if the clock is before it).
pub(crate) fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The local address the system would use to reach `name_server`, found by "connecting" a UDP
/// socket (which sends nothing). Loopback, host names and failures give `127.0.0.1`.
pub(crate) fn local_ip(name_server: &str) -> IpAddr {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let Ok(peer) = name_server.parse::<SocketAddr>() else {
        return loopback;
    };
    if peer.ip().is_loopback() {
        return loopback;
    }
    let any = match peer {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    UdpSocket::bind((any, 0))
        .and_then(|socket| {
            socket.connect(peer)?;
            socket.local_addr()
        })
        .map_or(loopback, |local| local.ip())
}
