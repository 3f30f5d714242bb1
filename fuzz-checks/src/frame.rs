//! The frame decoder never panics, never consumes more than it was given, and yields the same
//! commands however the input is chunked (the first byte picks the chunk size), whether it
//! reserves room for partial frames (`decode`) or not (`decode_whole`, which the driver uses,
//! with `frame_len` telling it what a partial frame needs). Every command it yields, written
//! again with a JSON header, reads back as the same command (the header's writer escapes what
//! it must and nothing it reads back differently).

use bytes::BytesMut;
use rocketmq_proto::{Command, FrameDecoder, FrameError, HeaderEncoding, frame};

type Decode = fn(&mut FrameDecoder, &mut BytesMut) -> Result<Option<Command>, FrameError>;

fn decode_all(input: &[u8], chunk: usize, decode: Decode) -> (Vec<Command>, Option<FrameError>) {
    let mut decoder = FrameDecoder::new(64 * 1024);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in input.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            let before = buf.len();
            match decode(&mut decoder, &mut buf) {
                Ok(Some(command)) => {
                    assert!(buf.len() < before, "a frame must consume bytes");
                    out.push(command);
                }
                Ok(None) => {
                    assert_eq!(buf.len(), before, "no frame, no bytes consumed");
                    if let Ok(Some(needed)) = decoder.frame_len(&buf) {
                        assert!(needed > buf.len(), "a whole frame was left undecoded");
                    }
                    break;
                }
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
    let whole = decode_all(input, input.len(), FrameDecoder::decode);
    let chunked = decode_all(input, usize::from(chunk), FrameDecoder::decode);
    assert_eq!(whole, chunked, "chunking changed the decoded frames");
    let in_place = decode_all(input, usize::from(chunk), FrameDecoder::decode_whole);
    assert_eq!(
        whole, in_place,
        "decode_whole decoded other frames than decode"
    );
    for command in &whole.0 {
        let mut wire = BytesMut::new();
        // Escapes can make a header longer than the limit it was read under: not a fault.
        if frame::encode(command, HeaderEncoding::Json, &mut wire).is_err() {
            continue;
        }
        let again = FrameDecoder::new(usize::MAX)
            .decode(&mut wire)
            .expect("a written frame reads back")
            .expect("a written frame is whole");
        assert_eq!(&again, command, "a command changed through its JSON header");
        assert!(wire.is_empty(), "a written frame is read whole");
    }
}
