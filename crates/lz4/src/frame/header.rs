//! The frame header: magic number and frame descriptor.

use super::checksum::{header_checksum_byte, TWO_BYTE_DESCRIPTOR_CHECKSUMS};
use super::{BlockMode, BlockSize, EncodeOptions, HeaderChecksum, MAGIC};
use crate::Error;

const MAGIC_LEN: usize = 4;
const FLG_POSITION: usize = 4;
const BD_POSITION: usize = 5;
/// Where the optional content size field starts.
pub(crate) const CONTENT_SIZE_POSITION: usize = 6;
const CONTENT_SIZE_LEN: usize = 8;
const DICT_ID_LEN: usize = 4;

const FLG_VERSION_SHIFT: u8 = 6;
const FLG_VERSION_1: u8 = 0b01;
const FLG_INDEPENDENT_BLOCKS: u8 = 1 << 5;
const FLG_BLOCK_CHECKSUMS: u8 = 1 << 4;
const FLG_CONTENT_SIZE: u8 = 1 << 3;
const FLG_CONTENT_CHECKSUM: u8 = 1 << 2;
const FLG_RESERVED: u8 = 1 << 1;
const FLG_DICT_ID: u8 = 1;

const BD_BLOCK_SIZE_SHIFT: u8 = 4;
const BD_BLOCK_SIZE_MASK: u8 = 0b111;
const BD_RESERVED: u8 = 0b1000_1111;

/// What the header says about the rest of the frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameHeader {
    pub(crate) block_mode: BlockMode,
    pub(crate) block_checksums: bool,
    pub(crate) content_checksum: bool,
    pub(crate) content_size: Option<u64>,
    pub(crate) max_block_size: usize,
    /// Bytes from the magic through the header checksum: where the first block starts.
    pub(crate) len: usize,
}

fn need(input: &[u8], position: usize, needed: usize, part: &'static str) -> Result<(), Error> {
    let available = input.len().saturating_sub(position);
    if available < needed {
        return Err(Error::Truncated {
            position,
            part,
            needed,
            available,
        });
    }
    Ok(())
}

fn read_u32(input: &[u8], position: usize) -> u32 {
    let mut le = [0u8; 4];
    le.copy_from_slice(&input[position..position + 4]);
    u32::from_le_bytes(le)
}

/// Whether the first block of the frame in `input` is stored (uncompressed), read from the
/// flags alone: a cheap test before the header and its checksum are parsed. `false` when the
/// input is too short to say; the full parse then reports why.
#[inline]
pub(crate) fn first_block_is_stored(input: &[u8]) -> bool {
    let Some(&flg) = input.get(FLG_POSITION) else {
        return false;
    };
    let mut len = BD_POSITION + 2; // BD and the header checksum byte
    if flg & FLG_CONTENT_SIZE != 0 {
        len += CONTENT_SIZE_LEN;
    }
    if flg & FLG_DICT_ID != 0 {
        len += DICT_ID_LEN;
    }
    // The block size is little-endian: its last byte holds the stored flag.
    input.get(len + 3).is_some_and(|&last| last & 0x80 != 0)
}

/// Parses and checks the header at the start of `input`.
// Inlined into both frame readers, with each step: a call costs a measurable share of a
// one-record batch.
#[inline(always)]
pub(crate) fn parse_header(input: &[u8], checksum: HeaderChecksum) -> Result<FrameHeader, Error> {
    check_magic(input)?;
    let descriptor = read_descriptor(input)?;
    let optional = read_optional_fields(input, descriptor.flg)?;
    let position = optional.checksum_at;
    check_header_checksum(input, &descriptor, position, checksum)?;
    if let Some((dict_position, dict_id)) = optional.dict_id {
        return Err(Error::DictionaryNotSupported {
            position: dict_position,
            dict_id,
        });
    }
    let flg = descriptor.flg;
    Ok(FrameHeader {
        block_mode: if flg & FLG_INDEPENDENT_BLOCKS != 0 {
            BlockMode::Independent
        } else {
            BlockMode::Linked
        },
        block_checksums: flg & FLG_BLOCK_CHECKSUMS != 0,
        content_checksum: flg & FLG_CONTENT_CHECKSUM != 0,
        content_size: optional.content_size,
        max_block_size: descriptor.block_size.bytes(),
        len: position + 1,
    })
}

/// The FLG and BD bytes, checked, and the block size BD names.
struct Descriptor {
    flg: u8,
    /// BD's block-size code.
    code: u8,
    block_size: BlockSize,
}

/// The fields FLG says follow BD, and where the header checksum byte is after them.
struct OptionalFields {
    content_size: Option<u64>,
    /// Where the dictionary id starts, and the id.
    dict_id: Option<(usize, u32)>,
    checksum_at: usize,
}

#[inline(always)]
fn check_magic(input: &[u8]) -> Result<(), Error> {
    need(input, 0, MAGIC_LEN, "magic number")?;
    let magic = read_u32(input, 0);
    if magic != MAGIC {
        return Err(Error::BadMagic {
            position: 0,
            found: magic,
            expected: MAGIC,
        });
    }
    Ok(())
}

