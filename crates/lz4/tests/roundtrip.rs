//! Round trips through our encoder and decoder, and against the lz4 C library.

mod common;

use common::{compressible, incompressible, reference_decode, reference_frame, sizes_for};
use krec_lz4::{
    decode_frame, decode_frame_into, encode_frame, encode_frame_into_pooled,
    encode_frame_with_mode, max_frame_size, BlockMode, BlockSize, DecodeOptions, EncodeOptions,
    PooledBuf,
};

fn inputs(block: BlockSize) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for len in sizes_for(block) {
        all.push((format!("compressible {len}"), compressible(len)));
        all.push((
            format!("incompressible {len}"),
            incompressible(len, len as u64),
        ));
    }
    all
}

fn option_grid(block: BlockSize) -> Vec<EncodeOptions> {
    let mut grid = Vec::new();
    for bits in 0..8u8 {
        grid.push(EncodeOptions {
            block_size: block,
            block_checksums: bits & 1 != 0,
            content_checksum: bits & 2 != 0,
            content_size: bits & 4 != 0,
        });
    }
    grid
}

#[test]
fn our_frames_round_trip_at_every_block_size_mode_and_option() {
    for block in BlockSize::ALL {
        for (name, data) in inputs(block) {
            for options in option_grid(block) {
                for mode in [BlockMode::Independent, BlockMode::Linked] {
                    let frame = encode_frame_with_mode(&data, &options, mode);
                    let decoded = decode_frame(&frame, &DecodeOptions::default())
                        .unwrap_or_else(|e| panic!("{name} {options:?} {mode:?}: {e}"));
                    assert!(decoded[..] == data[..], "{name} {options:?} {mode:?}");
                }
            }
        }
    }
}

#[test]
fn our_frames_decode_with_the_c_library() {
    for block in BlockSize::ALL {
        for (name, data) in inputs(block) {
            for options in option_grid(block) {
                for mode in [BlockMode::Independent, BlockMode::Linked] {
                    let frame = encode_frame_with_mode(&data, &options, mode);
                    let decoded = reference_decode(&frame)
                        .unwrap_or_else(|e| panic!("{name} {options:?} {mode:?}: {e}"));
                    assert!(decoded == data, "{name} {options:?} {mode:?}");
                }
            }
        }
    }
}

