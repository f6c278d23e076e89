//! Property tests: round trips over random inputs and options, and no panic on any input.

mod common;

use krec_lz4::{
    decode_frame, encode_frame_with_mode, BlockMode, BlockSize, DecodeOptions, EncodeOptions,
    HeaderChecksum,
};
use proptest::prelude::*;

fn block_size() -> impl Strategy<Value = BlockSize> {
    prop::sample::select(BlockSize::ALL.to_vec())
}

fn mode() -> impl Strategy<Value = BlockMode> {
    prop::sample::select(vec![BlockMode::Independent, BlockMode::Linked])
}

/// Mostly-repetitive data so blocks compress and matches cross block boundaries.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(any::<u8>(), 1..64),
        0usize..200_000,
        any::<bool>(),
    )
        .prop_map(|(pattern, len, noisy)| {
            (0..len)
                .map(|i| {
                    let byte = pattern[i % pattern.len()];
                    if noisy && i % 7 == 0 {
                        byte ^ (i as u8)
                    } else {
                        byte
                    }
                })
                .collect()
        })
}

fn lenient() -> DecodeOptions {
    DecodeOptions {
        header_checksum: HeaderChecksum::Ignore,
        verify_block_checksums: false,
        verify_content_checksum: false,
        ..DecodeOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip(data in payload(), block in block_size(), mode in mode(), flags in 0u8..8) {
        let options = EncodeOptions {
            block_size: block,
            block_checksums: flags & 1 != 0,
            content_checksum: flags & 2 != 0,
            content_size: flags & 4 != 0,
        };
        let frame = encode_frame_with_mode(&data, &options, mode);
        let decoded = decode_frame(&frame, &DecodeOptions::default()).unwrap();
        prop_assert!(decoded[..] == data[..]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let _ = decode_frame(&bytes, &lenient());
    }

    #[test]
    fn arbitrary_blocks_after_a_valid_header_never_panic(
        flg_bits in 0u8..0x40,
        bd_code in 4u8..8,
        body in prop::collection::vec(any::<u8>(), 0..4096),
    ) {
        // Version 01, reserved bit and dictionary bit clear: the decoder gets to the blocks.
        let flg = 0x40 | (flg_bits & 0x3C);
        let mut frame = vec![0x04, 0x22, 0x4D, 0x18, flg, bd_code << 4];
        if flg & 0x08 != 0 {
            frame.extend_from_slice(&(body.len() as u64 * 3).to_le_bytes());
        }
        frame.push(0);
        frame.extend_from_slice(&body);
        let _ = decode_frame(&frame, &lenient());
    }

    #[test]
    fn a_flipped_byte_is_caught_or_harmless(
        data in payload(),
        mode in mode(),
        flip_at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let options = EncodeOptions {
            block_checksums: true,
            content_checksum: true,
            content_size: true,
            ..EncodeOptions::default()
        };
        let mut frame = encode_frame_with_mode(&data, &options, mode);
        let at = flip_at.index(frame.len());
        frame[at] ^= flip;
        // With every checksum on, a single corrupted byte must never decode to wrong content.
        if let Ok(decoded) = decode_frame(&frame, &DecodeOptions::default()) {
            prop_assert!(decoded[..] == data[..]);
        }
    }
}
