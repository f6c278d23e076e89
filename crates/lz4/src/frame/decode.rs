//! Decoding a whole frame from a slice straight into a pooled buffer.

use super::checksum::xxh32;
use super::header::{first_block_is_stored, parse_header, FrameHeader, CONTENT_SIZE_POSITION};
use super::{BlockMode, DecodeOptions};
use crate::pool::PooledBuf;
use crate::Error;

const BLOCK_SIZE_LEN: usize = 4;
const CHECKSUM_LEN: usize = 4;
const STORED_BLOCK_FLAG: u32 = 1 << 31;
/// How far back a linked block may reference (the LZ4 window).
const WINDOW: usize = 64 * 1024;
/// No LZ4 block decodes to more than 255 bytes per input byte: the longest a single length byte
/// can extend a match is 255, and every other byte yields at most one output byte.
pub(super) const MAX_EXPANSION: usize = 255;

/// Decodes a whole frame into a buffer taken from the per-thread buffer pool.
#[inline]
pub fn decode_frame(input: &[u8], options: &DecodeOptions) -> Result<PooledBuf, Error> {
    let mut out = PooledBuf::take();
    decode_frame_into(input, options, &mut out)?;
    Ok(out)
}

/// Appends the frame's content to `out`; returns the number of bytes appended.
///
/// Linked blocks may only reference this frame's own output, never bytes that were in `out`
/// before. On error `out` is left as it was (its length; spare capacity may have grown, bounded
/// by the limit).
// Inlined, with the fast path, into the caller: on one-record batches the call frames between
// a batch decoder and the block decoder were a tenth of the decode.
#[inline]
pub fn decode_frame_into(
    input: &[u8],
    options: &DecodeOptions,
    out: &mut PooledBuf,
) -> Result<usize, Error> {
    let start = out.len();
    if let Some(decoded) = super::plain::decode(input, options, out) {
        return Ok(decoded);
    }
    out.truncate(start);
    decode_frame_into_general(input, options, out)
}

/// [`decode_frame_into`] without its fast path for the frame Kafka producers write: every
/// frame goes through the general decoder. Public only so that tests and fuzz targets can hold
/// the fast path to the general one; not part of the API.
#[doc(hidden)]
#[inline(never)]
pub fn decode_frame_into_general(
    input: &[u8],
    options: &DecodeOptions,
    out: &mut PooledBuf,
) -> Result<usize, Error> {
    let start = out.len();
    let result = FrameDecoder {
        input,
        options,
        out: &mut *out,
        start,
    }
    .run();
    // A match rather than `is_err` then `result`: the success path writes only the length
    // instead of copying the whole (error-sized) `Result` once more.
    match result {
        Ok(decoded) => Ok(decoded),
        Err(error) => {
            out.truncate(start);
            Err(error)
        }
    }
}

/// The frame's content as a slice of `input`, when the frame holds exactly one stored
/// (uncompressed) block and passes every check [`decode_frame_into`] makes: the caller can
/// then read the content in place, with no buffer and no copy. Producers write a stored block
/// when the data does not compress, which is the common case for a batch of one small record.
///
/// `None` for every other frame, malformed ones included: decode those with
/// [`decode_frame_into`], which also names what is wrong. `Some` only when `decode_frame_into`
/// would succeed with the same content.
#[inline]
pub fn stored_content<'i>(input: &'i [u8], options: &DecodeOptions) -> Option<&'i [u8]> {
    // Compressed frames leave here, inlined in the caller, for a few instructions.
    if !first_block_is_stored(input) {
        return None;
    }
    // The frame Kafka producers write, on a short path; any other goes the general way.
    if let Some(content) = super::plain::stored_content(input, options) {
        return Some(content);
    }
    stored_content_checked(input, options)
}

