//! The floor of a decode: what any decoder must do for one RecordBatch v2, with no output
//! structure and every buffer reused: CRC32C of the batch (by `crc-fast`, the fastest library
//! CRC32C on large inputs), raw block decompression
//! (`lz4_flex::block::decompress_into` per block of a Java-style LZ4 frame, or one-shot
//! `ZSTD_decompressDCtx`), and a bare walk that reads every record's fields and looks up two
//! headers. No checks beyond what indexing does: a malformed batch panics here.
//!
//! Included by `crates/batch/benches/decode.rs` and by the root crate's
//! `benches/decode_vs_java.rs` (with `#[path]`), so both compare with the same floor.

use std::cell::RefCell;

/// The two header keys every benchmark looks up.
pub const LOOKUP_A: &[u8] = b"trace-id";
/// See [`LOOKUP_A`].
pub const LOOKUP_B: &[u8] = b"content-type";

thread_local! {
    static OUT: RefCell<Vec<u8>> = RefCell::new(vec![0; 1 << 20]);
    static ZSTD: RefCell<zstd::zstd_safe::DCtx<'static>> = RefCell::new(zstd::zstd_safe::DCtx::create());
}

fn varint(b: &[u8], p: &mut usize) -> i64 {
    // One-byte varints (most fields of a small record) without the loop, as a tuned decoder
    // reads them.
    let first = b[*p];
    if first < 0x80 {
        *p += 1;
        return ((first >> 1) as i64) ^ -((first & 1) as i64);
    }
    let mut v: u64 = 0;
    let mut shift = 0;
    loop {
        let byte = b[*p];
        *p += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return ((v >> 1) as i64) ^ -((v & 1) as i64);
        }
        shift += 7;
    }
}

fn bytes<'a>(b: &'a [u8], p: &mut usize) -> Option<&'a [u8]> {
    // A one-byte length that is not negative, in one test (krec reads short keys and headers
    // the same way; a floor that did not would let krec beat it).
    let first = b[*p];
    if first & 0x81 == 0 {
        let len = (first >> 1) as usize;
        let s = &b[*p + 1..*p + 1 + len];
        *p += 1 + len;
        return Some(s);
    }
    let len = varint(b, p);
    if len < 0 {
        return None;
    }
    let s = &b[*p..*p + len as usize];
    *p += len as usize;
    Some(s)
}

fn walk(records: &[u8], count: usize) -> usize {
    let mut sum = 0;
    let mut p = 0;
    for _ in 0..count {
        let _len = varint(records, &mut p);
        p += 1;
        sum += varint(records, &mut p) as usize;
        sum += varint(records, &mut p) as usize;
        sum += bytes(records, &mut p).map_or(0, <[u8]>::len);
        sum += bytes(records, &mut p).map_or(0, <[u8]>::len);
        let headers = varint(records, &mut p);
        let (mut a, mut b) = (None, None);
        for _ in 0..headers {
            let k = bytes(records, &mut p).unwrap_or_default();
            let v = bytes(records, &mut p);
            if a.is_none() && k == LOOKUP_A {
                a = Some(v);
            } else if b.is_none() && k == LOOKUP_B {
                b = Some(v);
            }
        }
        sum += a.flatten().map_or(0, <[u8]>::len) + b.flatten().map_or(0, <[u8]>::len);
    }
    sum
}

pub fn decode(batch: &[u8]) -> usize {
    let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &batch[21..]) as u32;
    assert_eq!(crc, u32::from_be_bytes(batch[17..21].try_into().unwrap()));
    let codec = batch[22] & 7;
    let count = i32::from_be_bytes(batch[57..61].try_into().unwrap()) as usize;
    let payload = &batch[61..];
    match codec {
        0 => walk(payload, count),
        3 => OUT.with(|out| {
            let mut out = out.borrow_mut();
            // Java-style frame: 7-byte header (no content size), blocks, zero end mark.
            let mut p = 7;
            let mut len = 0;
            loop {
                let size = u32::from_le_bytes(payload[p..p + 4].try_into().unwrap());
                p += 4;
                if size == 0 {
                    break;
                }
                let n = (size & 0x7fff_ffff) as usize;
                if size & 0x8000_0000 != 0 {
                    out[len..len + n].copy_from_slice(&payload[p..p + n]);
                    len += n;
                } else {
                    len += lz4_flex::block::decompress_into(&payload[p..p + n], &mut out[len..])
                        .unwrap();
                }
                p += n;
            }
            walk(&out[..len], count)
        }),
        4 => OUT.with(|out| {
            let mut out = out.borrow_mut();
            let len = ZSTD
                .with(|z| z.borrow_mut().decompress(&mut out[..], payload))
                .unwrap();
            walk(&out[..len], count)
        }),
        _ => unreachable!("floor covers none, lz4, zstd"),
    }
}
