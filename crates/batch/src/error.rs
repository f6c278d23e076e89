//! The one error type of krec-batch.

use std::fmt;

use crate::Compression;

/// What is wrong with a legacy (v0/v1) message, as [`Error::InvalidLegacyMessage`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LegacyFault {
    /// "negative message size".
    NegativeSize,
    /// "message size below the minimum".
    BelowMinimumSize,
    /// "unsupported magic in legacy message".
    UnsupportedMagic,
    /// "CRC32 mismatch".
    Crc32Mismatch,
    /// "field length past the end".
    FieldLengthPastEnd,
    /// "negative field length other than -1".
    NegativeFieldLength,
    /// "field runs past the end".
    FieldPastEnd,
    /// "message size does not match its fields".
    SizeMismatch,
    /// "unknown or v2-only compression codec in legacy message".
    UnknownCodec,
    /// "message cut".
    Cut,
    /// "inner message cut".
    InnerCut,
    /// "compressed wrapper with a null value".
    NullWrapperValue,
    /// "inner message magic differs from the wrapper's".
    InnerMagicDiffers,
    /// "nested compression".
    NestedCompression,
    /// "inner offsets not increasing".
    InnerOffsetsNotIncreasing,
    /// "compressed wrapper holds no messages".
    EmptyWrapper,
    /// "inner offsets overflow".
    InnerOffsetsOverflow,
    /// "inner offsets go backwards".
    InnerOffsetsBackwards,
    /// "message changed after it was checked".
    ChangedAfterCheck,
}

impl LegacyFault {
    /// What the fault says, in words.
    pub fn reason(self) -> &'static str {
        match self {
            LegacyFault::NegativeSize => "negative message size",
            LegacyFault::BelowMinimumSize => "message size below the minimum",
            LegacyFault::UnsupportedMagic => "unsupported magic in legacy message",
            LegacyFault::Crc32Mismatch => "CRC32 mismatch",
            LegacyFault::FieldLengthPastEnd => "field length past the end",
            LegacyFault::NegativeFieldLength => "negative field length other than -1",
            LegacyFault::FieldPastEnd => "field runs past the end",
            LegacyFault::SizeMismatch => "message size does not match its fields",
            LegacyFault::UnknownCodec => "unknown or v2-only compression codec in legacy message",
            LegacyFault::Cut => "message cut",
            LegacyFault::InnerCut => "inner message cut",
            LegacyFault::NullWrapperValue => "compressed wrapper with a null value",
            LegacyFault::InnerMagicDiffers => "inner message magic differs from the wrapper's",
            LegacyFault::NestedCompression => "nested compression",
            LegacyFault::InnerOffsetsNotIncreasing => "inner offsets not increasing",
            LegacyFault::EmptyWrapper => "compressed wrapper holds no messages",
            LegacyFault::InnerOffsetsOverflow => "inner offsets overflow",
            LegacyFault::InnerOffsetsBackwards => "inner offsets go backwards",
            LegacyFault::ChangedAfterCheck => "message changed after it was checked",
        }
    }
}

impl fmt::Display for LegacyFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

/// Which length-prefixed field of a record or message a length error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// The record's own length prefix.
    RecordLength,
    /// The record's timestamp delta varlong.
    TimestampDelta,
    /// The record's offset delta varint.
    OffsetDelta,
    /// The record key.
    Key,
    /// The record value.
    Value,
    /// The number of headers of a record.
    HeaderCount,
    /// A header key.
    HeaderKey,
    /// A header value.
    HeaderValue,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::RecordLength => "record length",
            Field::TimestampDelta => "timestamp delta",
            Field::OffsetDelta => "offset delta",
            Field::Key => "key",
            Field::Value => "value",
            Field::HeaderCount => "header count",
            Field::HeaderKey => "header key",
            Field::HeaderValue => "header value",
        })
    }
}

