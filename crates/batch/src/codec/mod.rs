//! Decompression of batch payloads into pooled buffers, one module per codec.
//!
//! Every codec writes into a [`PooledBuf`] and stops as soon as the output would pass the
//! configured limit, so a decompression bomb never gets its memory.

mod gzip;
mod lz4;
mod snappy;
mod zstd;

use crate::buffer::PooledBuf;
use crate::{Compression, DecodeConfig, Error};

/// Why a payload could not be decompressed, before the batch context is added.
#[derive(Debug)]
pub(crate) enum CodecError {
    /// The output would pass the limit.
    TooLarge,
    /// The payload is malformed.
    Corrupt(String),
}

impl CodecError {
    pub(crate) fn into_error(
        self,
        position: usize,
        offset: i64,
        codec: Compression,
        config: &DecodeConfig,
    ) -> Error {
        match self {
            CodecError::TooLarge => Error::DecompressedTooLarge {
                position,
                offset,
                codec,
                limit: config.max_decompressed_bytes,
            },
            CodecError::Corrupt(reason) => Error::Decompression {
                position,
                offset,
                codec,
                reason,
            },
        }
    }
}

/// The payload's content as a slice of the payload itself, when the codec stored it
/// uncompressed and it can be read in place (a v2 LZ4 frame of one stored block, which
/// producers write for data that does not compress, typically a batch of one small record).
/// `None` means: decompress it with [`decompress`].
#[inline]
pub(crate) fn stored_in_place<'p>(
    codec: Compression,
    payload: &'p [u8],
    config: &DecodeConfig,
) -> Option<&'p [u8]> {
    match codec {
        Compression::Lz4 => lz4::stored_in_place(payload, config.max_decompressed_bytes),
        _ => None,
    }
}

/// Decompresses a whole payload into a buffer from the per-thread buffer pool; at most `limit` bytes.
/// `magic` selects Kafka's LZ4 header-checksum quirk for magic 0.
pub(crate) fn decompress(
    codec: Compression,
    payload: &[u8],
    limit: usize,
    magic: u8,
) -> Result<PooledBuf, CodecError> {
    let mut out = PooledBuf::take();
    decompress_into(codec, payload, limit, magic, &mut out)?;
    Ok(out)
}

/// [`decompress`] into `out`, which is cleared first: the v2 walk reuses the buffer of the
/// batch before rather than returning it to the pool and taking it back.
// Not inlined into the batch parser: with this code in its function the uncompressed path,
// which never comes here, ran slower on one-record batches.
#[inline(never)]
pub(crate) fn decompress_into(
    codec: Compression,
    payload: &[u8],
    limit: usize,
    magic: u8,
    out: &mut PooledBuf,
) -> Result<(), CodecError> {
    out.clear();
    match codec {
        Compression::None => {
            if payload.len() > limit {
                return Err(CodecError::TooLarge);
            }
            out.writable(payload.len())[..payload.len()].copy_from_slice(payload);
            out.commit(payload.len());
        }
        Compression::Gzip => gzip::decompress(payload, out, limit)?,
        Compression::Snappy => snappy::decompress(payload, out, limit)?,
        Compression::Lz4 => lz4::decompress(payload, out, limit, magic)?,
        Compression::Zstd => zstd::decompress(payload, out, limit)?,
    }
    Ok(())
}

/// How much to ask the buffer for next: double what we have, at least 64 KiB, never more
/// than one byte past the limit (that byte is how we notice the output is too large).
pub(crate) fn next_chunk(out_len: usize, hint: usize, limit: usize) -> usize {
    let room = limit.saturating_add(1).saturating_sub(out_len);
    hint.max(out_len).max(64 << 10).min(room)
}
