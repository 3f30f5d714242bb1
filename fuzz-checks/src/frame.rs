//! The frame decoder never panics, never consumes more than it was given, and yields the same
//! commands however the input is chunked (the first byte picks the chunk size).

use bytes::BytesMut;
use rocketmq_proto::{Command, FrameDecoder, FrameError};

fn decode_all(input: &[u8], chunk: usize) -> (Vec<Command>, Option<FrameError>) {
    let mut decoder = FrameDecoder::new(64 * 1024);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in input.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            let before = buf.len();
            match decoder.decode(&mut buf) {
                Ok(Some(command)) => {
                    assert!(buf.len() < before, "a frame must consume bytes");
                    out.push(command);
                }
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

/// Runs the check on one input; panics when it finds a fault.
pub fn check(data: &[u8]) {
    let Some((&chunk, input)) = data.split_first() else {
        return;
    };
    let whole = decode_all(input, input.len());
    let chunked = decode_all(input, usize::from(chunk));
    assert_eq!(whole, chunked, "chunking changed the decoded frames");
}