/// Everything that can be wrong with the bytes krec-batch is given, and with what it is asked
/// to write.
///
/// In a decoding error `position` is always a byte position from the start of the walked
/// input: the start of the batch (or legacy message) the error is in. `offset` is the batch
/// base offset (or legacy message offset) when it could be read, and `record` the index of the
/// record inside the batch, in wire order, when the error is about one record. The writer's
/// errors ([`RecordTooLarge`](Error::RecordTooLarge) and those after it) have neither: they
/// are about a record or setting, not about bytes read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ends inside a batch where a whole batch was required (a segment file).
    #[error(
        "truncated batch at byte {position} (base offset {}): {available} bytes present, {}",
        InWords::new(.offset, ("", ""), "not present"),
        InWords::new(.needed, ("", " needed"), "too few to hold its length field")
    )]
    Truncated {
        /// Start of the truncated batch.
        position: usize,
        /// Its base offset, if the first 8 bytes were present.
        offset: Option<i64>,
        /// Bytes present from `position` to the end of the input.
        available: usize,
        /// Total size of the batch, if its length field was present.
        needed: Option<usize>,
    },
    /// The batch length field is below the smallest possible batch.
    #[error("batch at byte {position} (base offset {offset}) declares length {length}, below the minimum {minimum}")]
    BatchTooSmall {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Declared length (bytes after the length field).
        length: i32,
        /// Smallest valid length for this magic.
        minimum: usize,
    },
    /// The batch is larger than [`DecodeConfig::max_batch_bytes`](crate::DecodeConfig).
    #[error("batch at byte {position} (base offset {offset}) is {size} bytes, over the limit of {limit}")]
    BatchTooLarge {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Total batch size in bytes.
        size: usize,
        /// Configured limit.
        limit: usize,
    },
    /// The magic byte is not 0, 1 or 2.
    #[error("batch at byte {position} (base offset {offset}) has unsupported magic {magic}")]
    UnsupportedMagic {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// The magic byte found.
        magic: i8,
    },
    /// The stored checksum does not match the bytes (CRC32C for v2, CRC32 for v0/v1).
    #[error("checksum mismatch in batch at byte {position} (base offset {offset}): stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// Start of the batch or message.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Checksum found in the header.
        stored: u32,
        /// Checksum computed over the bytes.
        computed: u32,
    },
    /// The attributes name a compression codec Kafka does not define.
    #[error(
        "batch at byte {position} (base offset {offset}) uses unknown compression codec {codec}"
    )]
    UnknownCompression {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Codec number from the attributes.
        codec: u8,
    },
    /// A header field of the batch is impossible (negative count, offset overflow...).
    #[error("batch at byte {position} (base offset {offset}): invalid {field} {value}")]
    InvalidBatchField {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Name of the field.
        field: &'static str,
        /// Its value.
        value: i64,
    },
    /// The declared record count is above the configured limit or above what the bytes can hold.
    #[error("batch at byte {position} (base offset {offset}) declares {count} records; at most {limit} possible")]
    TooManyRecords {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Declared count.
        count: i64,
        /// Limit (configured, or implied by the byte length).
        limit: u64,
    },
    /// Decompression would produce more than [`DecodeConfig::max_decompressed_bytes`](crate::DecodeConfig).
    #[error("batch at byte {position} (base offset {offset}) decompresses ({codec:?}) past the limit of {limit} bytes")]
    DecompressedTooLarge {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Codec.
        codec: Compression,
        /// Configured limit.
        limit: usize,
    },
    /// The compressed payload is malformed.
    #[error(
        "batch at byte {position} (base offset {offset}): {codec:?} payload is corrupt: {reason}"
    )]
    Decompression {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Codec.
        codec: Compression,
        /// What the decompressor reported.
        reason: String,
    },
    /// A record ends before one of its fields does.
    #[error("record {record} of batch at byte {position} (base offset {offset}): {field} runs past the end ({needed} bytes needed at record byte {at}, {available} left)")]
    RecordTruncated {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Record index in the batch.
        record: u32,
        /// The field being read.
        field: Field,
        /// Byte position inside the records section (decompressed when compressed).
        at: usize,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left.
        available: usize,
    },
    /// A varint runs past 5 (varint) or 10 (varlong) bytes, or past the end of the data.
    #[error("record {record} of batch at byte {position} (base offset {offset}): malformed varint at record byte {at}")]
    BadVarint {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Record index in the batch.
        record: u32,
        /// Byte position inside the records section.
        at: usize,
    },
    /// A length is negative other than the -1 that means null, or null where not allowed.
    #[error("record {record} of batch at byte {position} (base offset {offset}): invalid {field} length {length}")]
    InvalidLength {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Record index in the batch.
        record: u32,
        /// The field.
        field: Field,
        /// The length found.
        length: i64,
    },
    /// A record's fields do not use exactly the bytes its length prefix declares.
    #[error("record {record} of batch at byte {position} (base offset {offset}) declares {declared} bytes but its fields use {used}")]
    RecordLengthMismatch {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Record index in the batch.
        record: u32,
        /// Declared length.
        declared: u64,
        /// Bytes the fields used.
        used: u64,
    },
    /// Records end before the declared count, or bytes remain after it.
    #[error("batch at byte {position} (base offset {offset}) declares {declared} records but holds {found} ({trailing} trailing bytes)")]
    RecordCountMismatch {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Declared count.
        declared: u32,
        /// Records actually read.
        found: u32,
        /// Bytes left after the last record read.
        trailing: usize,
    },
    /// A record's offset is outside the batch range or not after the previous one.
    #[error("record {record} of batch at byte {position} (base offset {offset}) has offset delta {delta}, expected in {min}..={max}")]
    OffsetOutOfOrder {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Record index in the batch.
        record: u32,
        /// Offset delta found.
        delta: i64,
        /// Smallest allowed delta.
        min: i64,
        /// Largest allowed delta (the batch's last offset delta).
        max: i64,
    },
    /// A control record's key or value is malformed.
    #[error(
        "control record {record} of batch at byte {position} (base offset {offset}): {reason}"
    )]
    InvalidControlRecord {
        /// Start of the batch.
        position: usize,
        /// Base offset.
        offset: i64,
        /// Record index.
        record: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// A legacy (v0/v1) message set is malformed.
    #[error(
        "legacy message at byte {position} (offset {offset}){}: {reason}",
        InWords::new(.record, (", inner message ", ""), "")
    )]
    InvalidLegacyMessage {
        /// Start of the top-level message.
        position: usize,
        /// Offset of the top-level message.
        offset: i64,
        /// Index of the inner message, when inside a compressed wrapper.
        record: Option<u32>,
        /// What is wrong.
        reason: LegacyFault,
    },
    /// A record is too large to send: a batch holding it alone would pass the limit
    /// ([`WriteConfig::max_record_size`](crate::WriteConfig), the producer's
    /// `max.request.size`).
    #[error("a record of {size} bytes (in a batch of its own) is over the limit of {limit} bytes (max.request.size)")]
    RecordTooLarge {
        /// Bytes of a batch holding the record alone, header included, before compression.
        size: u64,
        /// The limit.
        limit: usize,
    },
    /// A record re-encoded for a copy ([`reencode`](crate::reencode)) does not fit the
    /// target: a batch holding it alone is over the limit (the target topic's
    /// `max.message.bytes`). `offset` is the record's offset in the source.
    #[error("the record at offset {offset} makes a batch of {size} bytes alone, over the limit of {limit} bytes (max.message.bytes)")]
    RecordOverBatchLimit {
        /// The record's offset in the batch it was copied from.
        offset: i64,
        /// Bytes of a batch holding the record alone, header included, compressed.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A batch was finished with no records in it (Kafka has no use for an empty batch).
    #[error("a batch with no records cannot be finished")]
    EmptyBatch,
    /// A compression level Kafka does not allow for the codec (`compression.<codec>.level`).
    #[error(
        "compression.{}.level {level} is out of range {min}..={max}{}",
        .codec.name(),
        if *.codec == Compression::Gzip { " (or -1, the default)" } else { "" }
    )]
    InvalidCompressionLevel {
        /// The codec.
        codec: Compression,
        /// The level asked for.
        level: i32,
        /// The lowest level Kafka allows for the codec.
        min: i32,
        /// The highest.
        max: i32,
    },
    /// The compressor failed (the codec library reported an error).
    #[error("{} compression failed: {reason}", .codec.name())]
    CompressionFailed {
        /// The codec.
        codec: Compression,
        /// What the codec library reported.
        reason: &'static str,
    },
}

