//! Message `sysFlag` bits (`MessageSysFlag.java`, `remoting-protocol.md` §5.3).

/// Bit 0: the body is compressed, with the algorithm in [`COMPRESSION_TYPE_MASK`].
pub const COMPRESSED: i32 = 0x1;
/// Bit 1: set by the broker for `MULTI_TAG` topics.
pub const MULTI_TAGS: i32 = 0x2;
/// Bits 2-3: the transaction type (`getTransactionValue`).
pub const TRANSACTION_MASK: i32 = 0xC;
/// Transaction type: not transactional.
pub const TRANSACTION_NOT_TYPE: i32 = 0;
/// Transaction type: a half message. Never enters a consume queue.
pub const TRANSACTION_PREPARED: i32 = 0x4;
/// Transaction type: committed.
pub const TRANSACTION_COMMIT: i32 = 0x8;
/// Transaction type: rolled back. Never enters a consume queue.
pub const TRANSACTION_ROLLBACK: i32 = 0xC;
/// Bit 4: `BORNHOST` is IPv6 (16 address bytes instead of 4).
pub const BORN_HOST_V6: i32 = 0x10;
/// Bit 5: `STOREHOST` is IPv6.
pub const STORE_HOST_V6: i32 = 0x20;
/// Bit 6: the body is an inner batch to unwrap (5.x batch consume queue).
pub const NEED_UNWRAP: i32 = 0x40;
/// Bit 7: the record is an inner batch (5.x batch consume queue).
pub const INNER_BATCH: i32 = 0x80;
/// Bits 8-10: the compression type (`CompressionType.findByValue`): 1 LZ4, 2 ZSTD, 3 ZLIB, and
/// 0 also ZLIB, for producers older than the field.
pub const COMPRESSION_TYPE_MASK: i32 = 0x700;
/// Shift of the compression type within the `sysFlag`.
pub const COMPRESSION_TYPE_SHIFT: u32 = 8;
/// Compression type bits for LZ4 (frame format).
pub const COMPRESSION_LZ4: i32 = 1 << COMPRESSION_TYPE_SHIFT;
/// Compression type bits for ZSTD.
pub const COMPRESSION_ZSTD: i32 = 2 << COMPRESSION_TYPE_SHIFT;
/// Compression type bits for ZLIB.
pub const COMPRESSION_ZLIB: i32 = 3 << COMPRESSION_TYPE_SHIFT;

/// The compression type field (bits 8-10) of `sys_flag`, whether or not [`COMPRESSED`] is set.
pub fn compression_type(sys_flag: i32) -> u8 {
    ((sys_flag & COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT) as u8
}

/// The transaction type bits (one of the `TRANSACTION_*` values).
pub fn transaction_type(sys_flag: i32) -> i32 {
    sys_flag & TRANSACTION_MASK
}

/// Whether `sys_flag` marks an inner batch to unwrap: both [`NEED_UNWRAP`] and [`INNER_BATCH`]
/// (`PullAPIWrapper.processPullResult`).
pub fn is_inner_batch(sys_flag: i32) -> bool {
    sys_flag & (NEED_UNWRAP | INNER_BATCH) == NEED_UNWRAP | INNER_BATCH
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_bits_of_the_capture() {
        // pull-found-zlib.bin stores its compressed message with sysFlag 0x301.
        assert_eq!(compression_type(0x301), 3);
        assert_eq!(0x301, COMPRESSED | COMPRESSION_ZLIB);
        assert_eq!(compression_type(COMPRESSED), 0);
    }

    #[test]
    fn inner_batch_needs_both_bits() {
        assert!(is_inner_batch(NEED_UNWRAP | INNER_BATCH | COMPRESSED));
        assert!(!is_inner_batch(NEED_UNWRAP));
        assert!(!is_inner_batch(INNER_BATCH));
    }
}
