//! One open connection's reading, shared by every driver task (`driver::conns`, which writes
//! itself): the frames decoded from the socket as a [`Stream`] the task polls.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use futures_io::AsyncRead;
use futures_util::stream::{self, Stream};
use proto::{Command, FrameDecoder, FrameError};

use crate::runtime::Runtime;
use crate::transport::{Half, Transport};

/// The size of a region of a connection's read buffer ([`ReadBuffer`]), and so of the largest
/// read. A read that fills the room leaves the socket marked readable, so the next read is
/// tried at once: with 64 KiB, a pass over the pull answers that arrived together (often a few
/// hundred KiB of 1 KiB messages) took four or five `recvfrom`s where one would do.
const REGION: usize = 256 * 1024;
/// With less room than this after the bytes read, the next read goes to a new region.
const MIN_ROOM: usize = 64 * 1024;
/// Regions kept for use again (see [`ReadBuffer`]).
const KEPT_REGIONS: usize = 4;

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

/// What a connection is read into: regions of [`REGION`] bytes, each cut into the frames read
/// into it (a frame, and the messages decoded from it, keep their region alive). A region whose
/// frames have all been dropped is used again: warm in the cache and mapped, where the
/// allocator, asked for a new region at every turn, would hand out fresh pages (a page fault
/// every 4 KiB: ten times the faults of the whole drain before).
struct ReadBuffer {
    /// The bytes read and not yet cut into frames, and the room after them.
    filled: BytesMut,
    /// Earlier regions, oldest first: each an empty view of its region, which gets the whole
    /// region back once nothing else holds it.
    earlier: VecDeque<BytesMut>,
}

impl ReadBuffer {
    /// A buffer with its first region (an open connection is read at once).
    fn new() -> Self {
        Self {
            filled: BytesMut::with_capacity(REGION),
            earlier: VecDeque::new(),
        }
    }

    /// Makes room for the next read: at least [`MIN_ROOM`], and the rest of a frame of
    /// `frame_len` bytes at the front. The bytes not yet cut into frames (the start of one)
    /// move to the front of the next region when this one has too little room left.
    fn make_room(&mut self, frame_len: usize) {
        let len = self.filled.len();
        let room = MIN_ROOM.max(frame_len.saturating_sub(len));
        if self.filled.capacity() - len >= room {
            return;
        }
        let size = REGION.max(len + room);
        let free = self
            .earlier
            .iter_mut()
            .position(|region| region.try_reclaim(size));
        let mut next = match free.and_then(|at| self.earlier.remove(at)) {
            Some(region) => region,
            None => BytesMut::with_capacity(size),
        };
        next.extend_from_slice(&self.filled);
        let mut last = std::mem::replace(&mut self.filled, next);
        last.clear();
        if self.earlier.len() == KEPT_REGIONS {
            self.earlier.pop_front();
        }
        self.earlier.push_back(last);
    }
}

/// A connection's reading half, and how it reads: in place when the runtime can
/// ([`Runtime::poll_read_in_place`]), through [`AsyncRead`] and a buffer of its own otherwise.
pub(crate) struct Reader<R: Runtime> {
    half: Half<R::Stream>,
    /// Where [`AsyncRead`] reads go before they are copied; allocated at the first.
    copied_from: Vec<u8>,
}

impl<R: Runtime> Reader<R> {
    pub(crate) fn new(half: Half<R::Stream>) -> Self {
        Self {
            half,
            copied_from: Vec::new(),
        }
    }

    /// Reads what the connection has into the room after `buf` (which has some), appended
    /// to it; 0 at its end.
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let mut transport = self.half.lock();
        if let Transport::Plain(stream) = &mut *transport
            && let Some(read) = R::poll_read_in_place(Pin::new(stream), cx, buf)
        {
            return read;
        }
        if self.copied_from.is_empty() {
            self.copied_from = vec![0; REGION];
        }
        // No more than fits the room: the copy never moves `buf` to a new allocation.
        let room = (buf.capacity() - buf.len()).min(self.copied_from.len());
        let Some(into) = self.copied_from.get_mut(..room) else {
            return Poll::Ready(Ok(0));
        };
        let n = match Pin::new(&mut *transport).poll_read(cx, into) {
            Poll::Ready(Ok(n)) => n,
            other => return other,
        };
        let Some(read) = into.get(..n) else {
            return Poll::Ready(Err(io::Error::other(format!(
                "the stream said it read {n} bytes into {room}"
            ))));
        };
        buf.extend_from_slice(read);
        Poll::Ready(Ok(n))
    }
}