/// An optional number in a message, in words: `{before}{value}{after}` when present,
/// `missing` when not (never Rust's `Some(..)` / `None`).
struct InWords<'a, T> {
    value: &'a Option<T>,
    before: &'static str,
    after: &'static str,
    missing: &'static str,
}

impl<'a, T> InWords<'a, T> {
    fn new(
        value: &'a Option<T>,
        (before, after): (&'static str, &'static str),
        missing: &'static str,
    ) -> Self {
        InWords {
            value,
            before,
            after,
            missing,
        }
    }
}

impl<T: fmt::Display> fmt::Display for InWords<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(value) => write!(f, "{}{value}{}", self.before, self.after),
            None => f.write_str(self.missing),
        }
    }
}

/// The `position` field of an error, whichever variant it is (every decoding variant has
/// one, the writer's have none), as `Option<&usize>` or `Option<&mut usize>` after the
/// reference given: one list of variants for [`Error::position`] and
/// [`Error::with_input_start`], so a new variant cannot be added to one and forgotten in the
/// other (the match is exhaustive).
macro_rules! position_field {
    ($error:expr) => {
        match $error {
            Error::Truncated { position, .. }
            | Error::BatchTooSmall { position, .. }
            | Error::BatchTooLarge { position, .. }
            | Error::UnsupportedMagic { position, .. }
            | Error::ChecksumMismatch { position, .. }
            | Error::UnknownCompression { position, .. }
            | Error::InvalidBatchField { position, .. }
            | Error::TooManyRecords { position, .. }
            | Error::DecompressedTooLarge { position, .. }
            | Error::Decompression { position, .. }
            | Error::RecordTruncated { position, .. }
            | Error::BadVarint { position, .. }
            | Error::InvalidLength { position, .. }
            | Error::RecordLengthMismatch { position, .. }
            | Error::RecordCountMismatch { position, .. }
            | Error::OffsetOutOfOrder { position, .. }
            | Error::InvalidControlRecord { position, .. }
            | Error::InvalidLegacyMessage { position, .. } => Some(position),
            Error::RecordTooLarge { .. }
            | Error::RecordOverBatchLimit { .. }
            | Error::EmptyBatch
            | Error::InvalidCompressionLevel { .. }
            | Error::CompressionFailed { .. } => None,
        }
    };
}

