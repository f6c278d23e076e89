//! Every rejection path, each with a hand-built frame, checking the numbers the error carries.

mod common;

use common::{compressible, header_checksum, incompressible, xxh32};
use krec_lz4::{
    decode_frame, decode_frame_into, encode_frame, set_thread_pool_config, BlockSize,
    DecodeOptions, EncodeOptions, Error, HeaderChecksum, PoolConfig, PooledBuf,
};

const MAGIC: [u8; 4] = [0x04, 0x22, 0x4D, 0x18];
/// FLG: version 01, independent blocks.
const FLG_INDEPENDENT: u8 = 0x60;
const FLG_LINKED: u8 = 0x40;
const FLG_CONTENT_SIZE: u8 = 0x08;
const FLG_DICT_ID: u8 = 0x01;
const BD_64K: u8 = 0x40;
const STORED: u32 = 1 << 31;
const HEADER_LEN: usize = 7;

/// Magic + FLG + BD (+ content size) + a correct standard header checksum.
fn header(flg: u8, bd: u8, content_size: Option<u64>) -> Vec<u8> {
    let mut frame = MAGIC.to_vec();
    frame.push(
        flg | if content_size.is_some() {
            FLG_CONTENT_SIZE
        } else {
            0
        },
    );
    frame.push(bd);
    if let Some(size) = content_size {
        frame.extend_from_slice(&size.to_le_bytes());
    }
    let hc = header_checksum(&frame[4..]);
    frame.push(hc);
    frame
}

fn push_block(frame: &mut Vec<u8>, size_field: u32, data: &[u8]) {
    frame.extend_from_slice(&size_field.to_le_bytes());
    frame.extend_from_slice(data);
}

fn push_compressed(frame: &mut Vec<u8>, data: &[u8]) -> usize {
    let block = lz4_flex::block::compress(data);
    push_block(frame, block.len() as u32, &block);
    block.len()
}

fn end(frame: &mut Vec<u8>) {
    frame.extend_from_slice(&0u32.to_le_bytes());
}

fn decode(frame: &[u8]) -> Result<PooledBuf, Error> {
    decode_frame(frame, &DecodeOptions::default())
}

fn with_limit(limit: usize) -> DecodeOptions {
    DecodeOptions {
        max_decompressed_size: limit,
        ..DecodeOptions::default()
    }
}

#[test]
fn bad_magic() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    frame[0] = 0x05;
    end(&mut frame);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::BadMagic {
            position: 0,
            found: 0x184D_2205,
            expected: 0x184D_2204
        }
    );
}

#[test]
fn legacy_lz4_and_skippable_magics_are_rejected() {
    for magic in [0x184C_2102u32, 0x184D_2A50] {
        let mut frame = magic.to_le_bytes().to_vec();
        frame.extend_from_slice(&[0; 8]);
        assert!(
            matches!(decode(&frame), Err(Error::BadMagic { found, .. }) if found == magic),
            "{magic:#x}"
        );
    }
}

#[test]
fn unsupported_version() {
    for (flg, version) in [(0x20u8, 0u8), (0xA0, 2), (0xE0, 3)] {
        let mut frame = header(flg, BD_64K, None);
        end(&mut frame);
        assert_eq!(
            decode(&frame).unwrap_err(),
            Error::UnsupportedVersion {
                position: 4,
                version
            }
        );
    }
}

#[test]
fn reserved_bits() {
    let cases = [
        (
            FLG_INDEPENDENT | 0x02,
            BD_64K,
            4,
            FLG_INDEPENDENT | 0x02,
            0x02,
        ),
        (FLG_INDEPENDENT, BD_64K | 0x80, 5, BD_64K | 0x80, 0x80),
        (FLG_INDEPENDENT, BD_64K | 0x01, 5, BD_64K | 0x01, 0x01),
        (FLG_INDEPENDENT, BD_64K | 0x08, 5, BD_64K | 0x08, 0x08),
    ];
    for (flg, bd, position, byte, bits) in cases {
        let mut frame = header(flg, bd, None);
        end(&mut frame);
        assert_eq!(
            decode(&frame).unwrap_err(),
            Error::ReservedBitsSet {
                position,
                byte,
                bits
            }
        );
    }
}

