//! The batch writer: one partition's open batch, written in one pass as librdkafka's
//! message-set writer does: the header's room first, then each record in wire form straight
//! into the buffer, then (when the batch closes) the records compressed into a second buffer,
//! the header filled in and the CRC32C computed once. No record is copied but by the codec.

use crate::buffer::PooledBuf;
use crate::compress::{compress_into, Codec};
use crate::crc::crc32c;
use crate::layout::{magic, v2, BASE_OFFSET_AT, ENTRY_HEADER_SIZE, LENGTH_AT, MAGIC_AT};
use crate::producer_fields::{put, ProducerFields};
use crate::record::Record;
use crate::record_wire::{HeadersOut, RecordFields, WireHeaders};
use crate::{Compression, Error, WriteConfig};

/// The largest batch there can be: its length field is an `i32`.
const MAX_BATCH: usize = ENTRY_HEADER_SIZE + i32::MAX as usize;

/// What [`BatchWriter::try_append`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Append {
    /// The record is in the batch, at this offset delta (its index in the batch).
    Appended {
        /// The record's offset delta: its offset is the batch's base offset plus this.
        offset_delta: i32,
    },
    /// The batch has no room for the record: finish it and append the record to the next.
    Full,
}

/// One partition's open RecordBatch v2, written in one pass and reused batch after batch.
///
/// Records go in with [`try_append`](Self::try_append) until it answers
/// [`Append::Full`] (past [`WriteConfig::batch_size`]; the first record always fits);
/// [`finish`](Self::finish) compresses them, writes the header and the CRC32C and lends the
/// batch; [`reset`](Self::reset) starts the next one in the same buffers. A producer that
/// keeps batches until they are acknowledged takes each one with
/// [`finish_owned`](Self::finish_owned) instead. Buffers come from the per-thread buffer
/// pool the decoder uses, and compressor state is kept per thread: a warm writer allocates
/// nothing per batch.
///
/// The batch's base offset is 0 (the broker assigns offsets), its partition leader epoch -1
/// and its timestamps the producer's (CreateTime); the base timestamp is the first record's.
#[derive(Debug)]
pub struct BatchWriter {
    config: WriteConfig,
    /// The header's room, then the records in wire form.
    records: PooledBuf,
    /// The finished batch when compressed: the header, then the compressed records.
    compressed: PooledBuf,
    record_count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchWriter {
    /// An empty batch within `config`'s limits.
    pub fn new(config: WriteConfig) -> Self {
        let mut writer = BatchWriter {
            config,
            records: PooledBuf::take(),
            compressed: PooledBuf::take(),
            record_count: 0,
            base_timestamp: 0,
            max_timestamp: 0,
        };
        writer.reset();
        writer
    }

    /// Empties the batch, keeping the buffers (a buffer grown past what the per-thread pool
    /// keeps is given back instead, so one huge batch does not pin its memory).
    pub fn reset(&mut self) {
        let retained = krec_lz4::thread_pool_config().max_retained_capacity;
        for buffer in [&mut self.records, &mut self.compressed] {
            if buffer.capacity() > retained {
                *buffer = PooledBuf::take();
            }
        }
        self.records.clear();
        // Room for the header, filled in by `finish`.
        self.records.writable(v2::HEADER_SIZE);
        self.records.commit(v2::HEADER_SIZE);
        self.record_count = 0;
        self.base_timestamp = 0;
        self.max_timestamp = 0;
    }

    /// Appends a record (timestamp in milliseconds, key, value, headers: a `None` is null)
    /// in wire form, unless the batch has no room for it ([`Append::Full`]). A record too
    /// large for a batch of its own ([`WriteConfig::max_record_size`]) is
    /// [`Error::RecordTooLarge`], whatever the batch holds.
    ///
    /// Headers are pairs of anything that is bytes: `&[("trace", Some(b"1"))]`, or
    /// [`NO_HEADERS`].
    pub fn try_append<H: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(H, Option<V>)],
    ) -> Result<Append, Error> {
        self.append(timestamp, key, value, headers)
    }

    /// Appends a decoded record as it is (its timestamp, key, value and headers section, the
    /// bytes of which are copied, not re-encoded): a copy that cannot forward its batch.
    pub(crate) fn append_record(&mut self, record: &Record<'_>) -> Result<Append, Error> {
        let headers = WireHeaders {
            count: record.headers().len(),
            section: record.headers().wire_section(),
        };
        self.append(record.timestamp(), record.key(), record.value(), headers)
    }

    /// [`try_append`](Self::try_append) with headers given either way.
    #[inline(always)]
    fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: impl HeadersOut,
    ) -> Result<Append, Error> {
        let first = self.record_count == 0;
        let base_timestamp = if first {
            timestamp
        } else {
            self.base_timestamp
        };
        let record = RecordFields {
            timestamp_delta: timestamp.wrapping_sub(base_timestamp),
            offset_delta: self.record_count,
            key,
            value,
            headers,
        };
        let (body, size) = record.sizes();
        let alone = v2::HEADER_SIZE as u64 + size;
        let limit = self.config.max_record_size.min(MAX_BATCH);
        if alone > limit as u64 {
            return Err(Error::RecordTooLarge { size: alone, limit });
        }
        // Both fit in `usize`: they are below the limit.
        let (body, size) = (body as usize, size as usize);
        let room = self.config.batch_size.min(MAX_BATCH);
        if !first && (self.records.len() + size > room || self.record_count == i32::MAX) {
            return Ok(Append::Full);
        }
        record.write(body, self.records.writable(size));
        self.records.commit(size);
        self.base_timestamp = base_timestamp;
        self.max_timestamp = if first {
            timestamp
        } else {
            self.max_timestamp.max(timestamp)
        };
        self.record_count += 1;
        Ok(Append::Appended {
            offset_delta: record.offset_delta,
        })
    }

    /// The batch's size so far: header and records, before compression.
    pub fn estimated_size(&self) -> usize {
        self.records.len()
    }

    /// Records in the batch.
    pub fn record_count(&self) -> usize {
        self.record_count as usize
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.record_count == 0
    }

    /// The limits the writer was made with.
    pub fn config(&self) -> &WriteConfig {
        &self.config
    }

    /// Sets [`WriteConfig::batch_size`] from the next record on: a copy sizes each batch by
    /// what its source compresses to, and keeps one writer (one set of buffers) throughout.
    pub(crate) fn set_batch_size(&mut self, batch_size: usize) {
        self.config.batch_size = batch_size;
    }

    /// Closes the batch: compresses the records with `codec` (into a second buffer; the
    /// records stay as they are), writes the header with `producer`'s fields and the CRC32C,
    /// and lends the finished batch until the next call on the writer. Appending after it
    /// continues the same batch; [`reset`](Self::reset) starts the next.
    pub fn finish(&mut self, producer: ProducerFields, codec: Codec) -> Result<&[u8], Error> {
        if self.record_count == 0 {
            return Err(Error::EmptyBatch);
        }
        let batch = if codec.compression() == Compression::None {
            &mut self.records
        } else {
            self.compressed.clear();
            self.compressed.writable(v2::HEADER_SIZE);
            self.compressed.commit(v2::HEADER_SIZE);
            compress_into(
                codec,
                &self.records[v2::HEADER_SIZE..],
                &mut self.compressed,
            )?;
            if self.compressed.len() > MAX_BATCH {
                return Err(Error::CompressionFailed {
                    codec: codec.compression(),
                    reason: "the compressed batch is over 2 GiB",
                });
            }
            &mut self.compressed
        };
        let mut header = [0u8; v2::HEADER_SIZE];
        let length = (batch.len() - ENTRY_HEADER_SIZE) as i32;
        put(&mut header, BASE_OFFSET_AT, &0i64.to_be_bytes());
        put(&mut header, LENGTH_AT, &length.to_be_bytes());
        put(
            &mut header,
            v2::PARTITION_LEADER_EPOCH_AT,
            &(-1i32).to_be_bytes(),
        );
        header[MAGIC_AT] = magic::V2;
        let attributes = i16::from(codec.compression().id());
        put(&mut header, v2::ATTRIBUTES_AT, &attributes.to_be_bytes());
        let last_offset_delta = self.record_count - 1;
        put(
            &mut header,
            v2::LAST_OFFSET_DELTA_AT,
            &last_offset_delta.to_be_bytes(),
        );
        put(
            &mut header,
            v2::BASE_TIMESTAMP_AT,
            &self.base_timestamp.to_be_bytes(),
        );
        put(
            &mut header,
            v2::MAX_TIMESTAMP_AT,
            &self.max_timestamp.to_be_bytes(),
        );
        producer.stamp(&mut header);
        put(
            &mut header,
            v2::RECORD_COUNT_AT,
            &self.record_count.to_be_bytes(),
        );
        batch[..v2::HEADER_SIZE].copy_from_slice(&header);
        let crc = crc32c(&batch[v2::ATTRIBUTES_AT..]);
        batch[v2::CRC_AT..v2::CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(&batch[..])
    }

    /// [`finish`](Self::finish), handing over the buffer that holds the batch, and
    /// [`reset`](Self::reset): for a producer that keeps batches until they are
    /// acknowledged. The writer takes a buffer from the per-thread pool in its place;
    /// dropping the batch gives its buffer back to the pool of the thread that drops it.
    pub fn finish_owned(
        &mut self,
        producer: ProducerFields,
        codec: Codec,
    ) -> Result<PooledBuf, Error> {
        self.finish(producer, codec)?;
        Ok(self.take_finished(codec))
    }

    /// The buffer [`finish`](Self::finish) (with `codec`) wrote the batch into, handed over,
    /// and [`reset`](Self::reset): no second compression for a caller that looked at the
    /// finished batch before keeping it.
    pub(crate) fn take_finished(&mut self, codec: Codec) -> PooledBuf {
        let holder = if codec.compression() == Compression::None {
            &mut self.records
        } else {
            &mut self.compressed
        };
        let batch = std::mem::replace(holder, PooledBuf::take());
        self.reset();
        batch
    }
}

/// No headers, for [`BatchWriter::try_append`] (an empty slice literal has no element type).
pub const NO_HEADERS: &[(&[u8], Option<&[u8]>)] = &[];