#[inline(never)]
fn stored_content_checked<'i>(input: &'i [u8], options: &DecodeOptions) -> Option<&'i [u8]> {
    let header = parse_header(input, options.header_checksum).ok()?;
    let read_u32 = |at: usize| {
        let bytes = input.get(at..at + 4)?;
        Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    };
    let raw = read_u32(header.len)?;
    if raw & STORED_BLOCK_FLAG == 0 {
        return None;
    }
    let size = (raw & !STORED_BLOCK_FLAG) as usize;
    if size == 0 || size > header.max_block_size || size > options.max_decompressed_size {
        return None;
    }
    let data_start = header.len + BLOCK_SIZE_LEN;
    let data = input.get(data_start..data_start.checked_add(size)?)?;
    let mut position = data_start + size;
    if header.block_checksums {
        let stored = read_u32(position)?;
        if options.verify_block_checksums && xxh32(data) != stored {
            return None;
        }
        position += CHECKSUM_LEN;
    }
    if read_u32(position)? != 0 {
        return None;
    }
    position += BLOCK_SIZE_LEN;
    if header
        .content_size
        .is_some_and(|declared| declared != size as u64)
    {
        return None;
    }
    if header.content_checksum {
        let stored = read_u32(position)?;
        if options.verify_content_checksum && xxh32(data) != stored {
            return None;
        }
        position += CHECKSUM_LEN;
    }
    (position == input.len()).then_some(data)
}

struct FrameDecoder<'a> {
    input: &'a [u8],
    options: &'a DecodeOptions,
    out: &'a mut PooledBuf,
    /// `out.len()` before this frame: the frame's content is `out[start..]`.
    start: usize,
}

