//! Writing frames the way Kafka's Java client does (or with linked blocks, for tests).
//!
//! Every encoder writes the frame into a region sized by [`max_frame_size`], each block
//! compressed straight into its place, so the pooled path ([`encode_frame_into_pooled`])
//! copies nothing and, once its buffer is warm, allocates nothing. Independent blocks are
//! compressed by liblz4 (the `lz4` crate), the compressor the Java client uses through
//! lz4-java, at its default acceleration; linked blocks (tests only) by lz4_flex.

use lz4::block::CompressionMode;
use lz4_flex::block::get_maximum_output_size;

use super::checksum::xxh32;
use super::header::{header_bytes, MAX_HEADER_LEN};
use super::{BlockMode, EncodeOptions};
use crate::PooledBuf;

const STORED_BLOCK_FLAG: u32 = 1 << 31;
const WINDOW: usize = 64 * 1024;
/// Bytes of a block's size field, of the end mark and of each checksum.
const FIELD_LEN: usize = 4;

/// Encodes `input` as one frame with independent blocks, as Kafka's Java client writes it.
pub fn encode_frame(input: &[u8], options: &EncodeOptions) -> Vec<u8> {
    encode_frame_with_mode(input, options, BlockMode::Independent)
}

/// Encodes `input` as one frame with the given block mode.
pub fn encode_frame_with_mode(input: &[u8], options: &EncodeOptions, mode: BlockMode) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame_into(input, options, mode, &mut out);
    out
}

/// Appends one frame encoding `input` to `out`.
pub fn encode_frame_into(
    input: &[u8],
    options: &EncodeOptions,
    mode: BlockMode,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    out.resize(start + max_frame_size(input.len(), options), 0);
    let written = write_frame(input, options, mode, &mut out[start..]);
    out.truncate(start + written);
}

/// Appends one frame encoding `input` to `out`, with independent blocks as Kafka's Java
/// client writes them: the batch writer's path. Each block is compressed straight into the
/// buffer (liblz4 keeps its match table on the stack), so a warm buffer allocates nothing.
pub fn encode_frame_into_pooled(input: &[u8], options: &EncodeOptions, out: &mut PooledBuf) {
    let region = out.writable(max_frame_size(input.len(), options));
    let written = write_frame(input, options, BlockMode::Independent, region);
    out.commit(written);
}

/// The most bytes a frame of `input_len` bytes of content takes under `options` (the size
/// of the region the encoders write into).
pub fn max_frame_size(input_len: usize, options: &EncodeOptions) -> usize {
    let block_max = options.block_size.bytes();
    let (full, rest) = (input_len / block_max, input_len % block_max);
    let per_block = FIELD_LEN + usize::from(options.block_checksums) * FIELD_LEN;
    let blocks = full + usize::from(rest > 0);
    let mut size = MAX_HEADER_LEN + blocks * per_block + FIELD_LEN;
    size += full * get_maximum_output_size(block_max);
    if rest > 0 {
        size += get_maximum_output_size(rest);
    }
    size + usize::from(options.content_checksum) * FIELD_LEN
}

/// Writes the frame into `out` (at least [`max_frame_size`] bytes) and returns its length.
fn write_frame(input: &[u8], options: &EncodeOptions, mode: BlockMode, out: &mut [u8]) -> usize {
    let (header, header_len) = header_bytes(options, mode, input.len());
    out[..header_len].copy_from_slice(&header[..header_len]);
    let mut at = header_len;
    let block_max = options.block_size.bytes();
    let mut block_start = 0;
    while block_start < input.len() {
        let block_end = input.len().min(block_start + block_max);
        let block = &input[block_start..block_end];
        let data_start = at + FIELD_LEN;
        let target = &mut out[data_start..data_start + get_maximum_output_size(block.len())];
        let compressed = match mode {
            BlockMode::Independent => compress_independent(block, target),
            BlockMode::Linked => {
                let history = &input[block_start.saturating_sub(WINDOW)..block_start];
                lz4_flex::block::compress_into_with_dict(block, target, history).ok()
            }
        };
        // The target is at least lz4_flex's bound, above liblz4's too, so failure is only
        // possible if that contract breaks; storing the block raw is then still correct.
        let (size_field, data_len) = match compressed {
            Some(n) if n < block.len() => (n as u32, n),
            _ => {
                out[data_start..data_start + block.len()].copy_from_slice(block);
                (block.len() as u32 | STORED_BLOCK_FLAG, block.len())
            }
        };
        out[at..data_start].copy_from_slice(&size_field.to_le_bytes());
        at = data_start + data_len;
        if options.block_checksums {
            let checksum = xxh32(&out[data_start..at]);
            out[at..at + FIELD_LEN].copy_from_slice(&checksum.to_le_bytes());
            at += FIELD_LEN;
        }
        block_start = block_end;
    }
    out[at..at + FIELD_LEN].copy_from_slice(&0u32.to_le_bytes());
    at += FIELD_LEN;
    if options.content_checksum {
        out[at..at + FIELD_LEN].copy_from_slice(&xxh32(input).to_le_bytes());
        at += FIELD_LEN;
    }
    at
}

/// One independent block compressed by liblz4 at acceleration 1, what lz4-java's fast
/// compressor (the Java client's at the default `compression.lz4.level`) does; `None` if
/// liblz4 refuses.
fn compress_independent(block: &[u8], target: &mut [u8]) -> Option<usize> {
    lz4::block::compress_to_buffer(block, Some(CompressionMode::DEFAULT), false, target).ok()
}
