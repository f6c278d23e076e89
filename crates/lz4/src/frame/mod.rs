//! The LZ4 frame format (lz4_Frame_format.md, version 1.6), as Kafka producers write it.
//!
//! A frame is: magic, frame descriptor (FLG, BD, optional content size, optional dictionary id,
//! header checksum), data blocks each prefixed by a 4-byte size (high bit set = stored
//! uncompressed) and optionally followed by a block checksum, a zero end mark, and an optional
//! content checksum. Checksums are xxHash32 with seed 0.

mod checksum;
mod decode;
mod encode;
mod header;
mod plain;

pub use decode::{decode_frame, decode_frame_into, decode_frame_into_general, stored_content};
pub use encode::{
    encode_frame, encode_frame_into, encode_frame_into_pooled, encode_frame_with_mode,
    max_frame_size,
};

/// The frame magic number, stored little-endian.
pub const MAGIC: u32 = 0x184D_2204;

/// How a frame's header checksum byte (HC) is checked.
///
/// Which one a Kafka consumer needs depends on the message format (the "magic" byte of the
/// message or record batch that carries the frame):
///
/// - **magic 0** (Kafka 0.8/0.9 message sets): use [`KafkaLegacy`](Self::KafkaLegacy). Kafka's
///   original LZ4 code computed HC over the magic number *and* the descriptor, where the spec says
///   the descriptor only (KAFKA-3160). Every producer that writes magic 0 keeps that bug for
///   compatibility: the Java client (`useBrokenFlagDescriptorChecksum` when magic is 0) and
///   librdkafka (`rd_kafka_lz4_compress_break_framing`). The Java consumer skips the check for
///   magic 0 altogether and librdkafka overwrites HC before decoding; krec instead checks it.
/// - **magic 1 and 2** (Kafka 0.10+ message sets and v2 record batches): use
///   [`Standard`](Self::Standard); all producers write the spec's checksum.
/// - [`Ignore`](Self::Ignore) accepts any HC byte, like the Java consumer does for magic 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderChecksum {
    /// HC = second byte of xxHash32 over the descriptor (FLG up to, not including, HC).
    Standard,
    /// Accepts the HC that legacy Kafka wrote (second byte of xxHash32 over magic + descriptor),
    /// and also a standard HC, since a magic-0 frame from a spec-following producer is valid too.
    KafkaLegacy,
    /// HC is not checked.
    Ignore,
}

/// What [`decode_frame`] checks and how much it may produce.
#[derive(Clone, Debug)]
pub struct DecodeOptions {
    /// Largest decoded size accepted, in bytes; a frame that would decode to more is rejected
    /// before the memory is allocated.
    pub max_decompressed_size: usize,
    /// How the header checksum is checked; see [`HeaderChecksum`] for which Kafka magic needs
    /// which mode.
    pub header_checksum: HeaderChecksum,
    /// Verify block checksums when the frame has them.
    pub verify_block_checksums: bool,
    /// Verify the content checksum when the frame has it.
    pub verify_content_checksum: bool,
}

impl Default for DecodeOptions {
    /// 64 MiB limit, standard header checksum, all present checksums verified.
    fn default() -> Self {
        DecodeOptions {
            max_decompressed_size: 64 * 1024 * 1024,
            header_checksum: HeaderChecksum::Standard,
            verify_block_checksums: true,
            verify_content_checksum: true,
        }
    }
}

/// The block maximum size a frame declares in its BD byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockSize {
    /// 64 KiB, what Kafka's Java client and librdkafka write.
    Max64KiB,
    /// 256 KiB.
    Max256KiB,
    /// 1 MiB.
    Max1MiB,
    /// 4 MiB.
    Max4MiB,
}

impl BlockSize {
    /// Every block size, smallest first.
    pub const ALL: [BlockSize; 4] = [
        BlockSize::Max64KiB,
        BlockSize::Max256KiB,
        BlockSize::Max1MiB,
        BlockSize::Max4MiB,
    ];

    /// The size in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            BlockSize::Max64KiB => 64 * 1024,
            BlockSize::Max256KiB => 256 * 1024,
            BlockSize::Max1MiB => 1024 * 1024,
            BlockSize::Max4MiB => 4 * 1024 * 1024,
        }
    }

    /// The 3-bit code stored in BD bits 6..4.
    pub const fn code(self) -> u8 {
        match self {
            BlockSize::Max64KiB => 4,
            BlockSize::Max256KiB => 5,
            BlockSize::Max1MiB => 6,
            BlockSize::Max4MiB => 7,
        }
    }

    /// The block size for a BD code, if the code is valid.
    pub const fn from_code(code: u8) -> Option<BlockSize> {
        match code {
            4 => Some(BlockSize::Max64KiB),
            5 => Some(BlockSize::Max256KiB),
            6 => Some(BlockSize::Max1MiB),
            7 => Some(BlockSize::Max4MiB),
            _ => None,
        }
    }
}

/// Whether blocks may reference earlier blocks' output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockMode {
    /// Each block decodes on its own (FLG.B.Indep = 1), as Kafka's Java client writes.
    Independent,
    /// A block may copy from the previous 64 KiB of the frame's output (FLG.B.Indep = 0), the lz4
    /// library's default.
    Linked,
}

/// How [`encode_frame`] writes a frame.
#[derive(Clone, Debug)]
pub struct EncodeOptions {
    /// The block maximum size.
    pub block_size: BlockSize,
    /// Write a checksum after each block.
    pub block_checksums: bool,
    /// Write a checksum of the whole content after the end mark.
    pub content_checksum: bool,
    /// Write the content size into the header.
    pub content_size: bool,
}

impl Default for EncodeOptions {
    /// Like Kafka's Java client: 64 KiB blocks, no checksums, no content size.
    fn default() -> Self {
        EncodeOptions {
            block_size: BlockSize::Max64KiB,
            block_checksums: false,
            content_checksum: false,
            content_size: false,
        }
    }
}