#[test]
fn unsupported_block_max_size() {
    for code in 0..4u8 {
        let mut frame = header(FLG_INDEPENDENT, code << 4, None);
        end(&mut frame);
        assert_eq!(
            decode(&frame).unwrap_err(),
            Error::UnsupportedBlockMaxSize { position: 5, code }
        );
    }
}

#[test]
fn every_valid_block_max_size_is_accepted() {
    for block in BlockSize::ALL {
        let mut frame = header(FLG_INDEPENDENT, block.code() << 4, None);
        push_block(&mut frame, 3 | STORED, b"abc");
        end(&mut frame);
        assert_eq!(&decode(&frame).unwrap()[..], b"abc", "{block:?}");
    }
}

#[test]
fn dictionary_frames_are_rejected() {
    let mut frame = MAGIC.to_vec();
    frame.extend_from_slice(&[FLG_INDEPENDENT | FLG_DICT_ID, BD_64K]);
    frame.extend_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    let hc = header_checksum(&frame[4..]);
    frame.push(hc);
    end(&mut frame);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::DictionaryNotSupported {
            position: 6,
            dict_id: 0xDEAD_BEEF
        }
    );
}

#[test]
fn header_checksum_mismatch() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    let good = frame[6];
    frame[6] = good.wrapping_add(1);
    end(&mut frame);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::HeaderChecksumMismatch {
            position: 6,
            stored: good.wrapping_add(1),
            computed: good
        }
    );
    let ignoring = DecodeOptions {
        header_checksum: HeaderChecksum::Ignore,
        ..DecodeOptions::default()
    };
    assert!(decode_frame(&frame, &ignoring).unwrap().is_empty());
}

#[test]
fn header_checksum_covers_the_content_size() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, Some(3));
    frame[6] ^= 0x01; // content size 3 -> 2, checksum unchanged
    push_block(&mut frame, 3 | STORED, b"abc");
    end(&mut frame);
    assert!(matches!(
        decode(&frame),
        Err(Error::HeaderChecksumMismatch { position: 14, .. })
    ));
}

/// A frame as Kafka 0.8/0.9 wrote it for magic-0 messages: HC over magic + descriptor.
fn legacy_frame(data: &[u8]) -> Vec<u8> {
    let mut frame = encode_frame(data, &EncodeOptions::default());
    frame[6] = header_checksum(&frame[..6]);
    assert_ne!(
        frame[6],
        header_checksum(&frame[4..6]),
        "test needs distinct checksums"
    );
    frame
}

#[test]
fn kafka_legacy_header_checksum_needs_legacy_mode() {
    let data = compressible(1000);
    let frame = legacy_frame(&data);
    assert!(matches!(
        decode(&frame),
        Err(Error::HeaderChecksumMismatch { position: 6, .. })
    ));
    for mode in [HeaderChecksum::KafkaLegacy, HeaderChecksum::Ignore] {
        let options = DecodeOptions {
            header_checksum: mode,
            ..DecodeOptions::default()
        };
        assert!(
            decode_frame(&frame, &options).unwrap()[..] == data[..],
            "{mode:?}"
        );
    }
}

#[test]
fn kafka_legacy_mode_accepts_standard_and_rejects_garbage() {
    let legacy = DecodeOptions {
        header_checksum: HeaderChecksum::KafkaLegacy,
        ..DecodeOptions::default()
    };
    let mut frame = encode_frame(b"abc", &EncodeOptions::default());
    assert_eq!(&decode_frame(&frame, &legacy).unwrap()[..], b"abc");
    let standard = frame[6];
    let legacy_hc = header_checksum(&frame[..6]);
    let garbage = (0..=255u8)
        .find(|b| *b != standard && *b != legacy_hc)
        .unwrap();
    frame[6] = garbage;
    assert_eq!(
        decode_frame(&frame, &legacy).unwrap_err(),
        Error::HeaderChecksumMismatch {
            position: 6,
            stored: garbage,
            computed: legacy_hc
        }
    );
}

