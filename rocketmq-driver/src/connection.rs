//! One open connection's frame loops, shared by every driver task (`driver::conns`): a reader
//! that decodes frames into a [`Stream`] the task polls itself, and a writer that sends the
//! frames the task queues, each running until its side stops.

use std::io;

use bytes::{Bytes, BytesMut};
use futures_channel::mpsc;
use futures_io::{AsyncRead, AsyncWrite};
use futures_util::StreamExt;
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::stream::{self, Stream};
use proto::{Command, FrameDecoder, FrameError};

/// Bytes read from a socket at a time.
const READ_CHUNK: usize = 64 * 1024;

/// Why a connection's loops stopped.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The peer closed the stream.
    ByPeer,
    /// Reading failed.
    Read(io::Error),
    /// The peer sent something that is not a frame.
    BadFrame(FrameError),
    /// Writing failed.
    Write(io::Error),
    /// Every sender of the write queue is gone: nobody can send on the connection any more.
    Unused,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ByPeer => f.write_str("closed by the peer"),
            Self::Read(e) => write!(f, "read: {e}"),
            Self::BadFrame(e) => write!(f, "bad frame from the peer: {e}"),
            Self::Write(e) => write!(f, "write: {e}"),
            Self::Unused => f.write_str("connection closed"),
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

/// Writes queued frames, flushing once the queue is empty, until a write fails or every sender
/// is gone (then it closes the writer); returns why.
pub(crate) async fn write_frames(
    mut writer: impl AsyncWrite + Unpin,
    mut queued: mpsc::UnboundedReceiver<Bytes>,
) -> Ended {
    while let Some(frame) = queued.next().await {
        if let Err(e) = writer.write_all(&frame).await {
            return Ended::Write(e);
        }
        while let Ok(frame) = queued.try_recv() {
            if let Err(e) = writer.write_all(&frame).await {
                return Ended::Write(e);
            }
        }
        if let Err(e) = writer.flush().await {
            return Ended::Write(e);
        }
    }
    let _ = writer.close().await;
    Ended::Unused
}
