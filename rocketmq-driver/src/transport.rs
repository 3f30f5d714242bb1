//! A connection as the driver and the producer use it: plain TCP, or TLS over it when the
//! client was given a [`Tls`](crate::Tls) (the `tls` feature).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use futures_io::{AsyncRead, AsyncWrite};

use crate::runtime::Runtime;

/// A client's TLS settings, made ready ([`crate::tls::Connector`]); without the `tls` feature
/// there are none.
#[cfg(feature = "tls")]
pub(crate) type Connector = crate::tls::Connector;
/// A client's TLS settings; without the `tls` feature there can be none.
#[cfg(not(feature = "tls"))]
#[derive(Clone, Debug)]
pub(crate) enum Connector {}

/// Opens a connection to `addr`: plain TCP, or TLS with `tls`.
pub(crate) async fn connect<R: Runtime>(
    runtime: &R,
    addr: String,
    tls: Option<&Connector>,
) -> io::Result<Transport<R::Stream>> {
    let stream = runtime.connect(addr.clone()).await?;
    match tls {
        None => Ok(Transport::Plain(stream)),
        #[cfg(feature = "tls")]
        Some(tls) => Ok(Transport::Tls(Box::new(
            crate::tls::handshake(tls, &addr, stream).await?,
        ))),
        #[cfg(not(feature = "tls"))]
        Some(never) => match *never {},
    }
}

/// A connection: plain, or TLS over the runtime's stream.
pub(crate) enum Transport<S> {
    Plain(S),
    #[cfg(feature = "tls")]
    Tls(Box<futures_rustls::client::TlsStream<S>>),
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Transport<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Transport<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_close(cx),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_close(cx),
        }
    }
}

/// One of a connection's two halves ([`split`]): the reading and the writing of a connection
/// are separate streams to the driver, but one task polls both, so the lock is never waited
/// for; it only makes sharing the connection sound. Unlike `futures`' split halves, a half
/// gives the connection itself to the reader, so a runtime may read into it in place
/// ([`Runtime::poll_read_in_place`]).
pub(crate) struct Half<S>(Arc<Mutex<Transport<S>>>);

/// The reading and the writing half of `transport`.
pub(crate) fn split<S>(transport: Transport<S>) -> (Half<S>, Half<S>) {
    let shared = Arc::new(Mutex::new(transport));
    (Half(Arc::clone(&shared)), Half(shared))
}

impl<S> Half<S> {
    /// The connection. A panic while it was held leaves it as the panic found it, which the
    /// next read or write reports if it is broken.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Transport<S>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Half<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.lock()).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.lock()).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.lock()).poll_close(cx)
    }
}
