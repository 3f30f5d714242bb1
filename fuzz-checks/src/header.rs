//! Header decoding (JSON and binary) never panics, and a header that decodes re-encodes in the
//! same encoding to one that decodes to the same command.

use bytes::{BufMut, BytesMut};
use rocketmq_proto::{FrameDecoder, HeaderEncoding, frame};

/// Runs the check on one input; panics when it finds a fault.
pub fn check(data: &[u8]) {
    let Some((&selector, header)) = data.split_first() else {
        return;
    };
    let (type_byte, encoding) = if selector & 1 == 0 {
        (0u32, HeaderEncoding::Json)
    } else {
        (1u32, HeaderEncoding::Binary)
    };
    let Ok(header_len) = u32::try_from(header.len()) else {
        return;
    };
    if header_len > 0x00FF_FFFF {
        return;
    }
    let mut buf = BytesMut::new();
    buf.put_u32(4 + header_len);
    buf.put_u32((type_byte << 24) | header_len);
    buf.extend_from_slice(header);
    let mut decoder = FrameDecoder::default();
    let Ok(Some(command)) = decoder.decode(&mut buf) else {
        return;
    };
    let mut again = BytesMut::new();
    if frame::encode(&command, encoding, &mut again).is_err() {
        return;
    }
    let reparsed = decoder
        .decode(&mut again)
        .expect("a re-encoded command decodes")
        .expect("a re-encoded command is one whole frame");
    assert_eq!(command, reparsed);
}