#[test]
fn c_library_frames_decode_to_the_same_bytes() {
    for block in BlockSize::ALL {
        for (name, data) in inputs(block) {
            for mode in [BlockMode::Independent, BlockMode::Linked] {
                for bits in 0..8u8 {
                    let (block_sums, content_sum, content_size) =
                        (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
                    let frame =
                        reference_frame(&data, block, mode, block_sums, content_sum, content_size);
                    let decoded = decode_frame(&frame, &DecodeOptions::default())
                        .unwrap_or_else(|e| panic!("{name} {block:?} {mode:?} {bits}: {e}"));
                    assert!(decoded[..] == data[..], "{name} {block:?} {mode:?} {bits}");
                }
            }
        }
    }
}

#[test]
fn linked_frames_from_the_c_library_really_reference_earlier_blocks() {
    // If this frame did not use cross-block matches, the linked-block test above would prove
    // nothing about the dictionary path.
    let data = compressible(300 * 1024);
    let linked = reference_frame(
        &data,
        BlockSize::Max64KiB,
        BlockMode::Linked,
        false,
        false,
        false,
    );
    let independent = reference_frame(
        &data,
        BlockSize::Max64KiB,
        BlockMode::Independent,
        false,
        false,
        false,
    );
    assert!(
        linked.len() < independent.len(),
        "{} vs {}",
        linked.len(),
        independent.len()
    );
    let decoded = decode_frame(&linked, &DecodeOptions::default()).unwrap();
    assert!(decoded[..] == data[..]);
}

#[test]
fn default_encoding_is_like_the_java_client() {
    let frame = encode_frame(b"x", &EncodeOptions::default());
    // FLG: version 01, independent blocks, no checksums, no content size; BD: 64 KiB.
    assert_eq!(&frame[..6], &[0x04, 0x22, 0x4D, 0x18, 0x60, 0x40]);
}

#[test]
fn independent_blocks_are_what_liblz4_writes_at_the_java_clients_default_level() {
    // The Java client's default `compression.lz4.level` picks lz4-java's fast compressor:
    // liblz4 at acceleration 1. Blocks that do not shrink are stored, as Java stores them.
    let mut data = compressible(3 * 64 * 1024 + 500);
    data.extend(incompressible(64 * 1024, 7));
    let frame = encode_frame(&data, &EncodeOptions::default());
    let mut at = 7;
    for block in data.chunks(64 * 1024) {
        let field = u32::from_le_bytes(frame[at..at + 4].try_into().unwrap());
        let (len, stored) = ((field & !(1 << 31)) as usize, field >> 31 == 1);
        let written = &frame[at + 4..at + 4 + len];
        let reference = lz4::block::compress(block, None, false).unwrap();
        if reference.len() < block.len() {
            assert!(!stored && written == &reference[..], "block at {at}");
        } else {
            assert!(stored && written == block, "block at {at}");
        }
        at += 4 + len;
    }
    assert_eq!(&frame[at..], &[0, 0, 0, 0]);
}

#[test]
fn empty_frame_decodes_to_nothing() {
    let frame = encode_frame(b"", &EncodeOptions::default());
    // Header (7 bytes) and end mark only.
    assert_eq!(frame.len(), 11);
    let decoded = decode_frame(&frame, &DecodeOptions::default()).unwrap();
    assert!(decoded.is_empty());
}

#[test]
fn decode_into_appends_after_existing_bytes() {
    let first = compressible(70_000);
    let second = compressible(90_000);
    let options = EncodeOptions::default();
    let mut out = PooledBuf::take();
    out.extend_from_slice(b"prefix");
    let n1 = decode_frame_into(
        &encode_frame_with_mode(&first, &options, BlockMode::Linked),
        &DecodeOptions::default(),
        &mut out,
    )
    .unwrap();
    let n2 = decode_frame_into(
        &encode_frame_with_mode(&second, &options, BlockMode::Linked),
        &DecodeOptions::default(),
        &mut out,
    )
    .unwrap();
    assert_eq!((n1, n2), (first.len(), second.len()));
    let mut expected = b"prefix".to_vec();
    expected.extend_from_slice(&first);
    expected.extend_from_slice(&second);
    assert!(out[..] == expected[..]);
}

#[test]
fn python_lz4_fixtures_decode_to_the_same_bytes() {
    // Written by Debian's liblz4 1.9.4 through python3-lz4 (tests/fixtures/make_python_lz4.py).
    let expected = compressible(70_000);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "lz4") {
            let frame = std::fs::read(&path).unwrap();
            let decoded = decode_frame(&frame, &DecodeOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(decoded[..] == expected[..], "{}", path.display());
            seen += 1;
        }
    }
    assert_eq!(seen, 4);
}

#[test]
fn the_pooled_encoder_writes_the_same_frames_after_what_the_buffer_holds() {
    for block in BlockSize::ALL {
        for options in option_grid(block) {
            // One buffer for every input: each frame lands after earlier, dirtier content.
            let mut out = PooledBuf::take();
            for (name, input) in inputs(block) {
                out.clear();
                out.extend_from_slice(&[0xff; 3]);
                encode_frame_into_pooled(&input, &options, &mut out);
                let expected = encode_frame(&input, &options);
                assert_eq!(&out[..3], &[0xff; 3], "{name}");
                assert_eq!(&out[3..], &expected[..], "{name} {options:?}");
                assert!(
                    expected.len() <= max_frame_size(input.len(), &options),
                    "{name}"
                );
                let decoded = decode_frame(&out[3..], &DecodeOptions::default()).unwrap();
                assert_eq!(&decoded[..], &input[..], "{name}");
            }
        }
    }
}
