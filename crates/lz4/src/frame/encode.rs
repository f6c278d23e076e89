//! Writing frames the way Kafka's Java client does (or with linked blocks, for tests).

use super::checksum::xxh32;
use super::header::write_header;
use super::{BlockMode, EncodeOptions};

const STORED_BLOCK_FLAG: u32 = 1 << 31;
const WINDOW: usize = 64 * 1024;

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
    write_header(out, options, mode, input.len());
    let block_max = options.block_size.bytes();
    let mut block_start = 0;
    while block_start < input.len() {
        let block_end = input.len().min(block_start + block_max);
        let block = &input[block_start..block_end];
        let size_position = out.len();
        let data_start = size_position + 4;
        out.resize(
            data_start + lz4_flex::block::get_maximum_output_size(block.len()),
            0,
        );
        let target = &mut out[data_start..];
        let compressed = match mode {
            BlockMode::Independent => lz4_flex::block::compress_into(block, target),
            BlockMode::Linked => {
                let history = &input[block_start.saturating_sub(WINDOW)..block_start];
                lz4_flex::block::compress_into_with_dict(block, target, history)
            }
        };
        // The target has the size lz4_flex documents as always enough, so failure is only
        // possible if that contract breaks; storing the block raw is then still correct.
        let size_field = match compressed {
            Ok(n) if n < block.len() => {
                out.truncate(data_start + n);
                n as u32
            }
            _ => {
                out.truncate(data_start);
                out.extend_from_slice(block);
                block.len() as u32 | STORED_BLOCK_FLAG
            }
        };
        out[size_position..data_start].copy_from_slice(&size_field.to_le_bytes());
        if options.block_checksums {
            let checksum = xxh32(&out[data_start..]);
            out.extend_from_slice(&checksum.to_le_bytes());
        }
        block_start = block_end;
    }
    out.extend_from_slice(&0u32.to_le_bytes());
    if options.content_checksum {
        out.extend_from_slice(&xxh32(input).to_le_bytes());
    }
}
