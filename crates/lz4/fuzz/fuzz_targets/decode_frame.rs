//! Arbitrary bytes as an LZ4 frame: decoding must return, never panic, never over-allocate.
#![no_main]

use krec_lz4::{decode_frame, DecodeOptions, HeaderChecksum};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, frame)) = data.split_first() else {
        return;
    };
    // The first byte picks the options, so the fuzzer can reach the blocks without forging a
    // header checksum, and exercises small limits.
    let options = DecodeOptions {
        max_decompressed_size: if mode & 1 != 0 { 1 << 20 } else { 4096 },
        header_checksum: match (mode >> 1) & 3 {
            0 => HeaderChecksum::Standard,
            1 => HeaderChecksum::KafkaLegacy,
            _ => HeaderChecksum::Ignore,
        },
        verify_block_checksums: mode & 8 == 0,
        verify_content_checksum: mode & 16 == 0,
    };
    if let Ok(decoded) = decode_frame(frame, &options) {
        assert!(decoded.len() <= options.max_decompressed_size);
    }
});
