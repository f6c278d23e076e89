//! Limits and switches for decoding, and the writer's limits.

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

/// Limits of the batch writer ([`BatchWriter`](crate::BatchWriter)): a producer's
/// `batch.size` and `max.request.size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteConfig {
    /// A batch takes no further record once its header and records (before compression)
    /// would pass this many bytes; its first record always fits (`batch.size`).
    pub batch_size: usize,
    /// Largest batch of one record (header included, before compression): a larger record
    /// is an error (the producer's `max.request.size`).
    pub max_record_size: usize,
}

impl Default for WriteConfig {
    /// The Java producer's defaults: `batch.size` 16 KiB, `max.request.size` 1 MiB.
    fn default() -> Self {
        WriteConfig {
            batch_size: 16 << 10,
            max_record_size: 1 << 20,
        }
    }
}
