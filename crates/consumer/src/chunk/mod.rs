//! A fetched partition chunk and its decoding: complete batches in order, records before the
//! fetch offset skipped, aborted transactions hidden under `read_committed`.
//!
//! Three ways to read a chunk: [`PartitionChunk::for_each_record`], its data records lent one
//! at a time to a closure, and [`PartitionChunk::batches`] with
//! [`ChunkBatches::try_for_each_ref`], batch by batch: both decode each batch in place into one
//! reused buffer (the fast path); and [`PartitionChunk::records`], a plain iterator of its
//! data records, for a loop that awaits or keeps records (the chunk decodes its batches once
//! and keeps them, so the records can borrow them). A copy reads neither: it takes each data
//! batch as the bytes the broker sent, [`PartitionChunk::data_batches`].

mod data_batches;
mod each_record;
mod gate;
mod records;
#[cfg(test)]
pub(crate) mod tests;

use std::sync::{Arc, LazyLock};

use krec_batch::{
    Batch, BatchSpan, BatchSummary, BatchWalk, ControlRecord, DecodeConfig, OnCorrupt, Record,
    Records, Skipped, WalkEnd,
};
use tokio::sync::OwnedSemaphorePermit;

use crate::cursor::ChunkData;
use crate::metrics::Metrics;
use crate::Error;
pub use data_batches::{DataBatch, DataBatches};
pub use each_record::RecordFlow;
use gate::{BatchGate, GateInput};
pub use records::ChunkRecordIter;
use records::KeptBatches;

/// The complete batches one fetch returned for one partition.
///
/// The record bytes are a slice of the response frame (no copy). While the chunk is alive it
/// counts against the consumer's buffer budget; dropping it lets fetching go on.
#[derive(Debug)]
pub struct PartitionChunk {
    topic: Arc<str>,
    partition: i32,
    generation: u64,
    data: ChunkData,
    read_committed: bool,
    _budget: Option<OwnedSemaphorePermit>,
    /// Shared by the chunks of one fetch response: the last one dropped lets the fetch loop
    /// send another fetch under `max_held_responses`.
    _response: Option<Arc<OwnedSemaphorePermit>>,
    /// The consumer's counters, where skipped corrupt batches are counted.
    metrics: Option<Arc<Metrics>>,
    /// The consumer's decoding limits (`None`: the defaults).
    decode: Option<Arc<DecodeConfig>>,
    /// Records at or after this offset are not delivered (a share group's acquired range may
    /// end inside a batch); `i64::MAX` for a consumer's chunks.
    until: i64,
    /// The batches [`PartitionChunk::records`] has decoded, in delivery order, kept so that
    /// the records it handed out stay valid as long as the chunk.
    kept: KeptBatches,
}

/// Decoding limits of a chunk made without a consumer's (in tests).
static DEFAULT_DECODE: LazyLock<DecodeConfig> = LazyLock::new(DecodeConfig::default);

impl PartitionChunk {
    pub(crate) fn new(
        topic: Arc<str>,
        partition: i32,
        generation: u64,
        data: ChunkData,
        read_committed: bool,
        budget: Option<OwnedSemaphorePermit>,
    ) -> Self {
        Self {
            topic,
            partition,
            generation,
            data,
            read_committed,
            _budget: budget,
            _response: None,
            metrics: None,
            decode: None,
            until: i64::MAX,
            kept: KeptBatches::default(),
        }
    }

    /// Decodes with `config` instead of the defaults.
    pub(crate) fn with_decode(mut self, config: Arc<DecodeConfig>) -> Self {
        self.decode = Some(config);
        self
    }

    /// Delivers no record at or after `offset`.
    pub(crate) fn with_until(mut self, offset: i64) -> Self {
        self.until = offset;
        self
    }

    /// The offset before which the chunk's records end (exclusive): `i64::MAX` unless the
    /// chunk is a share group's acquired range.
    pub fn until_offset(&self) -> i64 {
        self.until
    }

