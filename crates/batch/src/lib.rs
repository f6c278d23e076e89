//! krec-batch turns the bytes of a Kafka fetch response (a partition's `records` field) or of
//! a Kafka log segment file into records, checking every byte: RecordBatch v2 and legacy
//! v0/v1 message sets, CRC32C/CRC32, the four codecs, and every record's fields and headers,
//! with no heap allocation per batch once warm. It also writes RecordBatch v2 batches, as a
//! producer does ([`BatchWriter`]), and re-stamps a fetched batch's producer fields for a
//! shallow copy ([`restamp`]), again with no allocation per batch once warm.
//!
//! ```text
//! BatchWalk ──> Batch ──> Records ──> Record ──> Headers (indexed in the pass that checks them)
//!                     └─> ControlRecords ──> ControlRecord
//! ```
//!
//! * [`BatchWalk`] walks concatenated RecordBatch v2 batches and legacy v0/v1 messages. A
//!   batch cut off at the end of the input ends the walk cleanly ([`WalkEnd::Partial`]).
//! * [`Batch`] reads the batch header in place, checks the CRC and decompresses (gzip,
//!   snappy, lz4, zstd) into a buffer from the per-thread buffer pool, bounded by [`DecodeConfig`].
//! * [`Record`] is a borrowed view; the record iterator checks every record uses exactly its
//!   declared bytes and that the batch holds exactly its declared count. That same pass
//!   writes every header's key and value span into an index inline in the record (a few
//!   headers, no heap), so [`Headers::get`] never re-scans the record.
//! * Legacy v0/v1 message sets (per-message CRC32, compressed wrappers, relative v1 inner
//!   offsets, magic-0 LZ4 header checksums) come out of the same walk as one [`Batch`] per
//!   top-level message.
//! * [`EntryHeader`] peeks at the entry header every batch and message starts with, for code
//!   that only needs to know where entries end; [`layout`] names every field's position.
//! * [`BatchWriter`] writes one partition's batch in one pass: records in wire form straight
//!   into a pooled buffer until [`WriteConfig::batch_size`], then (on
//!   [`finish`](BatchWriter::finish)) the records compressed into a second pooled buffer with
//!   the [`Codec`] and level asked for (gzip, snappy in xerial framing, LZ4 in the Java
//!   client's frame, zstd), the header written with the [`ProducerFields`] and the CRC32C
//!   computed once. [`restamp`] and [`restamped_header`] give a fetched batch a new base
//!   offset and producer fields, updating the CRC without reading the records.
//! * For a copy (a mirror), [`BatchSummary::copy_shape`] says from a batch's header alone
//!   whether a broker would take it as it is from a producer ([`CopyShape`]); [`reencode`]
//!   writes the records of one it would not (legacy, LogAppendTime, offset gaps a cleaner
//!   left, entered mid-batch: [`ReencodeReason`]) as v2 batches with offset deltas 0..n-1,
//!   CreateTime and the source's codec, each within the target's `max.message.bytes`
//!   ([`ReencodedBatch`]).
//!
//! # Layout
//!
//! Modules use only those before them in this list; the crate root only re-exports.
//!
//! 1. Leaves: `layout` (the wire layout and the entry-header peek), `varint`, `crc`, `codec`
//!    and `buffer` (decompression into krec-lz4's per-thread buffer pool), `compress`
//!    (compression into that pool, and [`Codec`]), `config`, `error`, and the plain data
//!    parsing yields and writing reads: `batch_header` (a batch's header fields), `index`
//!    (the header spans a record's check writes), `producer_fields` ([`ProducerFields`]) and
//!    `record_wire` (a record's wire form, for the writer).
//! 2. Parsers: `v2` (a batch header into a `BatchHeader`, records into raw fields and the
//!    header index) and `legacy` (messages and compressed wrappers into a `BatchHeader` and
//!    plain records).
//! 3. Views, filled from what the parsers yield: `headers` ([`Headers`]), `record`
//!    ([`Record`], [`Records`]), `control` ([`ControlRecords`]), then `batch` ([`Batch`]:
//!    the header, and the records' bytes, decompressed if need be).
//! 4. `corrupt` ([`OnCorrupt`]): the stop-or-skip decision for a batch that fails its checks.
//! 5. `walk` ([`BatchWalk`]): splits the input into entries and fills one batch per entry;
//!    [`BatchWalk::skip_failed`] steps over a failed one.
//! 6. Writing, beside the reading side: `writer` ([`BatchWriter`]) and `restamp`
//!    ([`restamp`], [`restamped_header`]); then `reencode` ([`reencode`],
//!    [`BatchSummary::copy_shape`]), which walks batches and writes them again.
//!
//! # Example
//!
//! ```
//! use krec_batch::encode::BatchBuilder;
//! use krec_batch::{BatchWalk, DecodeConfig, WalkEnd};
//!
//! let mut input = BatchBuilder::new(100)
//!     .record(Some(b"k"), Some(b"v"), &[(b"trace-id", Some(b"abc"))])
//!     .build();
//! input.extend_from_slice(&input.clone()[..20]); // a second batch, cut short
//! let config = DecodeConfig::default();
//! let mut walk = BatchWalk::new(&input, &config);
//! for batch in walk.by_ref() {
//!     let batch = batch?;
//!     for record in batch.records() {
//!         let record = record?;
//!         assert_eq!(record.offset(), 100);
//!         assert_eq!(record.headers().get(b"trace-id").unwrap().value, Some(&b"abc"[..]));
//!     }
//! }
//! // A fetch response cut the second batch: fetch again from its base offset.
//! assert!(matches!(
//!     walk.end(),
//!     Some(WalkEnd::Partial { base_offset: Some(100), .. })
//! ));
//! # Ok::<(), krec_batch::Error>(())
//! ```
//!
//! Writing a batch and reading it back:
//!
//! ```
//! use krec_batch::{Append, BatchWalk, BatchWriter, Codec, Compression, DecodeConfig};
//! use krec_batch::{ProducerFields, WriteConfig};
//!
//! let mut writer = BatchWriter::new(WriteConfig::default()); // batch.size 16 KiB
//! let headers = [("trace", Some(b"1"))];
//! let appended = writer.try_append(1_764_000_000_000, Some(b"k"), Some(b"v"), &headers)?;
//! assert_eq!(appended, Append::Appended { offset_delta: 0 });
//! writer.try_append(1_764_000_000_005, None, None, krec_batch::NO_HEADERS)?; // a tombstone
//! let producer = ProducerFields::idempotent(42, 0, 0); // id, epoch, base sequence
//! let batch = writer.finish(producer, Codec::new(Compression::Lz4))?;
//!
//! let config = DecodeConfig::default();
//! let read = BatchWalk::new(batch, &config).next().unwrap()?;
//! assert_eq!(read.compression(), Compression::Lz4);
//! assert_eq!((read.producer_id(), read.record_count()), (42, 2));
//! let second = read.records().nth(1).unwrap()?;
//! assert_eq!((second.offset(), second.key(), second.value()), (1, None, None));
//! writer.reset(); // the next batch, in the same buffers
//! # Ok::<(), krec_batch::Error>(())
//! ```
//!
//! # Public surface
//!
//! - Walking and decoding: [`BatchWalk`] ([`WalkEnd`], [`BatchSummary`]), [`Batch`]
//!   ([`Compression`], [`TimestampType`]), [`DecodeConfig`], [`OnCorrupt`] ([`Skipped`],
//!   [`BatchSpan`]).
//! - Records: [`Record`], [`Records`], [`Header`], [`Headers`]; control records:
//!   [`ControlRecord`], [`ControlRecords`], [`ControlKind`].
//! - Writing: [`BatchWriter`] ([`Append`], [`NO_HEADERS`]), [`WriteConfig`], [`Codec`],
//!   [`ProducerFields`], [`PooledBuf`] (an owned finished batch); the shallow copy's seam:
//!   [`restamp`], [`restamped_header`]; a copy's decision and re-encoding:
//!   [`BatchSummary::copy_shape`] ([`CopyShape`], [`ReencodeReason`]), [`reencode`]
//!   ([`ReencodedBatch`]), [`reencode_range`] (up to an offset).
//! - Errors: [`Error`] ([`Field`], [`LegacyFault`]), the writer's too.
//! - [`layout`]: the batch header's byte offsets ([`EntryHeader`]), for header-only scans.
//! - `encode` (feature `encode`): the test-side encoder tests and benchmarks build exact
//!   (also malformed) batches with; production code writes with [`BatchWriter`].
//!
//! Internal: the codecs, CRC, varints, the header index, the record wire form and the legacy
//! message-set reader.
//!
//! Steady-state decoding and writing allocate nothing per batch: buffers are pooled,
//! compressor and decompressor state lives in thread locals and the header index is inline.
//!
//! How this crate fits into krec (the crates, the hot path, the invariants):
//! `docs/ARCHITECTURE.md` in the repository.
#![deny(missing_docs)]
// Unsafe code only in `crc` (the SSE4.2 call after runtime detection), each block proved.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod batch;
mod batch_header;
mod buffer;
mod codec;
mod compress;
mod config;
mod control;
mod corrupt;
#[allow(unsafe_code)]
mod crc;
mod error;
mod headers;
mod index;
pub mod layout;
mod legacy;
mod producer_fields;
mod record;
mod record_wire;
mod reencode;
mod restamp;
mod v2;
mod varint;
mod walk;
mod writer;

#[cfg(feature = "encode")]
pub mod encode;

pub use batch::Batch;
pub use batch_header::{Compression, TimestampType};
pub use compress::Codec;
pub use config::{DecodeConfig, WriteConfig};
pub use control::{ControlKind, ControlRecord, ControlRecords};
pub use corrupt::{BatchSpan, OnCorrupt, Skipped};
pub use error::{Error, Field, LegacyFault};
pub use headers::{Header, Headers};
pub use krec_lz4::PooledBuf;
pub use layout::EntryHeader;
pub use producer_fields::ProducerFields;
pub use record::{Record, Records};
pub use reencode::{reencode, reencode_range, CopyShape, ReencodeReason, ReencodedBatch};
pub use restamp::{restamp, restamped_header};
pub use walk::{BatchSummary, BatchWalk, WalkEnd};
pub use writer::{Append, BatchWriter, NO_HEADERS};
