//! The fast path for the frame Kafka producers write: version 1, independent blocks, no block
//! or content checksums, no content size, no dictionary id (FLG `0x60`; the Java client and
//! librdkafka both write it).
//!
//! On a one-record batch the general decoder's bookkeeping (optional fields, error values
//! carried through every step) cost about as much as decompressing the block itself. This path
//! makes only the checks that frame needs and reports nothing: any other frame, and any frame
//! with anything wrong, is left to the general decoder, which then decodes it from the start
//! and names the problem. So this path never decides an error, and never accepts a frame the
//! general decoder would reject (the `plain_path_agrees_with_the_general_decoder` tests and
//! the `frame_decode` fuzz target hold it to that).

use super::checksum::TWO_BYTE_DESCRIPTOR_CHECKSUMS;
use super::decode::{decode_independent_block, MAX_EXPANSION};
use super::{BlockSize, DecodeOptions, HeaderChecksum, MAGIC};
use crate::pool::PooledBuf;

/// FLG of the plain frame: version 1, independent blocks, nothing optional.
const PLAIN_FLG: u8 = 0x60;
/// Magic number (4 bytes), FLG, BD and the header checksum byte.
const HEADER_LEN: usize = 7;
const STORED_BLOCK_FLAG: u32 = 1 << 31;

/// Appends the content of a plain frame to `out` and returns its length; `None` if `input` is
/// not a well-formed plain frame within `options`' limit. After `None`, `out` may hold part of
/// the content past its old length: the caller truncates it.
#[inline]
pub(super) fn decode(input: &[u8], options: &DecodeOptions, out: &mut PooledBuf) -> Option<usize> {
    let max_block_size = plain_header(input, options.header_checksum)?;
    decode_blocks(input, max_block_size, options.max_decompressed_size, out)
}

/// Appends the content of one compressed block (`data`) of at most `room` bytes, growing `out`
/// to at most `ceiling` bytes; returns its length.
#[inline(always)]
fn decode_compressed_block(
    data: &[u8],
    max_block_size: usize,
    room: usize,
    ceiling: usize,
    out: &mut PooledBuf,
) -> Option<usize> {
    // The same output bound as the general decoder: a block that would pass it fails in the
    // block decoder rather than growing the buffer.
    let region = max_block_size
        .min(data.len().saturating_mul(MAX_EXPANSION))
        .min(room);
    out.fill_spare(region, ceiling, |spare| {
        decode_independent_block(data, spare)
    })
    .ok()
}

#[inline(always)]
fn decode_blocks(
    input: &[u8],
    max_block_size: usize,
    limit: usize,
    out: &mut PooledBuf,
) -> Option<usize> {
    let start = out.len();
    let ceiling = start.saturating_add(limit);
    // One compressed block and the end mark (what a producer writes for a batch that fits one
    // block): no block loop.
    let raw = read_u32(input, HEADER_LEN)?;
    let size = raw as usize;
    let end = HEADER_LEN + 4 + size;
    if raw & STORED_BLOCK_FLAG == 0 && size != 0 && input.len() == end + 4 {
        if size > max_block_size || read_u32(input, end)? != 0 {
            return None;
        }
        let data = input.get(HEADER_LEN + 4..end)?;
        return decode_compressed_block(data, max_block_size, limit, ceiling, out);
    }
    let mut position = HEADER_LEN;
    loop {
        let raw = read_u32(input, position)?;
        position += 4;
        if raw == 0 {
            break;
        }
        let size = (raw & !STORED_BLOCK_FLAG) as usize;
        if size > max_block_size {
            return None;
        }
        let data = input.get(position..position + size)?;
        position += size;
        let room = limit - (out.len() - start);
        if raw & STORED_BLOCK_FLAG != 0 {
            if size > room {
                return None;
            }
            out.reserve_within(size, ceiling);
            out.extend_from_slice(data);
        } else {
            decode_compressed_block(data, max_block_size, room, ceiling, out)?;
        }
    }
    (position == input.len()).then(|| out.len() - start)
}

/// The content of a plain frame of exactly one stored block within `options`' limit, as a slice
/// of `input`; `None` for any other frame, left to the general reader.
#[inline(always)]
pub(super) fn stored_content<'i>(input: &'i [u8], options: &DecodeOptions) -> Option<&'i [u8]> {
    let max_block_size = plain_header(input, options.header_checksum)?;
    let raw = read_u32(input, HEADER_LEN)?;
    let size = (raw & !STORED_BLOCK_FLAG) as usize;
    let end = HEADER_LEN + 4 + size;
    // One stored block, not empty, within both limits, then the end mark and nothing more.
    let whole = raw & STORED_BLOCK_FLAG != 0
        && size != 0
        && size <= max_block_size
        && size <= options.max_decompressed_size
        && input.len() == end + 4;
    if !whole || read_u32(input, end)? != 0 {
        return None;
    }
    input.get(HEADER_LEN + 4..end)
}

