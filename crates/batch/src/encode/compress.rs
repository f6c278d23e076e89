//! Compression for the encoder, written the way real producers write each codec.

use std::io::Write;

use crate::Compression;

/// How to frame LZ4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lz4Style {
    /// Like the Java client: independent 64 KiB blocks, no checksums, no content size.
    #[default]
    Java,
    /// Like librdkafka (lz4 library defaults): linked blocks, content checksum.
    Librdkafka,
    /// Magic 0's broken header checksum (KAFKA-3160), as legacy producers wrote it.
    LegacyBrokenChecksum,
}

/// How to frame snappy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SnappyStyle {
    /// The xerial framing the Java client writes.
    #[default]
    Xerial,
    /// One raw snappy block.
    Raw,
}

/// How to write zstd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZstdStyle {
    /// One frame with its content size (what one-shot compression writes).
    #[default]
    WithContentSize,
    /// A streamed frame without a content size (what the Java client's stream writes).
    Streamed,
}

/// Compresses `data` with `codec` in the given styles.
pub fn compress(
    codec: Compression,
    data: &[u8],
    lz4: Lz4Style,
    snappy: SnappyStyle,
    zstd_style: ZstdStyle,
) -> Vec<u8> {
    match codec {
        Compression::None => data.to_vec(),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(data).expect("write to Vec");
            enc.finish().expect("finish gzip")
        }
        Compression::Snappy => {
            let raw = |d: &[u8]| snap::raw::Encoder::new().compress_vec(d).expect("snappy");
            match snappy {
                SnappyStyle::Raw => raw(data),
                SnappyStyle::Xerial => {
                    let mut out = vec![0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
                    out.extend_from_slice(&1i32.to_be_bytes());
                    out.extend_from_slice(&1i32.to_be_bytes());
                    // The Java client's xerial stream chunks at 32 KiB.
                    for chunk in data.chunks(32 * 1024) {
                        let c = raw(chunk);
                        out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                        out.extend_from_slice(&c);
                    }
                    out
                }
            }
        }
        Compression::Lz4 => {
            let mut options = krec_lz4::EncodeOptions::default();
            match lz4 {
                Lz4Style::Java => krec_lz4::encode_frame(data, &options),
                Lz4Style::Librdkafka => {
                    options.content_checksum = true;
                    krec_lz4::encode_frame_with_mode(data, &options, krec_lz4::BlockMode::Linked)
                }
                Lz4Style::LegacyBrokenChecksum => {
                    let mut frame = krec_lz4::encode_frame(data, &options);
                    // HC is the second byte of xxHash32 over magic + FLG + BD (7th byte).
                    frame[6] = legacy_hc(&frame[..6]);
                    frame
                }
            }
        }
        Compression::Zstd => match zstd_style {
            ZstdStyle::WithContentSize => zstd::bulk::compress(data, 1).expect("zstd"),
            ZstdStyle::Streamed => {
                let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).expect("zstd");
                enc.include_contentsize(false).expect("zstd param");
                enc.write_all(data).expect("zstd write");
                enc.finish().expect("zstd finish")
            }
        },
    }
}

/// xxHash32 (seed 0) of `data`, second byte: the header checksum legacy Kafka computed.
fn legacy_hc(data: &[u8]) -> u8 {
    (xxh32(data) >> 8) as u8
}

/// xxHash32 with seed 0 for short inputs (< 16 bytes), enough for a frame header.
fn xxh32(data: &[u8]) -> u32 {
    const P1: u32 = 2654435761;
    const P2: u32 = 2246822519;
    const P3: u32 = 3266489917;
    const P4: u32 = 668265263;
    const P5: u32 = 374761393;
    assert!(data.len() < 16, "short-input xxh32 only");
    let mut h = P5.wrapping_add(data.len() as u32);
    let mut rest = data;
    while rest.len() >= 4 {
        let v = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        h = h
            .wrapping_add(v.wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
        rest = &rest[4..];
    }
    for &b in rest {
        h = h
            .wrapping_add((b as u32).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^= h >> 16;
    h
}
