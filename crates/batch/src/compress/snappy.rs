//! Snappy in the xerial framing the Java client writes (`SnappyOutputStream`): a 16-byte
//! header, then each 32 KiB of input as one raw block after its big-endian length.

use std::cell::RefCell;

use snap::raw::{max_compress_len, Encoder};

use crate::buffer::PooledBuf;
use crate::{Compression, Error};

/// `\x82SNAPPY\0`, version 1, compatible version 1 (big-endian `i32`s).
const XERIAL_HEADER: [u8; 16] = [
    0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
];
/// The input each block holds (xerial's default block size, which the Java client keeps).
const CHUNK: usize = 32 << 10;

thread_local! {
    // The encoder keeps its hash table between blocks.
    static ENCODER: RefCell<Encoder> = RefCell::new(Encoder::new());
}

/// Appends `input` in xerial framing to `out`.
pub(super) fn compress(input: &[u8], out: &mut PooledBuf) -> Result<(), Error> {
    out.extend_from_slice(&XERIAL_HEADER);
    let run = |encoder: &mut Encoder, out: &mut PooledBuf| {
        for chunk in input.chunks(CHUNK) {
            let region = out.writable(4 + max_compress_len(chunk.len()));
            let written = encoder.compress(chunk, &mut region[4..]).map_err(|_| {
                Error::CompressionFailed {
                    codec: Compression::Snappy,
                    reason: "snappy refused a block",
                }
            })?;
            region[..4].copy_from_slice(&(written as u32).to_be_bytes());
            out.commit(4 + written);
        }
        Ok(())
    };
    let kept = ENCODER.try_with(|encoder| match encoder.try_borrow_mut() {
        Ok(mut encoder) => Some(run(&mut encoder, out)),
        Err(_) => None,
    });
    match kept {
        Ok(Some(done)) => done,
        _ => run(&mut Encoder::new(), out),
    }
}
