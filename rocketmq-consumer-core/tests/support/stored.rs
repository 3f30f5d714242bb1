//! Messages as a pull decodes them, for the tests that need some.

use bytes::BytesMut;
use proto::message::{DecodeOptions, Message, StoredMessage, decode_messages, encode_stored};

/// Decoded messages of topic `T` at `offsets`, each with a body of 10 bytes.
pub(crate) fn messages(offsets: impl IntoIterator<Item = i64>) -> Vec<Message> {
    let mut buf = BytesMut::new();
    for offset in offsets {
        let stored = StoredMessage {
            queue_offset: offset,
            body: vec![0u8; 10].into(),
            topic: "T".into(),
            ..StoredMessage::default()
        };
        encode_stored(&stored, &mut buf).expect("valid record");
    }
    decode_messages(&buf.freeze(), &DecodeOptions::default()).messages
}
