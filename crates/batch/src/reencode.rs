//! A copy's two decisions for a batch the target broker would refuse as it is: whether it can
//! go as it is, read from its header alone ([`BatchSummary::copy_shape`]), and, when not, its
//! records written as new RecordBatch v2 batches that a broker accepts from a producer
//! ([`reencode`]): offset deltas 0..n-1, CreateTime, the source's codec, within the target's
//! size limit. Decided before sending, never by trial: inside an idempotent or transactional
//! stream one refused batch fails every batch after it.

use std::cell::RefCell;
use std::ops::Range;

use crate::batch::Batch;
use crate::batch_header::{Compression, TimestampType};
use crate::buffer::PooledBuf;
use crate::layout::{magic, v2};
use crate::walk::{BatchSummary, BatchWalk};
use crate::writer::{Append, BatchWriter};
use crate::{Codec, DecodeConfig, Error, ProducerFields, Record, WriteConfig};

/// How a copy sends a batch on ([`BatchSummary::copy_shape`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CopyShape {
    /// As it is: its records' bytes untouched, the producer's fields re-stamped
    /// ([`restamp`](crate::restamp)).
    Forward,
    /// Re-encoded ([`reencode`]): the target would refuse it as it is, or it holds records
    /// before the copy's first offset.
    Reencode(ReencodeReason),
    /// Not at all: a control batch (the broker writes those), a batch with no records left
    /// (the log cleaner leaves these), or one wholly before the copy's first offset.
    Skip,
}

/// Why a batch cannot go as it is; the first that applies, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReencodeReason {
    /// A legacy v0/v1 message set: producers send RecordBatch v2.
    LegacyFormat,
    /// Stamped LogAppendTime, a flag a broker refuses from a producer.
    LogAppendTime,
    /// Compaction removed records: the count is below what the offsets span, and a broker
    /// refuses a produced batch whose count is not its last offset delta + 1.
    OffsetGaps,
    /// It starts before the copy's first offset (a fetch inside a batch gets the whole
    /// batch), and the records before that offset are not the copy's.
    StartsBeforeFrom,
}

impl BatchSummary {
    /// How a copy that starts at `from_offset` sends this batch on, decided from the header
    /// alone: no record is read.
    ///
    /// ```
    /// use krec_batch::encode::{BatchBuilder, RecordSpec};
    /// use krec_batch::{BatchWalk, CopyShape, DecodeConfig, ReencodeReason};
    ///
    /// let compacted = BatchBuilder::new(10)
    ///     .record_spec(RecordSpec { offset_delta: 0, ..RecordSpec::default() })
    ///     .record_spec(RecordSpec { offset_delta: 2, ..RecordSpec::default() })
    ///     .build();
    /// let config = DecodeConfig::default();
    /// let summary = BatchWalk::new(&compacted, &config).next_summary().unwrap()?;
    /// let gaps = CopyShape::Reencode(ReencodeReason::OffsetGaps);
    /// assert_eq!(summary.copy_shape(10), gaps);
    /// assert_eq!(summary.copy_shape(13), CopyShape::Skip); // wholly before offset 13
    /// # Ok::<(), krec_batch::Error>(())
    /// ```
    pub fn copy_shape(&self, from_offset: i64) -> CopyShape {
        if self.control || self.record_count == 0 || self.last_offset < from_offset {
            return CopyShape::Skip;
        }
        let reason = if self.magic != magic::V2 {
            ReencodeReason::LegacyFormat
        } else if self.timestamp_type == TimestampType::LogAppendTime {
            ReencodeReason::LogAppendTime
        } else if i64::from(self.record_count) != self.last_offset - self.base_offset + 1 {
            ReencodeReason::OffsetGaps
        } else if self.base_offset < from_offset {
            ReencodeReason::StartsBeforeFrom
        } else {
            return CopyShape::Forward;
        };
        CopyShape::Reencode(reason)
    }
}

/// One batch [`reencode`] wrote.
#[derive(Debug)]
pub struct ReencodedBatch {
    /// The finished RecordBatch v2, in a buffer from the per-thread pool: base offset 0, no
    /// producer id, CreateTime, the CRC32C set; re-stamp it as a fetched batch.
    pub batch: PooledBuf,
    /// Offset in the source of its first record.
    pub first_offset: i64,
    /// Offset in the source of its last record.
    pub last_offset: i64,
    /// Records in it, at offset deltas `0..record_count`.
    pub record_count: u32,
}

