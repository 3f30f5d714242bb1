//! A minimal blocking request/response client over `std::net`, for one-shot admin commands
//! (`rmq cluster`, `rmq route`) and for tests that talk to the real broker directly.
//!
//! It is deliberately not the consumer: no reconnects, no retries, one request at a time.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use driver::rustls;
use driver::{Credentials, Tls};
use proto::{Command, FrameDecoder, HeaderEncoding, ResponseCode, acl, frame};

/// What can go wrong talking to a peer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Connecting, reading or writing failed.
    #[error("{addr}: {source}")]
    Io {
        /// The peer.
        addr: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The peer closed the connection before answering.
    #[error("{0}: connection closed before the response arrived")]
    Closed(String),
    /// No response within the timeout.
    #[error("{0}: no response within {1:?}")]
    Timeout(String, Duration),
    /// The peer sent bytes that are not a frame.
    #[error("{0}: {1}")]
    Frame(String, proto::FrameError),
    /// The request could not be encoded.
    #[error("{0}")]
    Encode(#[from] proto::EncodeError),
    /// The TLS settings were refused (a bad certificate file, a bad server name).
    #[error("{0}")]
    Tls(String),
}

/// The connection: plain TCP, or TLS over it.
enum Wire {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Wire {
    fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(tcp) => tcp,
            Self::Tls(tls) => tls.get_ref(),
        }
    }
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plain(_) => "Plain",
            Self::Tls(_) => "Tls",
        })
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(tcp) => tcp.read(buf),
            Self::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(tcp) => tcp.write(buf),
            Self::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Plain(tcp) => tcp.flush(),
            Self::Tls(tls) => tls.flush(),
        }
    }
}

/// One connection to a broker or name server.
#[derive(Debug)]
pub struct BlockingClient {
    addr: String,
    stream: Wire,
    decoder: FrameDecoder,
    buf: BytesMut,
    next_opaque: i32,
    encoding: HeaderEncoding,
    /// ACL: requests are signed with these (Java's `AclClientRPCHook`).
    credentials: Option<Credentials>,
}

impl BlockingClient {
    /// Connects to `addr` (`host:port`) within `timeout`.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Self, ClientError> {
        Ok(Self::over(addr, Wire::Plain(open_tcp(addr, timeout)?)))
    }

    fn over(addr: &str, stream: Wire) -> Self {
        Self {
            addr: addr.to_owned(),
            stream,
            decoder: FrameDecoder::default(),
            buf: BytesMut::with_capacity(64 * 1024),
            next_opaque: 1,
            encoding: HeaderEncoding::Json,
            credentials: None,
        }
    }

    /// Connects to `addr` within `timeout` over TLS as `tls` says; the handshake runs with the
    /// first request, and a certificate the client does not trust fails it with the reason.
    pub fn connect_tls(addr: &str, timeout: Duration, tls: &Tls) -> Result<Self, ClientError> {
        let config = tls
            .rustls_client_config()
            .map_err(|e| ClientError::Tls(e.0))?;
        let name = tls
            .server_name_for(addr)
            .map_err(|e| ClientError::Tls(e.0))?;
        let tcp = open_tcp(addr, timeout)?;
        let session = rustls::ClientConnection::new(config, name)
            .map_err(|e| ClientError::Tls(format!("TLS to {addr}: {e}")))?;
        let tls = rustls::StreamOwned::new(session, tcp);
        Ok(Self::over(addr, Wire::Tls(Box::new(tls))))
    }

    /// Signs later requests with `credentials` (`None`: unsigned), for clusters with ACL.
    #[must_use]
    pub fn signed(mut self, credentials: Option<Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// Uses `encoding` for the headers of later requests.
    pub fn set_encoding(&mut self, encoding: HeaderEncoding) {
        self.encoding = encoding;
    }

    /// Sends `request` with a fresh opaque and waits for its response. Broker-initiated
    /// requests that arrive meanwhile are answered `REQUEST_CODE_NOT_SUPPORTED` (oneway ones
    /// are dropped), so the broker never waits on us.
    pub fn call(
        &mut self,
        mut request: Command,
        timeout: Duration,
    ) -> Result<Command, ClientError> {
        let opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        request.opaque = opaque;
        self.send(&request)?;
        let deadline = Instant::now() + timeout;
        loop {
            let command = self.read_frame(deadline, timeout)?;
            if command.is_response() {
                if command.opaque == opaque {
                    return Ok(command);
                }
                continue;
            }
            if !command.is_oneway() {
                let answer =
                    Command::response(ResponseCode::REQUEST_CODE_NOT_SUPPORTED, command.opaque)
                        .with_remark("not supported by this client");
                self.send(&answer)?;
            }
        }
    }

    /// Sends a oneway request (no response will come).
    pub fn send_oneway(&mut self, request: Command) -> Result<(), ClientError> {
        let mut request = request.oneway();
        request.opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        self.send(&request)
    }

    fn send(&mut self, command: &Command) -> Result<(), ClientError> {
        let mut out = BytesMut::new();
        match &self.credentials {
            // Answers to the broker's requests go unsigned, as Java's hook leaves them.
            Some(credentials) if !command.is_response() => {
                let mut signed = command.clone();
                acl::sign(&mut signed, credentials, acl::SignatureAlgorithm::HmacSha1);
                frame::encode(&signed, self.encoding, &mut out)?;
            }
            _ => frame::encode(command, self.encoding, &mut out)?,
        }
        self.stream
            .write_all(&out)
            .map_err(|source| ClientError::Io {
                addr: self.addr.clone(),
                source,
            })
    }

    fn read_frame(&mut self, deadline: Instant, timeout: Duration) -> Result<Command, ClientError> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.decoder.decode(&mut self.buf) {
                Ok(Some(command)) => return Ok(command),
                Ok(None) => {}
                Err(e) => return Err(ClientError::Frame(self.addr.clone(), e)),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClientError::Timeout(self.addr.clone(), timeout));
            }
            let io = |source| ClientError::Io {
                addr: self.addr.clone(),
                source,
            };
            self.stream.tcp().set_read_timeout(Some(left)).map_err(io)?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ClientError::Closed(self.addr.clone())),
                Ok(n) => self
                    .buf
                    .extend_from_slice(chunk.get(..n).unwrap_or_default()),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ClientError::Timeout(self.addr.clone(), timeout));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(ClientError::Io {
                        addr: self.addr.clone(),
                        source,
                    });
                }
            }
        }
    }
}

/// A TCP connection to `addr`, opened within `timeout`, with Nagle off.
fn open_tcp(addr: &str, timeout: Duration) -> Result<TcpStream, ClientError> {
    let io = |source| ClientError::Io {
        addr: addr.to_owned(),
        source,
    };
    let resolved = addr
        .to_socket_addrs()
        .map_err(io)?
        .next()
        .ok_or_else(|| io(std::io::Error::other("address resolves to nothing")))?;
    let stream = TcpStream::connect_timeout(&resolved, timeout).map_err(io)?;
    stream.set_nodelay(true).map_err(io)?;
    Ok(stream)
}