#[test]
fn stored_block_larger_than_maximum_is_an_invalid_block_size_not_truncation() {
    // KAFKA-5150: the size field says more than the block maximum and the frame ends right
    // after; the error must name the size, not an unexpected end.
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    push_block(&mut frame, (65_536 + 1) | STORED, b"abc");
    let error = decode(&frame).unwrap_err();
    assert_eq!(
        error,
        Error::InvalidBlockSize {
            position: HEADER_LEN,
            size: 65_537,
            max_block_size: 65_536,
            kind: "stored"
        }
    );
    assert!(
        error.to_string().contains("invalid block size 65537"),
        "{error}"
    );
}

#[test]
fn compressed_block_size_field_larger_than_maximum() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    push_block(&mut frame, 0x7FFF_FFFF, &[]);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::InvalidBlockSize {
            position: HEADER_LEN,
            size: 0x7FFF_FFFF,
            max_block_size: 65_536,
            kind: "compressed"
        }
    );
}

#[test]
fn compressed_block_decoding_past_the_maximum() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    let compressed_len = push_compressed(&mut frame, &vec![7u8; 65_536 + 100]);
    assert!(compressed_len < 65_536);
    end(&mut frame);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::BlockTooLarge {
            position: HEADER_LEN,
            max_block_size: 65_536
        }
    );
}

#[test]
fn a_block_of_exactly_the_maximum_is_fine() {
    let data = vec![7u8; 65_536];
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    push_compressed(&mut frame, &data);
    push_block(&mut frame, 65_536 | STORED, &data);
    end(&mut frame);
    assert_eq!(decode(&frame).unwrap().len(), 2 * 65_536);
}

#[test]
fn truncation_at_every_part_names_the_part() {
    let data = incompressible(100, 1);
    let options = EncodeOptions {
        block_checksums: true,
        content_checksum: true,
        content_size: true,
        ..EncodeOptions::default()
    };
    let frame = encode_frame(&data, &options);
    // magic 4, FLG BD 2, content size 8, HC 1, block size 4, 100 stored bytes, block checksum 4,
    // end mark 4, content checksum 4.
    assert_eq!(frame.len(), 15 + 4 + 100 + 4 + 4 + 4);
    let cases: [(usize, usize, &str, usize); 8] = [
        (2, 0, "magic number", 4),
        (5, 4, "frame descriptor", 2),
        (10, 6, "content size", 8),
        (14, 14, "header checksum", 1),
        (17, 15, "block size", 4),
        (60, 19, "block data", 104),
        (121, 19, "block checksum", 104),
        (frame.len() - 1, 127, "content checksum", 4),
    ];
    for (cut, position, part, needed) in cases {
        let error = decode(&frame[..cut]).unwrap_err();
        assert_eq!(
            error,
            Error::Truncated {
                position,
                part,
                needed,
                available: cut - position
            },
            "cut at {cut}"
        );
    }
}

#[test]
fn every_prefix_of_a_frame_is_rejected_without_panic() {
    let data = compressible(200_000);
    let options = EncodeOptions {
        block_checksums: true,
        content_checksum: true,
        content_size: true,
        ..EncodeOptions::default()
    };
    let frame = encode_frame(&data, &options);
    for cut in 0..frame.len() {
        assert!(
            matches!(decode(&frame[..cut]), Err(Error::Truncated { .. })),
            "cut at {cut}"
        );
    }
}

#[test]
fn missing_end_mark_is_truncation() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    push_block(&mut frame, 3 | STORED, b"abc");
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::Truncated {
            position: HEADER_LEN + 7,
            part: "block size",
            needed: 4,
            available: 0
        }
    );
}

