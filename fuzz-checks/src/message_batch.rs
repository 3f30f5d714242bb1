//! Message batch decoding never panics (CRC checked or not), reports errors inside the input,
//! and every accessor of every decoded message works.

use bytes::Bytes;
use rocketmq_proto::message::{DecodeOptions, decode_messages};

/// Runs the check on one input; panics when it finds a fault.
pub fn check(data: &[u8]) {
    let body = Bytes::copy_from_slice(data);
    for verify_crc in [false, true] {
        let options = DecodeOptions {
            verify_crc,
            ..DecodeOptions::default()
        };
        let batch = decode_messages(&body, &options);
        if let Some(error) = &batch.error {
            assert!(error.position <= data.len());
        }
        for msg in &batch.messages {
            let _ = (
                msg.topic(),
                msg.queue_id(),
                msg.queue_offset(),
                msg.commit_log_offset(),
            );
            let _ = (
                msg.born_host(),
                msg.store_host(),
                msg.tags(),
                msg.body().len(),
            );
            let _ = (msg.msg_id(), msg.offset_msg_id(), msg.properties().count());
        }
    }
}
