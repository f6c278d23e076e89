//! krec-batch turns the bytes of a Kafka fetch response (a partition's `records` field) or of
//! a Kafka log segment file into records, checking every byte.
//!
//! ```text
//! BatchWalk ──> Batch ──> Records ──> Record ──> Headers (indexed in the pass that checks them)
//!                     └─> ControlRecords ──> ControlRecord
//! ```
//!
//! * [`BatchWalk`] walks concatenated RecordBatch v2 batches and legacy v0/v1 messages. A
//!   batch cut off at the end of the input ends the walk cleanly ([`WalkEnd::Partial`]).
//! * [`Batch`] reads the batch header in place, checks the CRC and decompresses (gzip,
//!   snappy, lz4, zstd) into a per-thread pooled buffer, bounded by [`DecodeConfig`].
//! * [`Record`] is a borrowed view; the record iterator checks every record uses exactly its
//!   declared bytes and that the batch holds exactly its declared count. That same pass
//!   writes every header's key and value span into an inline index in the record (16
//!   headers, no heap), so [`Headers::get`] never re-scans the record.
//! * Legacy v0/v1 message sets (per-message CRC32, compressed wrappers, relative v1 inner
//!   offsets, magic-0 LZ4 header checksums) come out of the same walk as one [`Batch`] per
//!   top-level message.
//!
//! ```
//! use krec_batch::{BatchWalk, DecodeConfig, WalkEnd};
//! # let input: Vec<u8> = Vec::new();
//! let config = DecodeConfig::default();
//! let mut walk = BatchWalk::new(&input, &config);
//! for batch in walk.by_ref() {
//!     let batch = batch?;
//!     for record in batch.records() {
//!         let record = record?;
//!         let _trace = record.headers().get(b"trace-id");
//!     }
//! }
//! if let Some(WalkEnd::Partial { base_offset, .. }) = walk.end() {
//!     // A fetch response cut a batch: fetch again from `base_offset`.
//!     let _ = base_offset;
//! }
//! # Ok::<(), krec_batch::Error>(())
//! ```
//!
//! Steady-state decoding allocates nothing per batch: buffers are pooled, decompressor state
//! lives in thread locals and the header index is inline.
#![deny(missing_docs)]
// Unsafe code only in `crc` (the SSE4.2 call after runtime detection), each block proved.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod batch;
mod batch_header;
mod buffer;
mod codec;
mod config;
mod control;
#[allow(unsafe_code)]
mod crc;
mod error;
mod headers;
mod index;
pub mod layout;
mod legacy;
mod record;
mod v2;
mod varint;
mod walk;

#[cfg(feature = "encode")]
pub mod encode;

pub use batch::Batch;
pub use batch_header::{Compression, TimestampType};
pub use buffer::DecompressionBuffer;
pub use config::DecodeConfig;
pub use control::{ControlKind, ControlRecord, ControlRecords};
pub use error::{Error, Field};
pub use headers::{Header, Headers};
pub use layout::EntryHeader;
pub use record::{Record, Records};
pub use walk::{BatchWalk, WalkEnd};