/// The maximum block size, if `input` starts with a plain frame's header whose checksum byte
/// is right (checked as the general decoder would under `checksum`).
#[inline(always)]
fn plain_header(input: &[u8], checksum: HeaderChecksum) -> Option<usize> {
    let header: &[u8; HEADER_LEN] = input.get(..HEADER_LEN)?.try_into().ok()?;
    let [m0, m1, m2, m3, flg, bd, stored] = *header;
    if u32::from_le_bytes([m0, m1, m2, m3]) != MAGIC || flg != PLAIN_FLG || bd & 0x8f != 0 {
        return None;
    }
    let code = bd >> 4;
    let block_size = BlockSize::from_code(code)?;
    // Magic-0 frames (KafkaLegacy) have their own checksum rule: the general decoder's job.
    let accepted = match checksum {
        HeaderChecksum::Standard => {
            stored == TWO_BYTE_DESCRIPTOR_CHECKSUMS[flg as usize][code as usize]
        }
        HeaderChecksum::Ignore => true,
        HeaderChecksum::KafkaLegacy => false,
    };
    accepted.then_some(block_size.bytes())
}

#[inline(always)]
fn read_u32(input: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; 4] = input.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::decode::tests::incompressible;
    use crate::frame::{decode_frame_into_general, encode_frame, EncodeOptions};

    /// Text-like bytes (compress well) followed by noise (stored blocks once a block is all
    /// noise).
    fn content(len: usize, seed: u64) -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..len / 2)
            .map(|i| b"kafka record value, "[i % 20])
            .collect();
        bytes.extend(incompressible(len - len / 2, seed));
        bytes
    }

    fn options(limit: usize, checksum: HeaderChecksum) -> DecodeOptions {
        DecodeOptions {
            max_decompressed_size: limit,
            header_checksum: checksum,
            ..DecodeOptions::default()
        }
    }

    /// The fast path may decline any frame, but whatever it accepts the general decoder must
    /// accept with the same content, and it must never accept what the general one rejects.
    fn assert_agrees(frame: &[u8], options: &DecodeOptions) -> bool {
        let mut fast_out = PooledBuf::take();
        fast_out.extend_from_slice(b"earlier");
        let fast = decode(frame, options, &mut fast_out);
        let mut general_out = PooledBuf::take();
        general_out.extend_from_slice(b"earlier");
        let general = decode_frame_into_general(frame, options, &mut general_out);
        if let Some(n) = fast {
            assert_eq!(general.as_ref().ok(), Some(&n), "{frame:02x?}");
            assert_eq!(&fast_out[..], &general_out[..]);
        }
        // The stored-block reader accepts only what the general decoder accepts, in place.
        if let Some(content) = stored_content(frame, options) {
            assert_eq!(general.as_ref().ok(), Some(&content.len()), "{frame:02x?}");
            assert_eq!(content, &general_out[b"earlier".len()..], "{frame:02x?}");
            assert!(frame.as_ptr_range().contains(&content.as_ptr()));
        }
        fast.is_some()
    }

    #[test]
    fn a_compressed_block_over_the_block_size_is_left_to_the_general_decoder() {
        // 64 KiB of noise fits a 64 KiB block, but compressed it is a little larger: a block
        // no encoder would write, which the general decoder rejects.
        let content = incompressible(64 * 1024, 21);
        let block = lz4_flex::block::compress(&content);
        assert!(block.len() > 64 * 1024);
        let mut frame = encode_frame(&[], &EncodeOptions::default());
        frame.truncate(HEADER_LEN);
        frame.extend((block.len() as u32).to_le_bytes());
        frame.extend(&block);
        frame.extend(0u32.to_le_bytes());
        let options = options(1 << 20, HeaderChecksum::Standard);
        assert!(decode_frame_into_general(&frame, &options, &mut PooledBuf::take()).is_err());
        assert!(!assert_agrees(&frame, &options));
    }

    #[test]
    fn the_plain_header_is_accepted_for_every_block_size_and_no_other_code() {
        for code in 0..8u8 {
            let mut header = MAGIC.to_le_bytes().to_vec();
            header.extend([PLAIN_FLG, code << 4]);
            header.push(super::super::checksum::header_checksum_byte(&header[4..]));
            let expected = BlockSize::from_code(code).map(BlockSize::bytes);
            assert_eq!(plain_header(&header, HeaderChecksum::Standard), expected);
            header[6] ^= 1;
            assert_eq!(plain_header(&header, HeaderChecksum::Standard), None);
            assert_eq!(plain_header(&header, HeaderChecksum::Ignore), expected);
        }
    }

    #[test]
    fn a_frame_of_one_stored_block_is_read_in_place() {
        let data = incompressible(100, 9);
        let frame = encode_frame(&data, &EncodeOptions::default());
        let read = |frame: &[u8], limit| {
            stored_content(frame, &options(limit, HeaderChecksum::Standard)).map(<[u8]>::to_vec)
        };
        assert_eq!(read(&frame, 100), Some(data.clone()));
        // Over the limit, or with anything after the end mark: left to the general reader.
        assert_eq!(read(&frame, 99), None);
        let mut longer = frame.clone();
        longer.push(0);
        assert_eq!(read(&longer, 100), None);
        // A compressed block is never handed out as content.
        let compressed = encode_frame(&[b'a'; 100], &EncodeOptions::default());
        assert_eq!(read(&compressed, 100), None);
    }

    fn plain_frames() -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        for (len, block_size) in [
            (0, BlockSize::Max64KiB),
            (1, BlockSize::Max64KiB),
            (100, BlockSize::Max64KiB),
            (200_000, BlockSize::Max64KiB),
            (300_000, BlockSize::Max256KiB),
        ] {
            let options = EncodeOptions {
                block_size,
                ..EncodeOptions::default()
            };
            frames.push(encode_frame(&content(len, len as u64), &options));
        }
        // One stored block, what a producer writes for a small record that does not compress.
        frames.push(encode_frame(
            &incompressible(100, 5),
            &EncodeOptions::default(),
        ));
        frames
    }

    #[test]
    fn plain_frames_take_the_fast_path_with_the_general_decoders_result() {
        for frame in plain_frames() {
            assert_eq!(frame[4], PLAIN_FLG);
            for checksum in [HeaderChecksum::Standard, HeaderChecksum::Ignore] {
                assert!(assert_agrees(&frame, &options(1 << 20, checksum)));
            }
            // Magic-0 checksums are the general decoder's.
            assert!(!assert_agrees(
                &frame,
                &options(1 << 20, HeaderChecksum::KafkaLegacy)
            ));
        }
    }

    #[test]
    fn plain_path_agrees_with_the_general_decoder_on_damaged_frames() {
        for frame in plain_frames().into_iter().filter(|f| f.len() < 4096) {
            for cut in 0..frame.len() {
                assert!(!assert_agrees(&frame[..cut], &DecodeOptions::default()));
            }
            let mut longer = frame.clone();
            longer.push(0);
            assert!(!assert_agrees(&longer, &DecodeOptions::default()));
            for at in 0..frame.len() {
                for flip in [0x01, 0x10, 0x80, 0xff] {
                    let mut damaged = frame.clone();
                    damaged[at] ^= flip;
                    assert_agrees(&damaged, &DecodeOptions::default());
                }
            }
        }
    }

    #[test]
    fn plain_path_agrees_with_the_general_decoder_at_every_limit() {
        let frames = plain_frames();
        for frame in frames[..4].iter().chain(frames.last()) {
            let full =
                decode_frame_into_general(frame, &DecodeOptions::default(), &mut PooledBuf::take())
                    .unwrap();
            for limit in [0, 1, full / 2, full.saturating_sub(1), full, full + 1] {
                let accepted = assert_agrees(frame, &options(limit, HeaderChecksum::Standard));
                assert_eq!(accepted, limit >= full, "limit {limit} of {full}");
            }
        }
    }

    #[test]
    fn other_descriptors_go_to_the_general_decoder() {
        for options in [
            EncodeOptions {
                block_checksums: true,
                ..EncodeOptions::default()
            },
            EncodeOptions {
                content_checksum: true,
                ..EncodeOptions::default()
            },
            EncodeOptions {
                content_size: true,
                ..EncodeOptions::default()
            },
        ] {
            let frame = encode_frame(&content(1000, 3), &options);
            assert!(!assert_agrees(&frame, &DecodeOptions::default()));
            let mut out = PooledBuf::take();
            crate::decode_frame_into(&frame, &DecodeOptions::default(), &mut out).unwrap();
            assert_eq!(&out[..], &content(1000, 3)[..]);
        }
    }
}
