//! Test data and frame builders shared by the integration tests.
#![allow(dead_code)]

use krec_lz4::{BlockMode, BlockSize};

/// Deterministic pseudo-random bytes (xorshift64*): incompressible for LZ4.
pub fn incompressible(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Record-like text with repeats at short and long distances, so linked blocks matter.
pub fn compressible(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut i = 0u64;
    while out.len() < len {
        let line = format!(
            "{{\"offset\":{},\"key\":\"user-{}\",\"value\":\"event {} from sensor {}\"}}\n",
            i,
            i % 97,
            i % 13,
            i % 7
        );
        out.extend_from_slice(line.as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// Interesting sizes for a block maximum: empty, one byte, around the block boundary, several
/// blocks.
pub fn sizes_for(block: BlockSize) -> Vec<usize> {
    let max = block.bytes();
    vec![0, 1, 100, max - 1, max, max + 1, 2 * max + 17]
}

/// A frame written by the lz4 C library (through the `lz4` crate).
pub fn reference_frame(
    data: &[u8],
    block: BlockSize,
    mode: BlockMode,
    block_checksums: bool,
    content_checksum: bool,
    content_size: bool,
) -> Vec<u8> {
    use std::io::Write;
    let mut builder = lz4::EncoderBuilder::new();
    builder
        .block_size(match block {
            BlockSize::Max64KiB => lz4::BlockSize::Max64KB,
            BlockSize::Max256KiB => lz4::BlockSize::Max256KB,
            BlockSize::Max1MiB => lz4::BlockSize::Max1MB,
            BlockSize::Max4MiB => lz4::BlockSize::Max4MB,
        })
        .block_mode(match mode {
            BlockMode::Independent => lz4::BlockMode::Independent,
            BlockMode::Linked => lz4::BlockMode::Linked,
        })
        .block_checksum(if block_checksums {
            lz4::liblz4::BlockChecksum::BlockChecksumEnabled
        } else {
            lz4::liblz4::BlockChecksum::NoBlockChecksum
        })
        .checksum(if content_checksum {
            lz4::ContentChecksum::ChecksumEnabled
        } else {
            lz4::ContentChecksum::NoChecksum
        });
    if content_size {
        builder.content_size(data.len() as u64);
    }
    let mut encoder = builder.build(Vec::new()).expect("lz4 encoder");
    encoder.write_all(data).expect("lz4 write");
    let (frame, result) = encoder.finish();
    result.expect("lz4 finish");
    frame
}

/// Decodes with the lz4 C library.
pub fn reference_decode(frame: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut decoder = lz4::Decoder::new(frame)?;
    let mut out = Vec::new();
    decoder.read_to_end(&mut out)?;
    Ok(out)
}

/// xxHash32 with seed 0.
pub fn xxh32(data: &[u8]) -> u32 {
    twox_hash::XxHash32::oneshot(0, data)
}

/// The spec's header checksum byte over `descriptor` (FLG up to HC).
pub fn header_checksum(descriptor: &[u8]) -> u8 {
    (xxh32(descriptor) >> 8) as u8
}
