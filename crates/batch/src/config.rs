//! Limits and switches for decoding.

/// Limits and switches. Every limit bounds memory that a length on the wire could otherwise
/// make us allocate.
#[derive(Clone, Debug)]
pub struct DecodeConfig {
    /// Check the CRC32C (v2) or CRC32 (v0/v1) of every batch, like the Java client's `check.crcs`.
    pub verify_crc: bool,
    /// Largest batch (in bytes, whole batch including its 12-byte log overhead) accepted.
    pub max_batch_bytes: usize,
    /// Largest decompressed size of one batch's records.
    pub max_decompressed_bytes: usize,
    /// Largest record count one batch may declare.
    pub max_records_per_batch: usize,
}

impl Default for DecodeConfig {
    fn default() -> Self {
        DecodeConfig {
            verify_crc: true,
            max_batch_bytes: 64 << 20,
            max_decompressed_bytes: 64 << 20,
            max_records_per_batch: 16 << 20,
        }
    }
}
