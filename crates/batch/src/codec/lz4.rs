//! LZ4 frames, decoded by krec-lz4 straight into the pooled buffer.

use krec_lz4::{decode_frame_into, DecodeOptions, HeaderChecksum};

use super::CodecError;
use crate::buffer::PooledBuf;

/// The content of a v2 frame made of one stored block, read in place; `None` for any other
/// frame (which [`decompress`] then decodes and, if malformed, reports).
#[inline]
pub(super) fn stored_in_place(payload: &[u8], limit: usize) -> Option<&[u8]> {
    krec_lz4::stored_content(payload, &options(limit, 2))
}

#[inline(always)]
fn options(limit: usize, magic: u8) -> DecodeOptions {
    DecodeOptions {
        max_decompressed_size: limit,
        // Magic-0 producers wrote a header checksum over the frame magic too (KAFKA-3160).
        header_checksum: if magic == 0 {
            HeaderChecksum::KafkaLegacy
        } else {
            HeaderChecksum::Standard
        },
        verify_block_checksums: true,
        verify_content_checksum: true,
    }
}

#[inline]
pub(super) fn decompress(
    payload: &[u8],
    out: &mut PooledBuf,
    limit: usize,
    magic: u8,
) -> Result<(), CodecError> {
    let options = options(limit, magic);
    match decode_frame_into(payload, &options, out) {
        Ok(_) => Ok(()),
        Err(krec_lz4::Error::LimitExceeded { .. }) => Err(CodecError::TooLarge),
        Err(e) => Err(CodecError::Corrupt(e.to_string())),
    }
}
