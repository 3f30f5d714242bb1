//! One open TCP connection's frame loops, shared by the consumer's driver and the producer's
//! connections: a reader that decodes frames and hands each to the owner (as a callback, or
//! as a [`Stream`] the owner polls itself), and a writer that sends the frames the owner
//! queues, both running until either side stops.

use std::io;
use std::ops::ControlFlow;

use bytes::{Bytes, BytesMut};
use futures_channel::mpsc;
use futures_io::{AsyncRead, AsyncWrite};
use futures_util::StreamExt;
use futures_util::future::{self, Either};
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
    /// The owner's frame handler asked to stop reading.
    Stopped,
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
            Self::Stopped => f.write_str("stopped reading"),
            Self::Write(e) => write!(f, "write: {e}"),
            Self::Unused => f.write_str("connection closed"),
        }
    }
}

/// Splits `stream`, passes each frame read to `on_frame` and writes the frames `queued`
/// yields, until either side stops; returns why.
pub(crate) async fn run(
    stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    queued: mpsc::UnboundedReceiver<Bytes>,
    on_frame: impl FnMut(Command) -> ControlFlow<()>,
) -> Ended {
    let (reader, writer) = stream.split();
    let read = Box::pin(read_frames(reader, on_frame));
    let write = Box::pin(write_frames(writer, queued));
    match future::select(read, write).await {
        Either::Left((ended, _)) | Either::Right((ended, _)) => ended,
    }
}

/// The frames read from `reader`, in order, ending with why reading stopped (never
/// [`Ended::Stopped`]: the owner stops by dropping the stream).
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

/// Passes each frame read from `reader` ([`frames`]) to `on_frame`, until the stream ends or
/// fails, carries something that is not a frame, or `on_frame` breaks; returns why.
async fn read_frames(
    reader: impl AsyncRead + Unpin + Send + 'static,
    mut on_frame: impl FnMut(Command) -> ControlFlow<()>,
) -> Ended {
    let mut frames = Box::pin(frames(reader));
    while let Some(read) = frames.next().await {
        match read {
            Ok(command) => {
                if on_frame(command).is_break() {
                    return Ended::Stopped;
                }
            }
            Err(ended) => return ended,
        }
    }
    Ended::ByPeer
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
