//! Snappy: raw blocks, and the xerial framing the Java client writes.

use super::CodecError;
use crate::buffer::PooledBuf;

/// `\x82SNAPPY\0`, then a big-endian version and compatible version.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_SIZE: usize = 16;

// Kept out of `codec::decompress`, the dispatch that every codec goes through: inlined,
// snappy's code and stack frame would be set up on batches of the other codecs too.
#[inline(never)]
pub(super) fn decompress(
    payload: &[u8],
    out: &mut PooledBuf,
    limit: usize,
) -> Result<(), CodecError> {
    if payload.len() >= XERIAL_HEADER_SIZE && payload[..8] == XERIAL_MAGIC {
        let mut rest = &payload[XERIAL_HEADER_SIZE..];
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(CodecError::Corrupt(format!(
                    "xerial chunk length cut after {} bytes",
                    rest.len()
                )));
            }
            let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            rest = &rest[4..];
            if len > rest.len() {
                return Err(CodecError::Corrupt(format!(
                    "xerial chunk of {len} bytes with only {} left",
                    rest.len()
                )));
            }
            raw_block(&rest[..len], out, limit)?;
            rest = &rest[len..];
        }
        Ok(())
    } else {
        raw_block(payload, out, limit)
    }
}

/// One raw snappy block, its declared size checked against the limit before any allocation.
fn raw_block(block: &[u8], out: &mut PooledBuf, limit: usize) -> Result<(), CodecError> {
    let size = snap::raw::decompress_len(block).map_err(|e| CodecError::Corrupt(e.to_string()))?;
    if size > limit - out.len() {
        return Err(CodecError::TooLarge);
    }
    let window = &mut out.writable(size)[..size];
    let written = snap::raw::Decoder::new()
        .decompress(block, window)
        .map_err(|e| CodecError::Corrupt(e.to_string()))?;
    out.commit(written);
    Ok(())
}