#[test]
fn block_checksum_mismatch() {
    let data = compressible(5000);
    let mut frame = encode_frame(
        &data,
        &EncodeOptions {
            block_checksums: true,
            ..EncodeOptions::default()
        },
    );
    let sum_at = frame.len() - 8;
    let stored = u32::from_le_bytes(frame[sum_at..sum_at + 4].try_into().unwrap());
    let block_len = sum_at - HEADER_LEN - 4;
    assert_eq!(stored, xxh32(&frame[HEADER_LEN + 4..sum_at]), "{block_len}");
    frame[sum_at] ^= 0xFF;
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::BlockChecksumMismatch {
            position: HEADER_LEN,
            stored: stored ^ 0xFF,
            computed: stored
        }
    );
    let unchecked = DecodeOptions {
        verify_block_checksums: false,
        ..DecodeOptions::default()
    };
    assert!(decode_frame(&frame, &unchecked).unwrap()[..] == data[..]);
}

#[test]
fn content_checksum_mismatch() {
    let data = compressible(5000);
    let mut frame = encode_frame(
        &data,
        &EncodeOptions {
            content_checksum: true,
            ..EncodeOptions::default()
        },
    );
    let sum_at = frame.len() - 4;
    let computed = xxh32(&data);
    frame[sum_at + 3] ^= 0x80;
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::ContentChecksumMismatch {
            position: sum_at,
            stored: computed ^ 0x8000_0000,
            computed
        }
    );
    let unchecked = DecodeOptions {
        verify_content_checksum: false,
        ..DecodeOptions::default()
    };
    assert!(decode_frame(&frame, &unchecked).unwrap()[..] == data[..]);
}

#[test]
fn content_size_declared_larger_than_content() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, Some(10));
    push_block(&mut frame, 3 | STORED, b"abc");
    end(&mut frame);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::ContentSizeMismatch {
            position: 15 + 7,
            declared: 10,
            decoded: 3,
            at_least: false
        }
    );
}

#[test]
fn content_size_declared_smaller_than_a_stored_block() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, Some(2));
    push_block(&mut frame, 3 | STORED, b"abc");
    end(&mut frame);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::ContentSizeMismatch {
            position: 15,
            declared: 2,
            decoded: 3,
            at_least: true
        }
    );
}