/// Re-encodes the records at or after `from_offset` of `batches` (one or more whole batches,
/// v2 or legacy v0/v1, any codec) as new RecordBatch v2 batches, handed to `each` in order:
/// offset deltas 0..n-1 (count = last offset delta + 1), the source batch's codec (legacy
/// codecs are the same ones), keys, values and headers as they were, and each record's
/// timestamp as CreateTime: for a LogAppendTime batch the time its broker assigned, never the
/// LogAppendTime flag. Records of two source batches never share a batch.
///
/// Each batch is at most `max_batch_bytes` as sent (compressed; the target topic's
/// `max.message.bytes`): one that would pass it is cut into several. A record that passes
/// it alone is [`Error::RecordOverBatchLimit`], naming its offset. The input is decoded
/// within `decode`'s limits, its checksums checked whatever `decode` says: a copy never
/// writes what it could not check. Control batches are left out. A batch with no record at
/// or after `from_offset` yields nothing. An error (of the input, of the limit or of `each`)
/// stops the re-encoding; the batches handed out before it stay handed out.
///
/// ```
/// use krec_batch::encode::{BatchBuilder, RecordSpec};
/// use krec_batch::{reencode, BatchWalk, Compression, DecodeConfig};
///
/// let record = |offset_delta, value: &[u8]| RecordSpec {
///     offset_delta,
///     value: Some(value.to_vec()),
///     ..RecordSpec::default()
/// };
/// let compacted = BatchBuilder::new(100)
///     .compression(Compression::Zstd)
///     .record_spec(record(0, b"a"))
///     .record_spec(record(3, b"b"))
///     .build();
/// let config = DecodeConfig::default();
/// let mut written = Vec::new();
/// reencode(&compacted, 0, 1 << 20, &config, |batch| {
///     assert_eq!((batch.first_offset, batch.last_offset, batch.record_count), (100, 103, 2));
///     written.extend_from_slice(&batch.batch);
///     Ok::<_, krec_batch::Error>(())
/// })?;
/// let read = BatchWalk::new(&written, &config).next().unwrap()?;
/// assert_eq!((read.last_offset(), read.compression()), (1, Compression::Zstd));
/// let values: Vec<_> = read.records().map(|r| r.unwrap().value().unwrap().to_vec()).collect();
/// assert_eq!(values, [b"a", b"b"]);
/// # Ok::<(), krec_batch::Error>(())
/// ```
pub fn reencode<E: From<Error>>(
    batches: &[u8],
    from_offset: i64,
    max_batch_bytes: usize,
    decode: &DecodeConfig,
    each: impl FnMut(ReencodedBatch) -> Result<(), E>,
) -> Result<(), E> {
    let offsets = from_offset..i64::MAX;
    reencode_range(batches, offsets, max_batch_bytes, decode, each)
}

/// [`reencode`] of the records at offsets `offsets` only: those at or after `offsets.end`
/// are left out too (a restore that stops at a time cuts the batch holding it there).
///
/// ```
/// use krec_batch::encode::BatchBuilder;
/// use krec_batch::{reencode_range, DecodeConfig};
///
/// let mut builder = BatchBuilder::new(10);
/// for value in [b"a", b"b", b"c", b"d"] {
///     builder = builder.record(None, Some(value), &[]);
/// }
/// let mut kept = Vec::new();
/// reencode_range(&builder.build(), 11..13, 1 << 20, &DecodeConfig::default(), |batch| {
///     kept.push((batch.first_offset, batch.last_offset, batch.record_count));
///     Ok::<_, krec_batch::Error>(())
/// })?;
/// assert_eq!(kept, [(11, 12, 2)]);
/// # Ok::<(), krec_batch::Error>(())
/// ```
pub fn reencode_range<E: From<Error>>(
    batches: &[u8],
    offsets: Range<i64>,
    max_batch_bytes: usize,
    decode: &DecodeConfig,
    each: impl FnMut(ReencodedBatch) -> Result<(), E>,
) -> Result<(), E> {
    let config = DecodeConfig {
        verify_crc: true,
        ..decode.clone()
    };
    let mut writer = WRITER
        .try_with(|kept| kept.take())
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            BatchWriter::new(WriteConfig {
                batch_size: max_batch_bytes,
                max_record_size: usize::MAX,
            })
        });
    let result = reencode_with(
        &mut writer,
        batches,
        offsets,
        max_batch_bytes,
        &config,
        each,
    );
    writer.reset();
    // Back for the next call, unless a re-encode inside `each` put its own back first.
    let _ = WRITER.try_with(|kept| {
        if let Ok(mut kept) = kept.try_borrow_mut() {
            kept.get_or_insert(writer);
        }
    });
    result
}

thread_local! {
    /// The writer [`reencode`] uses on this thread, kept between calls: a writer made per call
    /// would take its buffers from the pool in another order each time and grow them again.
    /// Out of it while in use, so a re-encode inside the callback makes one of its own.
    static WRITER: RefCell<Option<BatchWriter>> = const { RefCell::new(None) };
}

