//! gzip: one member, as the Java client's `GZIPOutputStream` writes it: a 10-byte header,
//! the raw deflate stream from one `flate2::Compress` per thread, then CRC32 and size.

use std::cell::RefCell;

use flate2::{Compress, FlushCompress, Status};

use crate::buffer::PooledBuf;
use crate::{Compression, Error};

/// ID1 ID2, deflate, no flags, no modification time, no extra flags, OS unknown.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// zlib's default, what level -1 means.
const DEFAULT_LEVEL: u32 = 6;

thread_local! {
    // The deflater and its level: a deflater is made for one level (flate2's Rust backend
    // cannot change it), so a new level makes a new one.
    static DEFLATER: RefCell<Option<(u32, Compress)>> = const { RefCell::new(None) };
}

fn failed(reason: &'static str) -> Error {
    Error::CompressionFailed {
        codec: Compression::Gzip,
        reason,
    }
}

/// Appends `input` as one gzip member at `level` (1 to 9, or -1 for the default) to `out`.
pub(super) fn compress(input: &[u8], level: i32, out: &mut PooledBuf) -> Result<(), Error> {
    let level = u32::try_from(level).unwrap_or(DEFAULT_LEVEL);
    out.extend_from_slice(&HEADER);
    let kept = DEFLATER.try_with(|kept| {
        let Ok(mut kept) = kept.try_borrow_mut() else {
            return deflate(&mut new_deflater(level), input, out);
        };
        match &mut *kept {
            Some((kept_level, deflater)) if *kept_level == level => deflate(deflater, input, out),
            _ => {
                let (_, deflater) = kept.insert((level, new_deflater(level)));
                deflate(deflater, input, out)
            }
        }
    });
    match kept {
        Ok(done) => done?,
        Err(_) => deflate(&mut new_deflater(level), input, out)?,
    }
    out.extend_from_slice(&crc32fast::hash(input).to_le_bytes());
    // ISIZE: the size modulo 2^32, as RFC 1952 defines it.
    out.extend_from_slice(&(input.len() as u32).to_le_bytes());
    Ok(())
}

fn new_deflater(level: u32) -> Compress {
    Compress::new(flate2::Compression::new(level), false)
}

/// Appends the raw deflate stream of `input` to `out`.
fn deflate(deflater: &mut Compress, input: &[u8], out: &mut PooledBuf) -> Result<(), Error> {
    deflater.reset();
    let mut rest = input;
    // Enough for the whole stream in one call on any input (stored blocks cost 5 bytes per
    // 64 KiB); the loop is for a deflater that asks for more anyway.
    let mut room = input.len() + input.len() / 64 + 64;
    loop {
        let (in_before, out_before) = (deflater.total_in(), deflater.total_out());
        let region = out.writable(room);
        let status = deflater
            .compress(rest, region, FlushCompress::Finish)
            .map_err(|_| failed("deflate reported an error"))?;
        let consumed = (deflater.total_in() - in_before) as usize;
        let produced = (deflater.total_out() - out_before) as usize;
        out.commit(produced);
        rest = &rest[consumed..];
        match status {
            Status::StreamEnd => return Ok(()),
            _ if consumed == 0 && produced == 0 => return Err(failed("deflate made no progress")),
            _ => room = room.max(64 << 10),
        }
    }
}