    /// The decoding limits this chunk applies.
    pub fn decode_config(&self) -> &DecodeConfig {
        self.decode.as_deref().unwrap_or(&DEFAULT_DECODE)
    }

    /// Counts the corrupt batches skipped in this chunk into `metrics`.
    pub(crate) fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Ties the chunk to its response's slot under `max_held_responses`.
    pub(crate) fn with_response_slot(mut self, slot: Option<Arc<OwnedSemaphorePermit>>) -> Self {
        self._response = slot;
        self
    }

    /// Topic name.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Partition id.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    pub(crate) fn topic_arc(&self) -> &Arc<str> {
        &self.topic
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The first offset this chunk delivers.
    pub fn fetch_offset(&self) -> i64 {
        self.data.fetch_offset
    }

    /// The offset after the chunk's last batch: the next chunk of the partition starts here.
    pub fn next_offset(&self) -> i64 {
        self.data.next_offset
    }

    /// High watermark when the chunk was fetched.
    pub fn high_watermark(&self) -> i64 {
        self.data.high_watermark
    }

    /// Last stable offset when the chunk was fetched.
    pub fn last_stable_offset(&self) -> i64 {
        self.data.last_stable_offset
    }

    /// The raw record batches.
    pub fn records_bytes(&self) -> &bytes::Bytes {
        &self.data.records
    }

    /// Decodes the chunk's batches in order. Control batches are yielded (their markers can be
    /// printed); aborted transactional batches are not when reading committed data.
    pub fn batches(&self) -> ChunkBatches<'_> {
        ChunkBatches {
            chunk: self,
            walk: BatchWalk::new_shared(&self.data.records, self.decode_config()),
            gate: BatchGate::new(self),
            finished: false,
        }
    }

    /// The data records the chunk delivers, counted from batch headers where they can be: a
    /// compressed batch is decompressed only when it starts before the fetch offset (its
    /// records before that offset are not the chunk's). Aborted transactions are left out
    /// under `read_committed`, as [`PartitionChunk::batches`] leaves them out.
    pub fn count_records(&self) -> Result<u64, Error> {
        let config = self.decode_config();
        let mut walk = BatchWalk::new(&self.data.records, config);
        let mut gate = BatchGate::new(self);
        let mut records = 0u64;
        while let Some(summary) = walk.next_summary() {
            let summary = summary.map_err(|e| self.decode_error(e))?;
            if !gate.admit(&GateInput::of_summary(&summary))? {
                continue;
            }
            let bounded = summary.last_offset >= self.until;
            records += if summary.base_offset < self.data.fetch_offset || bounded {
                let bytes = &self.data.records[summary.position..][..summary.size];
                self.count_from_fetch_offset(bytes, config)?
            } else {
                u64::from(summary.data_records)
            };
        }
        match walk.end() {
            Some(WalkEnd::Complete) => Ok(records),
            _ => Err(Error::CutBatch {
                topic: self.topic.to_string(),
                partition: self.partition,
                fetch_offset: self.data.fetch_offset,
                position: walk.position(),
            }),
        }
    }

    /// Records at or after the fetch offset in one batch that starts before it.
    fn count_from_fetch_offset(&self, batch: &[u8], config: &DecodeConfig) -> Result<u64, Error> {
        let mut count = 0;
        for batch in BatchWalk::new(batch, config) {
            let batch = batch.map_err(|e| self.decode_error(e))?;
            for record in batch.records() {
                let record = record.map_err(|e| self.decode_error(e))?;
                let offset = record.offset();
                count += u64::from(offset >= self.data.fetch_offset && offset < self.until);
            }
        }
        Ok(count)
    }

    pub(super) fn decode_error(&self, source: krec_batch::Error) -> Error {
        Error::Decode {
            topic: self.topic.to_string(),
            partition: self.partition,
            fetch_offset: self.data.fetch_offset,
            source,
        }
    }
}

