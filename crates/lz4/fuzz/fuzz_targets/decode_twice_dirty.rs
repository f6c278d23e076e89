//! Decodes a frame, fills the reused buffer's memory with 0xFF, decodes again: the two results
//! must be identical, so no stale byte from an earlier use of a pooled buffer can leak.
#![no_main]

use krec_lz4::{decode_frame_into, DecodeOptions, HeaderChecksum, PooledBuf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = DecodeOptions {
        max_decompressed_size: 1 << 20,
        header_checksum: HeaderChecksum::Ignore,
        verify_block_checksums: false,
        verify_content_checksum: false,
    };
    let mut out = PooledBuf::take();
    let first = decode_frame_into(data, &options, &mut out).map(|_| out.to_vec());

    out.clear();
    let capacity = out.capacity();
    out.writable(capacity).fill(0xFF);
    out.clear();
    let second = decode_frame_into(data, &options, &mut out).map(|_| out.to_vec());
    assert_eq!(first, second);

    // Also with bytes already in the buffer: the frame's output must not depend on them.
    out.clear();
    out.extend_from_slice(&[0xFF; 100]);
    let third = decode_frame_into(data, &options, &mut out).map(|_| out[100..].to_vec());
    assert_eq!(first, third);
});