/// [`reencode`] with `writer`, its checksum check on in `config`.
fn reencode_with<E: From<Error>>(
    writer: &mut BatchWriter,
    batches: &[u8],
    offsets: Range<i64>,
    max_batch_bytes: usize,
    config: &DecodeConfig,
    mut each: impl FnMut(ReencodedBatch) -> Result<(), E>,
) -> Result<(), E> {
    let mut walk = BatchWalk::new(batches, config);
    while let Some(batch) = walk.next_ref() {
        let batch = batch?;
        if !batch.is_control() {
            let copy = Split {
                batch,
                from_offset: offsets.start,
                until_offset: offsets.end,
                max_batch_bytes,
                budget: uncompressed_budget(batch, max_batch_bytes, config),
            };
            copy.run(writer, &mut each)?;
        }
    }
    walk.end_of_file()?;
    Ok(())
}

/// One source batch's records cut into batches within the target's limit.
struct Split<'s, 'a> {
    batch: &'s Batch<'a>,
    from_offset: i64,
    /// Records at or after it are left out.
    until_offset: i64,
    max_batch_bytes: usize,
    /// Bytes of records (uncompressed, header included) a batch takes before it is
    /// compressed: lowered each time a compressed batch comes out over the limit.
    budget: usize,
}

impl Split<'_, '_> {
    fn run<E: From<Error>>(
        mut self,
        writer: &mut BatchWriter,
        each: &mut impl FnMut(ReencodedBatch) -> Result<(), E>,
    ) -> Result<(), E> {
        let batch = self.batch;
        let codec = Codec::new(batch.compression());
        let mut records = batch.records().from_offset(self.from_offset);
        // The record a full batch did not take: the next batch starts with it.
        let mut held: Option<Record<'_>> = None;
        let mut written = 0usize;
        loop {
            writer.reset();
            writer.set_batch_size(self.budget);
            let Some((first_offset, last_offset)) =
                fill(writer, &mut records, &mut held, self.until_offset)?
            else {
                return Ok(());
            };
            let count = writer.record_count();
            let size = writer.finish(ProducerFields::NONE, codec)?.len();
            if size <= self.max_batch_bytes {
                written += count;
                each(ReencodedBatch {
                    batch: writer.take_finished(codec),
                    first_offset,
                    last_offset,
                    record_count: count as u32,
                })?;
                continue;
            }
            if count == 1 {
                return Err(Error::RecordOverBatchLimit {
                    offset: first_offset,
                    size,
                    limit: self.max_batch_bytes,
                }
                .into());
            }
            // Over the limit compressed: fewer records, from the first this batch took.
            self.budget = smaller_budget(writer.estimated_size(), size, self.max_batch_bytes);
            held = None;
            records = batch.records().from_offset(self.from_offset);
            for _ in 0..written {
                records.next_ref().transpose()?;
            }
        }
    }
}

/// Appends records to `writer` until it is full or the records end (at `until_offset`), `held`
/// (a record the last batch had no room for) first; the offsets of the first and last record it
/// took, `None` when none was left.
fn fill<'b>(
    writer: &mut BatchWriter,
    records: &mut crate::Records<'b>,
    held: &mut Option<Record<'b>>,
    until_offset: i64,
) -> Result<Option<(i64, i64)>, Error> {
    let mut taken: Option<(i64, i64)> = None;
    loop {
        let record = match held.take() {
            Some(record) => record,
            None => match records.next() {
                Some(record) => record?,
                None => return Ok(taken),
            },
        };
        if record.offset() >= until_offset {
            // Held for good: every later call stops at it too.
            *held = Some(record);
            return Ok(taken);
        }
        match writer.append_record(&record)? {
            Append::Appended { .. } => {
                let offset = record.offset();
                taken = Some((taken.map_or(offset, |(first, _)| first), offset));
            }
            Append::Full => {
                *held = Some(record);
                return Ok(taken);
            }
        }
    }
}

/// Bytes of records a batch takes before compression: the limit itself when uncompressed
/// (then the batch is exactly that size); scaled by the source batch's own ratio when
/// compressed, so that its records usually go in one batch, as they came; within what the
/// decoder holds of one batch.
fn uncompressed_budget(batch: &Batch<'_>, max_batch_bytes: usize, config: &DecodeConfig) -> usize {
    if batch.compression() == Compression::None {
        return max_batch_bytes;
    }
    let header = if batch.magic() == magic::V2 {
        v2::HEADER_SIZE
    } else {
        0
    };
    let compressed = batch.size().saturating_sub(header).max(1) as u128;
    let scaled = max_batch_bytes as u128 * batch.records_bytes().len() as u128 / compressed;
    let ceiling = config.max_decompressed_bytes.max(max_batch_bytes);
    (scaled.min(ceiling as u128) as usize).max(max_batch_bytes)
}

/// The budget after a batch of `uncompressed` bytes came out `size` bytes compressed, over
/// `limit`: scaled by the ratio seen, less a margin, and always below what was tried, so the
/// next batch takes fewer records.
fn smaller_budget(uncompressed: usize, size: usize, limit: usize) -> usize {
    let scaled = uncompressed as u128 * limit as u128 / size.max(1) as u128;
    let with_margin = scaled - scaled / 32;
    (with_margin as usize).min(uncompressed.saturating_sub(1))
}
