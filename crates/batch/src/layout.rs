//! The wire layout of a log entry (a RecordBatch v2 or a legacy v0/v1 message): where each
//! header field sits, how long the fixed parts are, what each attribute bit means, and the
//! one reader of the entry header that every walk over entries uses ([`EntryHeader`]).
//!
//! Every entry starts the same way: the 12-byte entry header (base offset, length), then 4
//! bytes (v2: partition leader epoch; legacy: CRC32), then the magic byte. Offsets below count
//! from the first byte of the entry.

/// Bytes of the entry header that starts every entry: base offset (`i64`) then length
/// (`i32`, the bytes that follow it). Kafka calls it the log overhead.
pub const ENTRY_HEADER_SIZE: usize = 12;
/// Where the base offset (v2) or message offset (legacy) is.
pub const BASE_OFFSET_AT: usize = 0;
/// Where the length field is.
pub const LENGTH_AT: usize = 8;
/// Where the magic byte is, in entries of every magic.
pub const MAGIC_AT: usize = 16;

/// Magic byte values.
pub mod magic {
    /// Legacy message, no timestamp.
    pub const V0: u8 = 0;
    /// Legacy message with a timestamp and relative inner offsets.
    pub const V1: u8 = 1;
    /// RecordBatch v2.
    pub const V2: u8 = 2;
}

/// RecordBatch v2 header fields.
pub mod v2 {
    use super::ENTRY_HEADER_SIZE;

    /// Partition leader epoch (`i32`).
    pub const PARTITION_LEADER_EPOCH_AT: usize = 12;
    /// CRC32C (`u32`) of every byte from [`ATTRIBUTES_AT`] to the end of the batch.
    pub const CRC_AT: usize = 17;
    /// Attributes (`i16`, see [`attributes`]); the CRC covers the batch from here.
    pub const ATTRIBUTES_AT: usize = 21;
    /// Last offset delta (`i32`): the batch covers `base_offset ..= base_offset + delta`.
    pub const LAST_OFFSET_DELTA_AT: usize = 23;
    /// Base timestamp (`i64`); the delete horizon when that attribute is set.
    pub const BASE_TIMESTAMP_AT: usize = 27;
    /// Max timestamp (`i64`).
    pub const MAX_TIMESTAMP_AT: usize = 35;
    /// Producer id (`i64`).
    pub const PRODUCER_ID_AT: usize = 43;
    /// Producer epoch (`i16`).
    pub const PRODUCER_EPOCH_AT: usize = 51;
    /// Base sequence (`i32`).
    pub const BASE_SEQUENCE_AT: usize = 53;
    /// Record count (`i32`), the last header field.
    pub const RECORD_COUNT_AT: usize = 57;
    /// The whole header, entry header included; the records follow.
    pub const HEADER_SIZE: usize = 61;
    /// The smallest length field of a v2 batch: a header and no records.
    pub const MIN_LENGTH: usize = HEADER_SIZE - ENTRY_HEADER_SIZE;
    /// The smallest record: one-byte varints for its length, timestamp delta, offset delta,
    /// key length, value length and header count, and its attributes byte.
    pub const MIN_RECORD_SIZE: usize = 7;

    /// Attribute bits of a v2 batch.
    pub mod attributes {
        /// The compression codec ([`Compression::from_id`](crate::Compression::from_id)).
        pub const CODEC_MASK: i16 = 0x07;
        /// Timestamps are the broker's append time, not the producer's.
        pub const LOG_APPEND_TIME: i16 = 0x08;
        /// Written by a transactional producer.
        pub const TRANSACTIONAL: i16 = 0x10;
        /// Holds control records (transaction markers).
        pub const CONTROL: i16 = 0x20;
        /// The base timestamp holds the log cleaner's delete horizon.
        pub const DELETE_HORIZON: i16 = 0x40;
    }
}

/// Legacy (v0/v1) message fields.
pub mod legacy {
    /// CRC32 (`u32`) of every byte from the magic byte to the end of the message.
    pub const CRC_AT: usize = 12;
    /// Attributes (`u8`, see [`attributes`]).
    pub const ATTRIBUTES_AT: usize = 17;
    /// Timestamp (`i64`), magic 1 only.
    pub const TIMESTAMP_AT: usize = 18;
    /// Key length (`i32`, -1 for null) in a magic 0 message; the key, the value length and
    /// the value follow.
    pub const V0_KEY_LENGTH_AT: usize = 18;
    /// Key length in a magic 1 message, after the timestamp.
    pub const V1_KEY_LENGTH_AT: usize = 26;
    /// Bytes of a key or value length field.
    pub const FIELD_LENGTH_SIZE: usize = 4;
    /// The smallest length field of a magic 0 message (CRC, magic, attributes, key length
    /// and value length); no entry of any magic is smaller.
    pub const V0_MIN_LENGTH: usize = 14;
    /// The smallest length field of a magic 1 message (magic 0's and the timestamp).
    pub const V1_MIN_LENGTH: usize = 22;

    /// Attribute bits of a legacy message.
    pub mod attributes {
        /// The compression codec (zstd, codec 4, is v2 only).
        pub const CODEC_MASK: u8 = 0x07;
        /// Magic 1: timestamps are the broker's append time.
        pub const LOG_APPEND_TIME: u8 = 0x08;
    }
}