/// Reads FLG and BD: version 1, no reserved bit set, a block size LZ4 defines.
#[inline(always)]
fn read_descriptor(input: &[u8]) -> Result<Descriptor, Error> {
    need(input, FLG_POSITION, 2, "frame descriptor")?;
    let flg = input[FLG_POSITION];
    let bd = input[BD_POSITION];
    let version = flg >> FLG_VERSION_SHIFT;
    if version != FLG_VERSION_1 {
        return Err(Error::UnsupportedVersion {
            position: FLG_POSITION,
            version,
        });
    }
    if flg & FLG_RESERVED != 0 {
        return Err(Error::ReservedBitsSet {
            position: FLG_POSITION,
            byte: flg,
            bits: flg & FLG_RESERVED,
        });
    }
    if bd & BD_RESERVED != 0 {
        return Err(Error::ReservedBitsSet {
            position: BD_POSITION,
            byte: bd,
            bits: bd & BD_RESERVED,
        });
    }
    let code = (bd >> BD_BLOCK_SIZE_SHIFT) & BD_BLOCK_SIZE_MASK;
    let block_size = BlockSize::from_code(code).ok_or(Error::UnsupportedBlockMaxSize {
        position: BD_POSITION,
        code,
    })?;
    Ok(Descriptor {
        flg,
        code,
        block_size,
    })
}

/// Reads the content size and dictionary id when FLG says they are there.
#[inline(always)]
fn read_optional_fields(input: &[u8], flg: u8) -> Result<OptionalFields, Error> {
    let mut position = BD_POSITION + 1;
    let content_size = if flg & FLG_CONTENT_SIZE != 0 {
        need(input, position, CONTENT_SIZE_LEN, "content size")?;
        let mut le = [0u8; 8];
        le.copy_from_slice(&input[position..position + CONTENT_SIZE_LEN]);
        position += CONTENT_SIZE_LEN;
        Some(u64::from_le_bytes(le))
    } else {
        None
    };
    let dict_id = if flg & FLG_DICT_ID != 0 {
        need(input, position, DICT_ID_LEN, "dictionary id")?;
        let id = read_u32(input, position);
        position += DICT_ID_LEN;
        Some((position - DICT_ID_LEN, id))
    } else {
        None
    };
    Ok(OptionalFields {
        content_size,
        dict_id,
        checksum_at: position,
    })
}

/// Checks the header checksum byte at `position` as `checksum` says.
#[inline(always)]
fn check_header_checksum(
    input: &[u8],
    descriptor: &Descriptor,
    position: usize,
    checksum: HeaderChecksum,
) -> Result<(), Error> {
    need(input, position, 1, "header checksum")?;
    let stored = input[position];
    let standard = if position == BD_POSITION + 1 {
        // BD's reserved bits were checked above, so it is just the block-size code.
        TWO_BYTE_DESCRIPTOR_CHECKSUMS[descriptor.flg as usize][descriptor.code as usize]
    } else {
        header_checksum_byte(&input[FLG_POSITION..position])
    };
    let accepted = match checksum {
        HeaderChecksum::Standard => stored == standard,
        HeaderChecksum::KafkaLegacy => {
            stored == standard || stored == header_checksum_byte(&input[..position])
        }
        HeaderChecksum::Ignore => true,
    };
    if !accepted {
        let computed = match checksum {
            HeaderChecksum::KafkaLegacy => header_checksum_byte(&input[..position]),
            _ => standard,
        };
        return Err(Error::HeaderChecksumMismatch {
            position,
            stored,
            computed,
        });
    }
    Ok(())
}

/// The longest header [`header_bytes`] writes: magic, FLG, BD, content size and checksum.
pub(crate) const MAX_HEADER_LEN: usize = MAGIC_LEN + 2 + CONTENT_SIZE_LEN + 1;

/// A header with a standard checksum, and how many of the bytes it holds.
pub(crate) fn header_bytes(
    options: &EncodeOptions,
    mode: BlockMode,
    content_len: usize,
) -> ([u8; MAX_HEADER_LEN], usize) {
    let mut header = [0u8; MAX_HEADER_LEN];
    header[..MAGIC_LEN].copy_from_slice(&MAGIC.to_le_bytes());
    let mut flg = FLG_VERSION_1 << FLG_VERSION_SHIFT;
    if mode == BlockMode::Independent {
        flg |= FLG_INDEPENDENT_BLOCKS;
    }
    if options.block_checksums {
        flg |= FLG_BLOCK_CHECKSUMS;
    }
    if options.content_size {
        flg |= FLG_CONTENT_SIZE;
    }
    if options.content_checksum {
        flg |= FLG_CONTENT_CHECKSUM;
    }
    header[FLG_POSITION] = flg;
    header[BD_POSITION] = options.block_size.code() << BD_BLOCK_SIZE_SHIFT;
    let mut len = CONTENT_SIZE_POSITION;
    if options.content_size {
        header[len..len + CONTENT_SIZE_LEN].copy_from_slice(&(content_len as u64).to_le_bytes());
        len += CONTENT_SIZE_LEN;
    }
    header[len] = header_checksum_byte(&header[FLG_POSITION..len]);
    (header, len + 1)
}
