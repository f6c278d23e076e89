//! xxHash32 (seed 0), the checksum of every LZ4 frame field.

/// xxHash32 of `data` with seed 0.
pub(crate) fn xxh32(data: &[u8]) -> u32 {
    twox_hash::XxHash32::oneshot(0, data)
}

/// The header checksum byte: the second byte of the hash.
pub(crate) fn header_checksum_byte(hashed: &[u8]) -> u8 {
    (xxh32(hashed) >> 8) as u8
}