/// The entry header at the start of every batch and legacy message: all that a walk over
/// entries reads to find where the next one starts.
///
/// ```
/// use krec_batch::EntryHeader;
/// let mut entry = 7i64.to_be_bytes().to_vec();
/// entry.extend_from_slice(&20i32.to_be_bytes());
/// let header = EntryHeader::peek(&entry).unwrap();
/// assert_eq!((header.base_offset, header.length), (7, 20));
/// assert_eq!(header.size(), Some(32)); // the entry header and the 20 bytes after it
/// assert_eq!(EntryHeader::peek(&entry[..11]), None);
/// assert_eq!(EntryHeader::peek_base_offset(&entry[..8]), Some(7));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryHeader {
    /// Base offset of a v2 batch, or offset of a legacy message (a compressed wrapper's is
    /// its last inner message's).
    pub base_offset: i64,
    /// The length field: bytes of the entry after the entry header, as written (it may be
    /// negative in corrupt input).
    pub length: i32,
}

impl EntryHeader {
    /// The entry header at the start of `bytes`, `None` if fewer than
    /// [`ENTRY_HEADER_SIZE`] bytes are there.
    #[inline(always)]
    pub fn peek(bytes: &[u8]) -> Option<EntryHeader> {
        bytes.first_chunk().map(EntryHeader::read)
    }

    /// The entry header in `head`, for a caller that already holds the bytes.
    #[inline(always)]
    pub fn read(head: &[u8; ENTRY_HEADER_SIZE]) -> EntryHeader {
        let [o0, o1, o2, o3, o4, o5, o6, o7, l0, l1, l2, l3] = *head;
        EntryHeader {
            base_offset: i64::from_be_bytes([o0, o1, o2, o3, o4, o5, o6, o7]),
            length: i32::from_be_bytes([l0, l1, l2, l3]),
        }
    }

    /// Bytes the whole entry takes, entry header included; `None` for a negative length.
    #[inline(always)]
    pub fn size(self) -> Option<usize> {
        usize::try_from(self.length)
            .ok()
            .map(|length| ENTRY_HEADER_SIZE + length)
    }

    /// The base offset of the entry at the start of `bytes` when its first 8 bytes are there,
    /// even if the rest of the entry header is not (a cut entry still names its offset).
    #[inline(always)]
    pub fn peek_base_offset(bytes: &[u8]) -> Option<i64> {
        bytes.first_chunk().map(|b| i64::from_be_bytes(*b))
    }

    /// The `lastOffsetDelta` of the v2 batch at the start of `bytes`, if that many bytes are
    /// there (the caller knows the entry is a v2 batch from its magic byte).
    #[inline(always)]
    pub fn peek_last_offset_delta(bytes: &[u8]) -> Option<i32> {
        let at = v2::LAST_OFFSET_DELTA_AT;
        bytes.get(at..at + 4).map(|_| be_i32(bytes, at))
    }

    /// The magic byte of the entry at the start of `bytes`, if that many bytes are there.
    #[inline(always)]
    pub fn peek_magic(bytes: &[u8]) -> Option<u8> {
        bytes.get(MAGIC_AT).copied()
    }
}

/// Big-endian `i16` at `at`; panics past the end, so callers check the length first.
#[inline(always)]
pub(crate) fn be_i16(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([bytes[at], bytes[at + 1]])
}

/// Big-endian `i32` at `at`; panics past the end, so callers check the length first.
#[inline(always)]
pub(crate) fn be_i32(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Big-endian `i64` at `at`; panics past the end, so callers check the length first.
#[inline(always)]
pub(crate) fn be_i64(bytes: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&bytes[at..at + 8]);
    i64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_header_fields_follow_each_other() {
        // Each field starts where the one before ends (sizes from the Kafka protocol guide).
        let fields = [
            (BASE_OFFSET_AT, 8),
            (LENGTH_AT, 4),
            (v2::PARTITION_LEADER_EPOCH_AT, 4),
            (MAGIC_AT, 1),
            (v2::CRC_AT, 4),
            (v2::ATTRIBUTES_AT, 2),
            (v2::LAST_OFFSET_DELTA_AT, 4),
            (v2::BASE_TIMESTAMP_AT, 8),
            (v2::MAX_TIMESTAMP_AT, 8),
            (v2::PRODUCER_ID_AT, 8),
            (v2::PRODUCER_EPOCH_AT, 2),
            (v2::BASE_SEQUENCE_AT, 4),
            (v2::RECORD_COUNT_AT, 4),
        ];
        let end = fields.iter().fold(0, |at, &(start, size)| {
            assert_eq!(at, start);
            start + size
        });
        assert_eq!(end, v2::HEADER_SIZE);
        assert_eq!(v2::MIN_LENGTH, 49);
    }

    #[test]
    fn the_legacy_fields_follow_each_other() {
        assert_eq!(ENTRY_HEADER_SIZE, legacy::CRC_AT);
        assert_eq!(legacy::CRC_AT + 4, MAGIC_AT);
        assert_eq!(MAGIC_AT + 1, legacy::ATTRIBUTES_AT);
        assert_eq!(legacy::ATTRIBUTES_AT + 1, legacy::V0_KEY_LENGTH_AT);
        assert_eq!(legacy::TIMESTAMP_AT + 8, legacy::V1_KEY_LENGTH_AT);
        let fixed = |key_length_at: usize| key_length_at + 2 * legacy::FIELD_LENGTH_SIZE;
        assert_eq!(
            fixed(legacy::V0_KEY_LENGTH_AT),
            ENTRY_HEADER_SIZE + legacy::V0_MIN_LENGTH
        );
        assert_eq!(
            fixed(legacy::V1_KEY_LENGTH_AT),
            ENTRY_HEADER_SIZE + legacy::V1_MIN_LENGTH
        );
    }

    #[test]
    fn a_negative_length_has_no_size() {
        let mut head = [0u8; ENTRY_HEADER_SIZE];
        head[LENGTH_AT..].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(EntryHeader::read(&head).size(), None);
        assert_eq!(EntryHeader::peek_magic(&head), None);
    }
}
