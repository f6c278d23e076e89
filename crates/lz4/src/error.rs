//! The one error type of krec-lz4.

/// Why an LZ4 frame was rejected. Every `position` is a byte offset into the frame as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The frame does not start with the LZ4 frame magic number.
    #[error(
        "bad LZ4 frame magic at byte {position}: found {found:#010x}, expected {expected:#010x}"
    )]
    BadMagic {
        /// Where the magic number starts.
        position: usize,
        /// The little-endian value found.
        found: u32,
        /// The LZ4 frame magic, 0x184D2204.
        expected: u32,
    },
    /// The FLG version bits are not `01`.
    #[error("unsupported LZ4 frame version {version} in FLG byte at byte {position} (only version 1 exists)")]
    UnsupportedVersion {
        /// Position of the FLG byte.
        position: usize,
        /// The two version bits.
        version: u8,
    },
    /// A bit the format reserves (must be zero) is set.
    #[error(
        "reserved bits {bits:#04x} set in LZ4 frame descriptor byte {byte:#04x} at byte {position}"
    )]
    ReservedBitsSet {
        /// Position of the FLG or BD byte.
        position: usize,
        /// The whole byte.
        byte: u8,
        /// The reserved bits that are set.
        bits: u8,
    },
    /// The BD byte names a block maximum size other than 64 KiB, 256 KiB, 1 MiB or 4 MiB.
    #[error("unsupported LZ4 block maximum size code {code} in BD byte at byte {position} (valid: 4 to 7)")]
    UnsupportedBlockMaxSize {
        /// Position of the BD byte.
        position: usize,
        /// The three block-size bits.
        code: u8,
    },
    /// The frame needs a preset dictionary, which Kafka never uses.
    #[error("LZ4 frame at byte {position} needs dictionary {dict_id:#010x}; dictionaries are not supported")]
    DictionaryNotSupported {
        /// Position of the dictionary id field.
        position: usize,
        /// The dictionary id.
        dict_id: u32,
    },
    /// The header checksum byte does not match the descriptor.
    #[error("LZ4 frame header checksum mismatch at byte {position}: stored {stored:#04x}, computed {computed:#04x}")]
    HeaderChecksumMismatch {
        /// Position of the checksum byte.
        position: usize,
        /// The byte in the frame.
        stored: u8,
        /// The byte computed from the descriptor under the chosen checksum mode.
        computed: u8,
    },
    /// A block size field is larger than the frame's block maximum (for a stored block this is the
    /// KAFKA-5150 case: it must read as an invalid size, not as a truncated frame).
    #[error("invalid block size {size} at byte {position}: larger than the frame's block maximum of {max_block_size} ({kind} block)")]
    InvalidBlockSize {
        /// Position of the block size field.
        position: usize,
        /// Size from the field, without the stored flag.
        size: usize,
        /// The frame's block maximum size.
        max_block_size: usize,
        /// "stored" or "compressed".
        kind: &'static str,
    },
    /// A compressed block decodes to more bytes than the frame's block maximum.
    #[error("LZ4 block at byte {position} decodes to more than the frame's block maximum of {max_block_size} bytes")]
    BlockTooLarge {
        /// Position of the block size field.
        position: usize,
        /// The frame's block maximum size.
        max_block_size: usize,
    },
    /// The input ends inside the frame.
    #[error("LZ4 frame ends early at byte {position} while reading the {part}: need {needed} bytes, {available} left")]
    Truncated {
        /// Where the missing part starts.
        position: usize,
        /// Which part of the frame was being read.
        part: &'static str,
        /// Bytes the part needs.
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },
    /// A block checksum does not match the block's bytes.
    #[error("LZ4 block checksum mismatch for the block at byte {position}: stored {stored:#010x}, computed {computed:#010x}")]
    BlockChecksumMismatch {
        /// Position of the block size field.
        position: usize,
        /// The checksum in the frame.
        stored: u32,
        /// The checksum of the block's bytes.
        computed: u32,
    },
    /// The content checksum does not match the decoded content.
    #[error("LZ4 content checksum mismatch at byte {position}: stored {stored:#010x}, computed {computed:#010x}")]
    ContentChecksumMismatch {
        /// Position of the content checksum field.
        position: usize,
        /// The checksum in the frame.
        stored: u32,
        /// The checksum of the decoded content.
        computed: u32,
    },
    /// The decoded content length differs from the declared content size.
    #[error("LZ4 frame content size mismatch at byte {position}: declared {declared}, decoded {decoded}{}", if *.at_least { " or more" } else { "" })]
    ContentSizeMismatch {
        /// Position of the block (or end mark) where the mismatch showed.
        position: usize,
        /// The content size from the header.
        declared: u64,
        /// Bytes decoded (a lower bound when `at_least`).
        decoded: u64,
        /// Whether decoding stopped early because the block would pass the declared size.
        at_least: bool,
    },
    /// The frame decodes (or declares that it decodes) to more than the caller's limit; nothing
    /// beyond the limit was allocated.
    #[error("LZ4 frame decodes to at least {at_least} bytes (found at byte {position}), more than the limit of {limit}")]
    LimitExceeded {
        /// Position of the content size field, or of the block that passes the limit.
        position: usize,
        /// A lower bound of the frame's decoded size.
        at_least: u64,
        /// The caller's `max_decompressed_size`.
        limit: usize,
    },
    /// A compressed block's data is not valid LZ4.
    #[error("corrupt LZ4 block data in the block at byte {position} ({compressed_size} compressed bytes): {detail}")]
    CorruptBlock {
        /// Position of the block size field.
        position: usize,
        /// The block's compressed size.
        compressed_size: usize,
        /// What the block decoder found.
        detail: String,
    },
    /// Bytes follow the frame's end.
    #[error("{count} unexpected bytes after the end of the LZ4 frame at byte {position}")]
    TrailingBytes {
        /// Where the frame ended.
        position: usize,
        /// How many bytes follow.
        count: usize,
    },
}