impl FrameDecoder<'_> {
    fn run(self) -> Result<usize, Error> {
        let header = parse_header(self.input, self.options.header_checksum)?;
        let limit = self.options.max_decompressed_size;
        if let Some(declared) = header.content_size {
            if declared > limit as u64 {
                return Err(Error::LimitExceeded {
                    position: CONTENT_SIZE_POSITION,
                    at_least: declared,
                    limit,
                });
            }
            // Checked against the limit just above, so this cannot be made to over-allocate.
            self.out.reserve_within(declared as usize, self.ceiling());
        }
        let mut decoder = self;
        let mut position = header.len;
        loop {
            let block_position = position;
            let raw = decoder.read_u32(position, "block size")?;
            position += BLOCK_SIZE_LEN;
            if raw == 0 {
                break;
            }
            position = decoder.block(&header, block_position, raw)?;
        }
        let end_mark_position = position - BLOCK_SIZE_LEN;
        let decoded = decoder.out.len() - decoder.start;
        if let Some(declared) = header.content_size {
            if declared != decoded as u64 {
                return Err(Error::ContentSizeMismatch {
                    position: end_mark_position,
                    declared,
                    decoded: decoded as u64,
                    at_least: false,
                });
            }
        }
        if header.content_checksum {
            let stored = decoder.read_u32(position, "content checksum")?;
            if decoder.options.verify_content_checksum {
                let computed = xxh32(&decoder.out[decoder.start..]);
                if computed != stored {
                    return Err(Error::ContentChecksumMismatch {
                        position,
                        stored,
                        computed,
                    });
                }
            }
            position += CHECKSUM_LEN;
        }
        if position != decoder.input.len() {
            return Err(Error::TrailingBytes {
                position,
                count: decoder.input.len() - position,
            });
        }
        Ok(decoded)
    }

    fn read_u32(&self, position: usize, part: &'static str) -> Result<u32, Error> {
        match self.input.get(position..position + 4) {
            Some(bytes) => Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
            None => Err(Error::Truncated {
                position,
                part,
                needed: 4,
                available: self.input.len().saturating_sub(position),
            }),
        }
    }

    /// Decodes the block whose size field `raw` is at `position`; returns where the next starts.
    fn block(&mut self, header: &FrameHeader, position: usize, raw: u32) -> Result<usize, Error> {
        let stored = raw & STORED_BLOCK_FLAG != 0;
        let size = (raw & !STORED_BLOCK_FLAG) as usize;
        // Checked before the input length, so an oversized size reads as invalid, not truncated.
        if size > header.max_block_size {
            return Err(Error::InvalidBlockSize {
                position,
                size,
                max_block_size: header.max_block_size,
                kind: if stored { "stored" } else { "compressed" },
            });
        }
        let data_start = position + BLOCK_SIZE_LEN;
        let checksum_len = if header.block_checksums {
            CHECKSUM_LEN
        } else {
            0
        };
        let available = self.input.len() - data_start;
        if available < size + checksum_len {
            return Err(Error::Truncated {
                position: data_start,
                part: if available < size {
                    "block data"
                } else {
                    "block checksum"
                },
                needed: size + checksum_len,
                available,
            });
        }
        let data = &self.input[data_start..data_start + size];
        if header.block_checksums && self.options.verify_block_checksums {
            let stored_checksum = self.read_u32(data_start + size, "block checksum")?;
            let computed = xxh32(data);
            if computed != stored_checksum {
                return Err(Error::BlockChecksumMismatch {
                    position,
                    stored: stored_checksum,
                    computed,
                });
            }
        }

        let decoded = self.out.len() - self.start;
        let limit_room = self.options.max_decompressed_size.saturating_sub(decoded);
        let content_room = header
            .content_size
            .map(|declared| declared.saturating_sub(decoded as u64))
            .map_or(usize::MAX, |room| {
                usize::try_from(room).unwrap_or(usize::MAX)
            });
        if stored {
            self.check_room(header, position, size, decoded, limit_room, content_room)?;
            self.out.reserve_within(size, self.ceiling());
            self.out.extend_from_slice(data);
        } else {
            self.decompress(header, position, data, decoded, limit_room, content_room)?;
        }
        Ok(data_start + size + checksum_len)
    }

    /// The buffer length this frame may reach: growth is capped here so the limit bounds memory.
    fn ceiling(&self) -> usize {
        self.start
            .saturating_add(self.options.max_decompressed_size)
    }

    fn check_room(
        &self,
        header: &FrameHeader,
        position: usize,
        size: usize,
        decoded: usize,
        limit_room: usize,
        content_room: usize,
    ) -> Result<(), Error> {
        if size > content_room {
            return Err(content_overrun(header, position, decoded + size));
        }
        if size > limit_room {
            return Err(Error::LimitExceeded {
                position,
                at_least: (decoded + size) as u64,
                limit: self.options.max_decompressed_size,
            });
        }
        Ok(())
    }

    fn decompress(
        &mut self,
        header: &FrameHeader,
        position: usize,
        data: &[u8],
        decoded: usize,
        limit_room: usize,
        content_room: usize,
    ) -> Result<(), Error> {
        // The output region is the least of what the block may legally produce, so a block that
        // would pass a bound fails inside the block decoder instead of growing the buffer.
        let expansion_bound = data.len().saturating_mul(MAX_EXPANSION);
        let region = header
            .max_block_size
            .min(expansion_bound)
            .min(limit_room)
            .min(content_room);
        self.out.reserve_within(region, self.ceiling());
        let result = match header.block_mode {
            BlockMode::Independent => decode_independent_block(data, self.out.writable(region)),
            BlockMode::Linked => {
                let window_start = self.out.len().saturating_sub(WINDOW).max(self.start);
                let (history, target) = self.out.history_and_writable(window_start, region);
                decode_linked_block(data, target, history)
            }
        };
        match result {
            Ok(n) => {
                self.out.commit(n);
                Ok(())
            }
            Err(lz4_flex::block::DecompressError::OutputTooSmall { expected, .. }) => {
                // `expected` counts from the region start: a lower bound of the block's size.
                let block_at_least = expected.max(region + 1);
                Err(if region == header.max_block_size {
                    Error::BlockTooLarge {
                        position,
                        max_block_size: header.max_block_size,
                    }
                } else if region == content_room {
                    content_overrun(header, position, decoded + block_at_least)
                } else if region == limit_room {
                    Error::LimitExceeded {
                        position,
                        at_least: (decoded + block_at_least) as u64,
                        limit: self.options.max_decompressed_size,
                    }
                } else {
                    Error::CorruptBlock {
                        position,
                        compressed_size: data.len(),
                        detail: format!(
                            "decodes past {region} bytes, more than {MAX_EXPANSION} per input byte"
                        ),
                    }
                })
            }
            Err(other) => Err(Error::CorruptBlock {
                position,
                compressed_size: data.len(),
                detail: other.to_string(),
            }),
        }
    }
}

// The block decoder's hot loop is kept out of line: inlined into the frame loop it shared
// registers with the frame bookkeeping and ran measurably slower on small blocks.
#[inline(never)]
pub(super) fn decode_independent_block(
    data: &[u8],
    target: &mut [u8],
) -> Result<usize, lz4_flex::block::DecompressError> {
    lz4_flex::block::decompress_into(data, target)
}

