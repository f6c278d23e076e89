//! gzip (RFC 1952): we read the member header and trailer ourselves and inflate the raw
//! deflate stream with one `flate2::Decompress` per thread.

use std::cell::RefCell;

use flate2::{Decompress, FlushDecompress, Status};

use super::{next_chunk, CodecError};
use crate::buffer::PooledBuf;

const ID: [u8; 2] = [0x1f, 0x8b];
const DEFLATE: u8 = 8;
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const TRAILER_SIZE: usize = 8;

thread_local! {
    static INFLATER: RefCell<Decompress> = RefCell::new(Decompress::new(false));
}

fn corrupt(reason: &str) -> CodecError {
    CodecError::Corrupt(format!("gzip: {reason}"))
}

/// Length of the member header at the start of `data`.
fn header_len(data: &[u8]) -> Result<usize, CodecError> {
    if data.len() < 10 || data[..2] != ID {
        return Err(corrupt("missing gzip magic"));
    }
    if data[2] != DEFLATE {
        return Err(corrupt("compression method is not deflate"));
    }
    let flags = data[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = data
            .get(at..at + 2)
            .ok_or_else(|| corrupt("header cut in FEXTRA"))?;
        at += 2 + u16::from_le_bytes([len[0], len[1]]) as usize;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = data.get(at..).ok_or_else(|| corrupt("header cut"))?;
            let nul = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| corrupt("unterminated header string"))?;
            at += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    if at > data.len() {
        return Err(corrupt("header cut"));
    }
    Ok(at)
}

// Kept out of `codec::decompress`: inlined, its large stack frame (gzip's inflate state
// alone is tens of KiB) made every call probe and touch that stack, LZ4 and small batches too.
#[inline(never)]
pub(super) fn decompress(
    payload: &[u8],
    out: &mut PooledBuf,
    limit: usize,
) -> Result<(), CodecError> {
    fn run(
        inflater: &mut Decompress,
        payload: &[u8],
        out: &mut PooledBuf,
        limit: usize,
    ) -> Result<(), CodecError> {
        if payload.is_empty() {
            return Err(corrupt("empty payload"));
        }
        let mut rest = payload;
        // Concatenated members are valid gzip (and Java's GZIPInputStream reads them).
        while !rest.is_empty() {
            rest = &rest[header_len(rest)?..];
            inflater.reset(false);
            let member_start = out.len();
            let mut hint = rest.len().saturating_mul(4);
            loop {
                let chunk = next_chunk(out.len(), hint, limit);
                if chunk == 0 {
                    return Err(CodecError::TooLarge);
                }
                hint = 0;
                let (in_before, out_before) = (inflater.total_in(), inflater.total_out());
                let window = &mut out.writable(chunk)[..chunk];
                let status = inflater
                    .decompress(rest, window, FlushDecompress::None)
                    .map_err(|e| corrupt(&e.to_string()))?;
                let consumed = (inflater.total_in() - in_before) as usize;
                let produced = (inflater.total_out() - out_before) as usize;
                out.commit(produced);
                rest = &rest[consumed..];
                if out.len() > limit {
                    return Err(CodecError::TooLarge);
                }
                match status {
                    Status::StreamEnd => break,
                    _ if consumed == 0 && produced == 0 && rest.is_empty() => {
                        return Err(corrupt("deflate stream ends early"))
                    }
                    _ if consumed == 0 && produced == 0 && produced < chunk => {
                        return Err(corrupt("deflate stream makes no progress"))
                    }
                    _ => {}
                }
            }
            if rest.len() < TRAILER_SIZE {
                return Err(corrupt("trailer cut"));
            }
            let crc = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
            let size = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
            let member = &out[member_start..];
            if crc32fast::hash(member) != crc || member.len() as u32 != size {
                return Err(corrupt("trailer CRC32 or size does not match the data"));
            }
            rest = &rest[TRAILER_SIZE..];
        }
        Ok(())
    }
    // The per-thread inflater, or a fresh one while the thread is being torn down.
    INFLATER
        .try_with(|inflater| match inflater.try_borrow_mut() {
            Ok(mut inflater) => run(&mut inflater, payload, out, limit),
            Err(_) => run(&mut Decompress::new(false), payload, out, limit),
        })
        .unwrap_or_else(|_| run(&mut Decompress::new(false), payload, out, limit))
}