/// Iterator over a chunk's decoded batches (see [`PartitionChunk::batches`]).
///
/// Two ways to read it: as an [`Iterator`] of owned batches, or with
/// [`ChunkBatches::try_for_each_ref`], which parses each batch in place: the fast way, since
/// a batch moved out by value per step costs a small batch much of its decode time
/// ([`BatchWalk::next_ref`]; BENCHMARKS.md, "Mechanisms kept for speed"). Both walk the same loop.
pub struct ChunkBatches<'a> {
    chunk: &'a PartitionChunk,
    walk: BatchWalk<'a>,
    gate: BatchGate<'a>,
    finished: bool,
}

impl<'a> ChunkBatches<'a> {
    /// Records hidden so far because their transaction was aborted.
    pub fn aborted_records(&self) -> u64 {
        self.gate.aborted_records
    }

    /// Calls `each` with every batch to deliver, in order, each parsed in place and lent for
    /// the call; stops at the first error (of decoding or of `each`) or when `each` returns
    /// [`ControlFlow::Break`](std::ops::ControlFlow::Break).
    ///
    /// ```no_run
    /// # use std::ops::ControlFlow;
    /// # use krec_consumer::PartitionChunk;
    /// # fn print(chunk: &PartitionChunk) -> Result<(), krec_consumer::Error> {
    /// chunk.batches().try_for_each_ref(|batch| {
    ///     let mut records = batch.records_in_place();
    ///     while let Some(record) = records.next_ref() {
    ///         println!("{}", record?.offset());
    ///     }
    ///     Ok(ControlFlow::Continue(()))
    /// })
    /// # }
    /// ```
    pub fn try_for_each_ref<E: From<Error>>(
        &mut self,
        each: impl FnMut(ChunkBatchRef<'_, 'a>) -> Result<std::ops::ControlFlow<()>, E>,
    ) -> Result<(), E> {
        self.try_for_each_ref_or_skip(OnCorrupt::Stop, each, |_| Ok(()))
    }

