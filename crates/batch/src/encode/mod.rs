//! Test-side encoder (feature `encode`): builds RecordBatch v2 batches and legacy v0/v1
//! message sets byte by byte, so tests and benches in any crate can make exact inputs,
//! including ones real producers rarely write (offset gaps, empty batches, control batches).
//!
//! This is for tests: it panics on impossible requests (like a legacy zstd wrapper) rather
//! than returning errors. Production code writes batches with
//! [`BatchWriter`](crate::BatchWriter), which writes the same bytes where both can.

mod compress;
mod legacy;
mod v2;

pub use compress::{compress, Lz4Style, SnappyStyle, ZstdStyle};
pub use legacy::{encode_message, LegacyBuilder, LegacyMessage};
pub use v2::{BatchBuilder, RecordSpec};

/// Appends a zigzag varint.
pub fn put_varint(out: &mut Vec<u8>, v: i32) {
    put_varlong(out, v as i64)
}

/// Appends a zigzag varlong.
pub fn put_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}