#[inline(never)]
fn decode_linked_block(
    data: &[u8],
    target: &mut [u8],
    history: &[u8],
) -> Result<usize, lz4_flex::block::DecompressError> {
    lz4_flex::block::decompress_into_with_dict(data, target, history)
}

fn content_overrun(header: &FrameHeader, position: usize, at_least: usize) -> Error {
    Error::ContentSizeMismatch {
        position,
        declared: header.content_size.unwrap_or(0),
        decoded: at_least as u64,
        at_least: true,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::frame::{encode_frame, BlockSize, EncodeOptions, HeaderChecksum};

    /// Bytes that do not compress, so the encoder stores every block.
    pub(in crate::frame) fn incompressible(len: usize, seed: u64) -> Vec<u8> {
        let mut s = seed | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    fn every_option() -> Vec<EncodeOptions> {
        let mut all = Vec::new();
        for block_checksums in [false, true] {
            for content_checksum in [false, true] {
                for content_size in [false, true] {
                    all.push(EncodeOptions {
                        block_size: BlockSize::Max64KiB,
                        block_checksums,
                        content_checksum,
                        content_size,
                    });
                }
            }
        }
        all
    }

    #[test]
    fn a_single_stored_block_is_borrowed_with_every_option() {
        for options in every_option() {
            for len in [1, 7, 100, 4096] {
                let data = incompressible(len, len as u64);
                let frame = encode_frame(&data, &options);
                let content = stored_content(&frame, &DecodeOptions::default());
                assert_eq!(content, Some(&data[..]), "{options:?} length {len}");
                let in_frame = frame.as_ptr_range();
                assert!(
                    in_frame.contains(&content.unwrap().as_ptr()),
                    "not borrowed"
                );
            }
        }
    }

    #[test]
    fn other_frames_are_left_to_the_decoder() {
        let options = EncodeOptions::default();
        let compressible = encode_frame(&[b'a'; 1000], &options);
        assert_eq!(
            stored_content(&compressible, &DecodeOptions::default()),
            None
        );
        let empty = encode_frame(&[], &options);
        assert_eq!(stored_content(&empty, &DecodeOptions::default()), None);
        let two_blocks = encode_frame(
            &incompressible(70_000, 3),
            &EncodeOptions {
                block_size: BlockSize::Max64KiB,
                ..options
            },
        );
        assert_eq!(stored_content(&two_blocks, &DecodeOptions::default()), None);
        let small_limit = DecodeOptions {
            max_decompressed_size: 99,
            ..DecodeOptions::default()
        };
        let hundred = encode_frame(&incompressible(100, 5), &options);
        assert_eq!(stored_content(&hundred, &small_limit), None);
        assert!(decode_frame(&hundred, &small_limit).is_err());
    }

    /// Every single-byte corruption and every cut of stored single-block frames: whenever
    /// `stored_content` borrows, the full decoder accepts the frame with the same content.
    #[test]
    fn borrowing_never_accepts_what_the_decoder_rejects() {
        let checks = [
            DecodeOptions::default(),
            DecodeOptions {
                verify_block_checksums: false,
                verify_content_checksum: false,
                header_checksum: HeaderChecksum::Ignore,
                ..DecodeOptions::default()
            },
        ];
        let mut borrowed = 0;
        for options in every_option() {
            let frame = encode_frame(&incompressible(20, 9), &options);
            let mut variants = Vec::new();
            for cut in 0..frame.len() {
                variants.push(frame[..cut].to_vec());
            }
            let mut longer = frame.clone();
            longer.push(0);
            variants.push(longer);
            for at in 0..frame.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut bad = frame.clone();
                    bad[at] ^= flip;
                    variants.push(bad);
                }
            }
            for variant in &variants {
                for check in &checks {
                    if let Some(content) = stored_content(variant, check) {
                        borrowed += 1;
                        let decoded = decode_frame(variant, check).unwrap_or_else(|e| {
                            panic!("borrowed a frame the decoder rejects: {e}")
                        });
                        assert_eq!(content, &decoded[..]);
                    }
                }
            }
        }
        assert!(borrowed > 16, "the test must exercise accepted frames too");
    }
}