impl Error {
    /// Byte position (from the start of the walked input) of the batch the error is in;
    /// `None` for the writer's errors.
    pub fn position(&self) -> Option<usize> {
        position_field!(self).copied()
    }

    /// Base offset of the batch the error is in, when it could be read; `None` for the
    /// writer's errors.
    pub fn offset(&self) -> Option<i64> {
        match self {
            Error::Truncated { offset, .. } => *offset,
            Error::BatchTooSmall { offset, .. }
            | Error::BatchTooLarge { offset, .. }
            | Error::UnsupportedMagic { offset, .. }
            | Error::ChecksumMismatch { offset, .. }
            | Error::UnknownCompression { offset, .. }
            | Error::InvalidBatchField { offset, .. }
            | Error::TooManyRecords { offset, .. }
            | Error::DecompressedTooLarge { offset, .. }
            | Error::Decompression { offset, .. }
            | Error::RecordTruncated { offset, .. }
            | Error::BadVarint { offset, .. }
            | Error::InvalidLength { offset, .. }
            | Error::RecordLengthMismatch { offset, .. }
            | Error::RecordCountMismatch { offset, .. }
            | Error::OffsetOutOfOrder { offset, .. }
            | Error::InvalidControlRecord { offset, .. }
            | Error::InvalidLegacyMessage { offset, .. } => Some(*offset),
            Error::RecordTooLarge { .. }
            | Error::RecordOverBatchLimit { .. }
            | Error::EmptyBatch
            | Error::InvalidCompressionLevel { .. }
            | Error::CompressionFailed { .. } => None,
        }
    }

    /// The same error for a walk over a window of a larger input that begins at byte `start`
    /// of it (a file decoded run by run): its position becomes the larger input's. Every other
    /// field is already relative to the batch, or to the end of the input.
    pub fn with_input_start(mut self, start: usize) -> Error {
        if let Some(position) = position_field!(&mut self) {
            *position = position.saturating_add(start);
        }
        self
    }

    /// Index of the record inside its batch, when the error is about one record.
    pub fn record_index(&self) -> Option<u32> {
        match self {
            Error::RecordTruncated { record, .. }
            | Error::BadVarint { record, .. }
            | Error::InvalidLength { record, .. }
            | Error::RecordLengthMismatch { record, .. }
            | Error::OffsetOutOfOrder { record, .. }
            | Error::InvalidControlRecord { record, .. } => Some(*record),
            Error::InvalidLegacyMessage { record, .. } => *record,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, LegacyFault};

    #[test]
    fn with_input_start_moves_only_the_position() {
        let error = Error::Truncated {
            position: 40,
            offset: Some(7),
            available: 20,
            needed: Some(90),
        };
        let moved = error.with_input_start(1000);
        assert_eq!(moved.position(), Some(1040));
        assert_eq!(moved.offset(), Some(7));
        assert_eq!(
            moved.to_string(),
            "truncated batch at byte 1040 (base offset 7): 20 bytes present, 90 needed"
        );
        let far = Error::BatchTooSmall {
            position: 5,
            offset: -1,
            length: -1,
            minimum: 14,
        }
        .with_input_start(usize::MAX);
        assert_eq!(far.position(), Some(usize::MAX), "saturates, never panics");
    }

    #[test]
    fn messages_name_missing_parts_in_words_not_as_options() {
        let cut_short = Error::Truncated {
            position: 3,
            offset: None,
            available: 5,
            needed: None,
        };
        assert_eq!(
            cut_short.to_string(),
            "truncated batch at byte 3 (base offset not present): 5 bytes present, \
             too few to hold its length field"
        );
        let legacy = |record| Error::InvalidLegacyMessage {
            position: 0,
            offset: 9,
            record,
            reason: LegacyFault::InnerOffsetsBackwards,
        };
        assert_eq!(
            legacy(Some(2)).to_string(),
            "legacy message at byte 0 (offset 9), inner message 2: inner offsets go backwards"
        );
        assert_eq!(
            legacy(None).to_string(),
            "legacy message at byte 0 (offset 9): inner offsets go backwards"
        );
    }
}