#[test]
fn content_size_declared_smaller_than_a_compressed_block() {
    let mut frame = header(FLG_INDEPENDENT, BD_64K, Some(100));
    push_compressed(&mut frame, &compressible(5000));
    end(&mut frame);
    match decode(&frame).unwrap_err() {
        Error::ContentSizeMismatch {
            position: 15,
            declared: 100,
            decoded,
            at_least: true,
        } => assert!(decoded > 100, "{decoded}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn declared_content_size_above_limit_is_rejected_at_the_header() {
    // No block follows: the header alone must be enough to reject.
    let frame = header(FLG_INDEPENDENT, BD_64K, Some(1 << 40));
    assert_eq!(
        decode_frame(&frame, &with_limit(1 << 20)).unwrap_err(),
        Error::LimitExceeded {
            position: 6,
            at_least: 1 << 40,
            limit: 1 << 20
        }
    );
}

#[test]
fn compressed_content_above_limit_is_rejected_without_allocating_past_it() {
    set_thread_pool_config(PoolConfig {
        max_buffers: 0,
        ..PoolConfig::default()
    });
    let data = compressible(100_000);
    let frame = encode_frame(&data, &EncodeOptions::default());
    let limit = 80_000;
    let mut out = PooledBuf::take();
    let error = decode_frame_into(&frame, &with_limit(limit), &mut out).unwrap_err();
    match error {
        Error::LimitExceeded {
            position,
            at_least,
            limit: reported,
        } => {
            assert_eq!(reported, limit);
            assert!(at_least > limit as u64, "{at_least}");
            assert!(position > HEADER_LEN, "the first block fits: {position}");
        }
        other => panic!("{other:?}"),
    }
    assert!(out.capacity() <= limit, "capacity {}", out.capacity());
    assert!(out.is_empty());
    set_thread_pool_config(PoolConfig::default());
}

#[test]
fn a_stored_block_past_the_limit_is_rejected_before_copying() {
    set_thread_pool_config(PoolConfig {
        max_buffers: 0,
        ..PoolConfig::default()
    });
    let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
    push_block(&mut frame, 60_000 | STORED, &incompressible(60_000, 3));
    end(&mut frame);
    let mut out = PooledBuf::take();
    assert_eq!(
        decode_frame_into(&frame, &with_limit(1000), &mut out).unwrap_err(),
        Error::LimitExceeded {
            position: HEADER_LEN,
            at_least: 60_000,
            limit: 1000
        }
    );
    assert_eq!(out.capacity(), 0);
    set_thread_pool_config(PoolConfig::default());
}

#[test]
fn a_frame_of_exactly_the_limit_is_accepted() {
    let data = compressible(100_000);
    let frame = encode_frame(&data, &EncodeOptions::default());
    assert!(decode_frame(&frame, &with_limit(100_000)).unwrap()[..] == data[..]);
    assert!(matches!(
        decode_frame(&frame, &with_limit(99_999)),
        Err(Error::LimitExceeded {
            at_least: 100_000..,
            limit: 99_999,
            ..
        })
    ));
}

#[test]
fn corrupt_block_data() {
    let cases: [(&[u8], &str); 3] = [
        (&[0x10, b'a', 0xFF, 0xFF], "offset beyond the output"),
        (&[0x10, b'a', 0x00, 0x00], "zero offset"),
        (&[0xF0, 0xFF], "literal length running past the block"),
    ];
    for (block, why) in cases {
        let mut frame = header(FLG_INDEPENDENT, BD_64K, None);
        push_block(&mut frame, block.len() as u32, block);
        end(&mut frame);
        match decode(&frame).unwrap_err() {
            Error::CorruptBlock {
                position: HEADER_LEN,
                compressed_size,
                ..
            } => assert_eq!(compressed_size, block.len(), "{why}"),
            other => panic!("{why}: {other:?}"),
        }
    }
}

#[test]
fn trailing_bytes_after_the_end_mark() {
    let mut frame = encode_frame(b"abc", &EncodeOptions::default());
    let end_at = frame.len();
    frame.extend_from_slice(&[0, 0]);
    assert_eq!(
        decode(&frame).unwrap_err(),
        Error::TrailingBytes {
            position: end_at,
            count: 2
        }
    );
    let one = encode_frame(b"abc", &EncodeOptions::default());
    let two_frames = [one.clone(), one.clone()].concat();
    assert_eq!(
        decode(&two_frames).unwrap_err(),
        Error::TrailingBytes {
            position: one.len(),
            count: one.len()
        }
    );
}

#[test]
fn linked_blocks_cannot_reach_bytes_that_were_in_out_before() {
    let prefix = compressible(70_000);
    let data = compressible(1_000);
    // A block compressed against `prefix` as its dictionary refers back before the frame.
    let mut block = vec![0u8; lz4_flex::block::get_maximum_output_size(data.len())];
    let n = lz4_flex::block::compress_into_with_dict(&data, &mut block, &prefix).unwrap();
    block.truncate(n);
    let mut frame = header(FLG_LINKED, BD_64K, None);
    push_block(&mut frame, n as u32, &block);
    end(&mut frame);
    // Sanity: with the prefix as dictionary the block really decodes to `data`.
    let mut check = vec![0u8; data.len()];
    let len = lz4_flex::block::decompress_into_with_dict(&block, &mut check, &prefix).unwrap();
    assert!(check[..len] == data[..]);

    let mut out = PooledBuf::take();
    out.extend_from_slice(&prefix);
    let error = decode_frame_into(&frame, &DecodeOptions::default(), &mut out).unwrap_err();
    assert!(
        matches!(
            error,
            Error::CorruptBlock {
                position: HEADER_LEN,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(out[..] == prefix[..], "out is left as it was");
}

#[test]
fn on_error_out_keeps_its_earlier_content() {
    let good = encode_frame(&compressible(200_000), &EncodeOptions::default());
    let mut bad = encode_frame(&compressible(200_000), &EncodeOptions::default());
    let last = bad.len() - 5;
    bad.truncate(last);
    let mut out = PooledBuf::take();
    decode_frame_into(&good, &DecodeOptions::default(), &mut out).unwrap();
    let before = out.to_vec();
    assert!(decode_frame_into(&bad, &DecodeOptions::default(), &mut out).is_err());
    assert!(out[..] == before[..]);
}