    /// [`ChunkBatches::try_for_each_ref`] under a corrupt-batch policy. With
    /// [`OnCorrupt::Skip`], every record of a batch is checked before `each` sees the batch,
    /// and a batch that fails (its CRC, its decompression, any record) is stepped over whole:
    /// it is counted in the consumer's metrics and handed to `skipped` (positions in the
    /// chunk's record bytes) before the next batch is read. A batch whose length cannot be
    /// trusted still stops the walk: no next batch can be found.
    pub fn try_for_each_ref_or_skip<E: From<Error>>(
        &mut self,
        on_corrupt: OnCorrupt,
        mut each: impl FnMut(ChunkBatchRef<'_, 'a>) -> Result<std::ops::ControlFlow<()>, E>,
        mut skipped: impl FnMut(&Skipped) -> Result<(), E>,
    ) -> Result<(), E> {
        while !self.finished {
            let batch = match self.walk.next_ref() {
                None => {
                    return match self.finish() {
                        Some(error) => Err(error.into()),
                        None => Ok(()),
                    }
                }
                Some(Err(source)) => match self.walk.skip_failed(on_corrupt, source) {
                    Ok(skip) => {
                        self.skip(&skip, &mut skipped)?;
                        continue;
                    }
                    Err(source) => {
                        self.finished = true;
                        return Err(self.chunk.decode_error(source).into());
                    }
                },
                Some(Ok(batch)) => batch,
            };
            if on_corrupt == OnCorrupt::Skip {
                if let Err(error) = batch.check_records() {
                    let span = BatchSpan::of_batch(batch);
                    match on_corrupt.decide(error, Some(span)) {
                        Ok(skip) => {
                            self.skip(&skip, &mut skipped)?;
                            continue;
                        }
                        Err(source) => {
                            self.finished = true;
                            return Err(self.chunk.decode_error(source).into());
                        }
                    }
                }
            }
            let admitted =
                GateInput::of_batch(batch, self.chunk).and_then(|input| self.gate.admit(&input));
            match admitted {
                Err(error) => {
                    self.finished = true;
                    return Err(error.into());
                }
                Ok(false) => {}
                Ok(true) => {
                    let batch = ChunkBatchRef {
                        chunk: self.chunk,
                        batch,
                    };
                    if each(batch)?.is_break() {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Steps over a corrupt batch: the offsets it covers count as passed (the chunk ends
    /// where the fetch said), and it is counted and reported unless it lies wholly before the
    /// fetch offset (then it is not this chunk's to deliver).
    fn skip<E>(
        &mut self,
        skip: &Skipped,
        skipped: &mut impl FnMut(&Skipped) -> Result<(), E>,
    ) -> Result<(), E> {
        let next_offset = skip.span.last_offset.saturating_add(1);
        self.gate.last_next_offset = Some(next_offset);
        let entry = &self.chunk.data.records[skip.span.position..][..skip.span.size];
        if let Some(producer_id) = self.gate.pass_corrupt(entry, skip.span.last_offset) {
            tracing::warn!(
                topic = %self.chunk.topic,
                partition = self.chunk.partition,
                offset = skip.span.base_offset,
                producer_id,
                "the corrupt batch skipped was a transaction marker of an aborted transaction; \
                 the producer's records after it are delivered"
            );
        }
        if next_offset <= self.chunk.data.fetch_offset || skip.span.base_offset >= self.chunk.until
        {
            return Ok(());
        }
        if let Some(metrics) = &self.chunk.metrics {
            metrics.batch_skipped(&self.chunk.topic, self.chunk.partition);
        }
        skipped(skip)
    }

    /// The walk's end: an error if it stopped inside a batch or short of the chunk's end.
    fn finish(&mut self) -> Option<Error> {
        self.finished = true;
        let chunk = self.chunk;
        if let Some(WalkEnd::Partial { position, .. }) = self.walk.end() {
            // The fetch loop only hands out complete batches; a cut here means the two disagree.
            return Some(Error::CutBatch {
                topic: chunk.topic.to_string(),
                partition: chunk.partition,
                fetch_offset: chunk.data.fetch_offset,
                position,
            });
        }
        match self.gate.last_next_offset {
            Some(next) if next == chunk.data.next_offset => None,
            other => Some(Error::OffsetGap {
                topic: chunk.topic.to_string(),
                partition: chunk.partition,
                expected: chunk.data.next_offset,
                actual: other.unwrap_or(chunk.data.fetch_offset),
            }),
        }
    }

    /// The next delivered data batch's summary, its records left compressed (control batches
    /// pass the gate but are not returned): for a reader that decodes the batch itself.
    pub(super) fn next_data_summary(&mut self) -> Option<Result<BatchSummary, Error>> {
        while !self.finished {
            let summary = match self.walk.next_summary() {
                None => return self.finish().map(Err),
                Some(Err(source)) => {
                    self.finished = true;
                    return Some(Err(self.chunk.decode_error(source)));
                }
                Some(Ok(summary)) => summary,
            };
            match self.gate.admit(&GateInput::of_summary(&summary)) {
                Err(error) => {
                    self.finished = true;
                    return Some(Err(error));
                }
                Ok(true) if !summary.control => return Some(Ok(summary)),
                Ok(_) => {}
            }
        }
        None
    }
}

impl<'a> Iterator for ChunkBatches<'a> {
    type Item = Result<ChunkBatch<'a>, Error>;

    /// The in-place walk, stopped at the first batch delivered, which is then taken out of it.
    fn next(&mut self) -> Option<Self::Item> {
        let mut delivered = false;
        let walked = self.try_for_each_ref(|_| {
            delivered = true;
            Ok::<_, Error>(std::ops::ControlFlow::Break(()))
        });
        match walked {
            Err(error) => Some(Err(error)),
            Ok(()) if delivered => Some(Ok(ChunkBatch {
                chunk: self.chunk,
                batch: self.walk.take_lent(),
            })),
            Ok(()) => None,
        }
    }
}

/// One decoded batch of a chunk.
pub struct ChunkBatch<'a> {
    chunk: &'a PartitionChunk,
    batch: Batch<'a>,
}

impl<'a> ChunkBatch<'a> {
    /// The same batch, borrowed: what [`ChunkBatches::try_for_each_ref`] lends.
    pub fn as_ref(&self) -> ChunkBatchRef<'_, 'a> {
        ChunkBatchRef {
            chunk: self.chunk,
            batch: &self.batch,
        }
    }

    /// The batch with all its header fields.
    pub fn batch(&self) -> &Batch<'a> {
        &self.batch
    }

    /// The data records to deliver: those at or after the chunk's fetch offset (a fetch that
    /// starts inside a batch gets the whole batch from the broker).
    pub fn records(&self) -> impl Iterator<Item = Result<Record<'_>, Error>> + '_ {
        self.as_ref().records()
    }

    /// The same records, each filled in place and lent until the next call to
    /// [`ChunkRecords::next_ref`]: the fast way to read them (see
    /// [`krec_batch::Records::next_ref`]).
    pub fn records_in_place(&self) -> ChunkRecords<'_> {
        self.as_ref().records_in_place()
    }

    /// The control records (transaction markers) at or after the fetch offset.
    pub fn control_records(&self) -> impl Iterator<Item = Result<ControlRecord, Error>> + '_ {
        self.as_ref().control_records()
    }
}

/// One decoded batch of a chunk, lent by [`ChunkBatches::try_for_each_ref`] (`'b`: the loan;
/// `'a`: the chunk's bytes).
#[derive(Clone, Copy)]
pub struct ChunkBatchRef<'b, 'a> {
    chunk: &'a PartitionChunk,
    batch: &'b Batch<'a>,
}

impl<'b, 'a> ChunkBatchRef<'b, 'a> {
    /// The batch with all its header fields.
    pub fn batch(&self) -> &'b Batch<'a> {
        self.batch
    }

    /// The data records to deliver: those at or after the chunk's fetch offset (a fetch that
    /// starts inside a batch gets the whole batch from the broker).
    pub fn records(self) -> impl Iterator<Item = Result<Record<'b>, Error>> + 'b
    where
        'a: 'b,
    {
        let chunk = self.chunk;
        self.batch
            .records()
            .from_offset(chunk.data.fetch_offset)
            .until_offset(chunk.until)
            .map(move |record| record.map_err(|source| chunk.decode_error(source)))
    }

    /// The same records, each filled in place and lent until the next call to
    /// [`ChunkRecords::next_ref`]: the fast way to read them (see
    /// [`krec_batch::Records::next_ref`]).
    pub fn records_in_place(self) -> ChunkRecords<'b>
    where
        'a: 'b,
    {
        ChunkRecords {
            chunk: self.chunk,
            records: self
                .batch
                .records()
                .from_offset(self.chunk.data.fetch_offset)
                .until_offset(self.chunk.until),
        }
    }

    /// The control records (transaction markers) at or after the fetch offset.
    pub fn control_records(self) -> impl Iterator<Item = Result<ControlRecord, Error>> + 'b
    where
        'a: 'b,
    {
        let (chunk, first) = (self.chunk, self.chunk.data.fetch_offset);
        self.batch
            .control_records()
            .filter_map(move |control| match control {
                Ok(control) if control.offset < first || control.offset >= chunk.until => None,
                Ok(control) => Some(Ok(control)),
                Err(source) => Some(Err(chunk.decode_error(source))),
            })
    }
}

/// The data records of one [`ChunkBatch`], read in place.
pub struct ChunkRecords<'a> {
    chunk: &'a PartitionChunk,
    records: Records<'a>,
}

impl<'a> ChunkRecords<'a> {
    /// The next record to deliver, lent until the next call; `None` after the last one or the
    /// first error.
    #[inline]
    pub fn next_ref(&mut self) -> Option<Result<&Record<'a>, Error>> {
        match self.records.next_ref()? {
            Ok(record) => Some(Ok(record)),
            Err(source) => Some(Err(self.chunk.decode_error(source))),
        }
    }
}
