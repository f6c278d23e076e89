//! The fields of a batch header, as plain data: what the v2 and legacy parsers produce and
//! the batch and record views read.

/// What parsing a batch header (v2) or a top-level message (legacy) yields: the fields that
/// decoding reads, as plain data the batch view is filled from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchHeader {
    pub(crate) base_offset: i64,
    pub(crate) last_offset_delta: i32,
    pub(crate) magic: u8,
    pub(crate) attributes: i16,
    pub(crate) compression: Compression,
    pub(crate) timestamp_type: TimestampType,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) record_count: u32,
    pub(crate) position: usize,
    pub(crate) size: usize,
}

impl BatchHeader {
    /// A header of nothing, overwritten before it is read.
    pub(crate) const fn placeholder() -> Self {
        BatchHeader {
            base_offset: 0,
            last_offset_delta: 0,
            magic: crate::layout::magic::V2,
            attributes: 0,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            base_timestamp: 0,
            max_timestamp: 0,
            record_count: 0,
            position: 0,
            size: 0,
        }
    }
}

/// Compression codec of a batch, from the low three bits of its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Codec 0.
    None,
    /// Codec 1: gzip (RFC 1952).
    Gzip,
    /// Codec 2: snappy, raw or in the xerial framing.
    Snappy,
    /// Codec 3: LZ4 frames (Kafka's legacy header-checksum quirk handled for magic 0).
    Lz4,
    /// Codec 4: zstd (v2 batches only).
    Zstd,
}

impl Compression {
    /// Every codec this crate decodes, `None` first.
    pub const ALL: &'static [Compression] = &[
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec's name as Kafka's `compression.type` spells it (`"lz4"`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// The codec for the attributes' codec bits, `None` if Kafka defines no such codec.
    pub fn from_id(id: u8) -> Option<Compression> {
        Some(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            _ => return None,
        })
    }

    /// The codec number written in the attributes.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }
}

/// What a record's timestamp means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    /// Set by the producer.
    CreateTime,
    /// Set by the broker when it appended the batch (every record gets the batch max timestamp).
    LogAppendTime,
    /// Magic 0 messages carry no timestamp.
    NoTimestamp,
}

#[cfg(test)]
mod tests {
    use super::Compression;

    #[test]
    fn all_lists_every_codec_id_once() {
        let ids: Vec<u8> = Compression::ALL.iter().map(|c| c.id()).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4]);
        for &codec in Compression::ALL {
            assert_eq!(Compression::from_id(codec.id()), Some(codec));
        }
        assert_eq!(Compression::from_id(5), None);
    }
}
