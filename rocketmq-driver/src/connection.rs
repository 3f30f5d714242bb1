//! One open connection's reading, shared by every driver task (`driver::conns`, which writes
//! itself): the frames decoded from the socket as a [`Stream`] the task polls.

use std::io;

use bytes::BytesMut;
use futures_io::AsyncRead;
use futures_util::io::AsyncReadExt;
use futures_util::stream::{self, Stream};
use proto::{Command, FrameDecoder, FrameError};

/// Bytes read from a socket at a time. A read that fills the chunk leaves the socket marked
/// readable, so the next read is tried at once: with 64 KiB, a pass over the pull answers
/// that arrived together (often a few hundred KiB of 1 KiB messages) took four or five
/// `recvfrom`s where one would do. One buffer of this size per connection.
const READ_CHUNK: usize = 256 * 1024;

/// Why reading a connection stopped.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The peer closed the stream.
    ByPeer,
    /// Reading failed.
    Read(io::Error),
    /// The peer sent something that is not a frame.
    BadFrame(FrameError),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ByPeer => f.write_str("closed by the peer"),
            Self::Read(e) => write!(f, "read: {e}"),
            Self::BadFrame(e) => write!(f, "bad frame from the peer: {e}"),
        }
    }
}

/// The frames read from `reader`, in order, ending with why reading stopped (the owner stops
/// reading by dropping the stream).
pub(crate) fn frames(
    reader: impl AsyncRead + Unpin + Send + 'static,
) -> impl Stream<Item = Result<Command, Ended>> + Send + 'static {
    let state = Some((
        reader,
        FrameDecoder::default(),
        BytesMut::new(),
        vec![0; READ_CHUNK],
    ));
    stream::unfold(state, |state| async move {
        let (mut reader, mut decoder, mut buf, mut chunk) = state?;
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(command)) => {
                    return Some((Ok(command), Some((reader, decoder, buf, chunk))));
                }
                Ok(None) => {}
                Err(e) => return Some((Err(Ended::BadFrame(e)), None)),
            }
            match reader.read(&mut chunk).await {
                Ok(0) => return Some((Err(Ended::ByPeer), None)),
                Err(e) => return Some((Err(Ended::Read(e)), None)),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
}