/// The frames read from `reader`, in order, ending with why reading stopped (the owner stops
/// reading by dropping the stream).
pub(crate) fn frames<R: Runtime>(
    reader: Reader<R>,
) -> impl Stream<Item = Result<Command, Ended>> + Send + 'static {
    let state = Some((reader, FrameDecoder::default(), ReadBuffer::new()));
    stream::unfold(state, |state| async move {
        let (mut reader, mut decoder, mut buf) = state?;
        loop {
            let pending = match decoder.decode_whole(&mut buf.filled) {
                Ok(Some(command)) => {
                    return Some((Ok(command), Some((reader, decoder, buf))));
                }
                // `decode_whole` has checked the length of the frame at the front.
                Ok(None) => decoder.frame_len(&buf.filled).ok().flatten(),
                Err(e) => return Some((Err(Ended::BadFrame(e)), None)),
            };
            buf.make_room(pending.unwrap_or(0));
            match poll_fn(|cx| reader.poll_read_into(cx, &mut buf.filled)).await {
                Ok(0) => return Some((Err(Ended::ByPeer), None)),
                Err(e) => return Some((Err(Ended::Read(e)), None)),
                Ok(_) => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills the room after the bytes read with `byte`, up to `keep` bytes of room left, and
    /// cuts what was read into one "frame" but for the last `partial` bytes.
    fn fill_and_cut(buf: &mut ReadBuffer, byte: u8, keep: usize, partial: usize) -> bytes::Bytes {
        let room = buf.filled.capacity() - buf.filled.len();
        buf.filled.extend(std::iter::repeat_n(byte, room - keep));
        let cut = buf.filled.len() - partial;
        buf.filled.split_to(cut).freeze()
    }

    #[test]
    fn a_region_whose_frames_were_all_dropped_is_used_again() {
        let mut buf = ReadBuffer::new();
        buf.make_room(0);
        let first = buf.filled.as_ptr();
        assert!(buf.filled.capacity() >= REGION);
        let frame = fill_and_cut(&mut buf, 1, 100, 10);
        buf.make_room(0);
        assert_eq!(
            &buf.filled[..],
            &[1; 10],
            "the partial frame moved to a new region"
        );
        assert_ne!(buf.filled.as_ptr(), first);
        drop(frame);
        let second = fill_and_cut(&mut buf, 2, 100, 20);
        buf.make_room(0);
        assert_eq!(buf.filled.as_ptr(), first, "the first region, free again");
        assert_eq!(&buf.filled[..], &[2; 20]);
        assert!(buf.filled.capacity() >= REGION);
        drop(second);
    }

    #[test]
    fn a_region_still_held_by_a_frame_is_not_written_over() {
        let mut buf = ReadBuffer::new();
        buf.make_room(0);
        let first = buf.filled.as_ptr();
        let held = fill_and_cut(&mut buf, 1, 100, 0);
        buf.make_room(0);
        let _second = fill_and_cut(&mut buf, 2, 100, 0);
        buf.make_room(0);
        assert_ne!(buf.filled.as_ptr(), first);
        assert!(held.iter().all(|&b| b == 1), "the held frame is intact");
    }

    #[test]
    fn a_frame_larger_than_a_region_gets_room_for_all_of_it() {
        let mut buf = ReadBuffer::new();
        buf.make_room(0);
        buf.filled.extend_from_slice(&[7; 1000]);
        buf.make_room(3 * REGION);
        assert!(buf.filled.capacity() >= 3 * REGION);
        assert_eq!(&buf.filled[..], &[7; 1000]);
        let room = buf.filled.capacity();
        buf.make_room(3 * REGION);
        assert_eq!(
            buf.filled.capacity(),
            room,
            "room enough already: nothing moves"
        );
    }
}
