//! A fetched partition chunk and its decoding: complete batches in order, records before the
//! fetch offset skipped, aborted transactions hidden under `read_committed`.
//!
//! Two ways to read a chunk: [`PartitionChunk::records`], a plain iterator of its data
//! records (the chunk decodes its batches once and keeps them, so the records can borrow
//! them), and [`PartitionChunk::batches`] with [`ChunkBatches::try_for_each_ref`], which
//! decodes each batch in place into one reused buffer: the fast path.

use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use krec_batch::{
    Batch, BatchSpan, BatchSummary, BatchWalk, ControlKind, ControlRecord, DecodeConfig, OnCorrupt,
    Record, Records, Skipped, WalkEnd,
};
use tokio::sync::OwnedSemaphorePermit;

use super::cursor::ChunkData;
use crate::metrics::Metrics;
use crate::Error;
use krec_client::fetch::AbortedTransaction;

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
    /// The batches [`PartitionChunk::records`] walks, decoded on its first call.
    decoded: OnceLock<DecodedBatches>,
}

/// Decoding limits of a chunk made without a consumer's (in tests).
static DEFAULT_DECODE: LazyLock<DecodeConfig> = LazyLock::new(DecodeConfig::default);

/// What one walk of a chunk delivers, and the error that ended it, if one did: handed out
/// by the first iteration that reaches it, described again to any later one.
struct Delivered<'a> {
    batches: Vec<Batch<'a>>,
    error: Mutex<Option<Error>>,
    error_text: Option<String>,
}

self_cell::self_cell!(
    /// A chunk's delivered batches, kept with a copy of the chunk (its bytes shared, not
    /// copied) that they borrow.
    struct DecodedBatches {
        owner: PartitionChunk,
        #[covariant]
        dependent: Delivered,
    }
);

impl std::fmt::Debug for DecodedBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let delivered = self.borrow_dependent();
        f.debug_struct("DecodedBatches")
            .field("batches", &delivered.batches.len())
            .field("error", &delivered.error)
            .finish()
    }
}

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
            decoded: OnceLock::new(),
        }
    }

    /// Decodes with `config` instead of the defaults.
    pub(crate) fn with_decode(mut self, config: Arc<DecodeConfig>) -> Self {
        self.decode = Some(config);
        self
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

    /// The data records the chunk delivers, in order: those at or after its fetch offset, with
    /// control records and (under `read_committed`) aborted transactions left out. The first
    /// call decodes every batch and keeps them with the chunk; an error ends the iteration.
    ///
    /// ```no_run
    /// # fn print(chunk: &krec_consumer::PartitionChunk) -> Result<(), krec_consumer::Error> {
    /// for record in chunk.records() {
    ///     let record = record?;
    ///     println!("{} {:?}", record.offset(), record.value());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn records(&self) -> ChunkRecordIter<'_> {
        let decoded = self.decoded.get_or_init(|| self.decode_all());
        ChunkRecordIter {
            chunk: self,
            delivered: decoded.borrow_dependent(),
            next_batch: 0,
            current: None,
            done: false,
        }
    }

    fn decode_all(&self) -> DecodedBatches {
        DecodedBatches::new(self.detached(), |chunk| {
            let mut delivered = Delivered {
                batches: Vec::new(),
                error: Mutex::new(None),
                error_text: None,
            };
            for batch in chunk.batches() {
                match batch {
                    Ok(batch) => delivered.batches.push(batch.batch),
                    Err(error) => {
                        delivered.error_text = Some(error.to_string());
                        delivered.error = Mutex::new(Some(error));
                    }
                }
            }
            delivered
        })
    }

    /// The same chunk without its hold on the buffer budget and the response slot (the
    /// original keeps those), for [`DecodedBatches`] to own.
    fn detached(&self) -> PartitionChunk {
        PartitionChunk {
            topic: self.topic.clone(),
            partition: self.partition,
            generation: self.generation,
            data: self.data.clone(),
            read_committed: self.read_committed,
            _budget: None,
            _response: None,
            metrics: None,
            decode: self.decode.clone(),
            decoded: OnceLock::new(),
        }
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
            records += if summary.base_offset < self.data.fetch_offset {
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
                count += u64::from(record.offset() >= self.data.fetch_offset);
            }
        }
        Ok(count)
    }

    fn decode_error(&self, source: krec_batch::Error) -> Error {
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

/// Which of the walk's batches are delivered, and what the walk has passed: a field of its
/// own, so it can be consulted while the walk lends a batch.
struct BatchGate<'a> {
    chunk: &'a PartitionChunk,
    /// The fetch response's aborted transactions not reached yet, the next one last.
    pending: Vec<AbortedTransaction>,
    /// Producers whose transaction is aborted at the walk's position.
    producers: Vec<i64>,
    /// `next_offset` of the last batch walked.
    last_next_offset: Option<i64>,
    /// Records hidden so far because their transaction was aborted.
    aborted_records: u64,
}

/// What the gate reads of a batch, from a decoded batch or from its summary.
struct GateInput {
    producer_id: i64,
    last_offset: i64,
    next_offset: i64,
    record_count: u32,
    transactional: bool,
    control: bool,
    /// A control batch holding an ABORT marker.
    aborts: bool,
}

impl GateInput {
    fn of_batch(batch: &Batch<'_>, chunk: &PartitionChunk) -> Result<Self, Error> {
        let mut aborts = false;
        // Markers matter only to the aborted-transaction filter.
        if chunk.read_committed && batch.is_control() {
            for control in batch.control_records() {
                let control = control.map_err(|e| chunk.decode_error(e))?;
                aborts |= control.kind == ControlKind::Abort;
            }
        }
        Ok(Self {
            producer_id: batch.producer_id(),
            last_offset: batch.last_offset(),
            next_offset: batch.next_offset(),
            record_count: batch.record_count(),
            transactional: batch.is_transactional(),
            control: batch.is_control(),
            aborts,
        })
    }

    fn of_summary(summary: &BatchSummary) -> Self {
        Self {
            producer_id: summary.producer_id,
            last_offset: summary.last_offset,
            next_offset: summary.last_offset + 1,
            record_count: summary.data_records,
            transactional: summary.transactional,
            control: summary.control,
            aborts: summary.marker == Some(ControlKind::Abort),
        }
    }
}

impl<'c> BatchGate<'c> {
    fn new(chunk: &'c PartitionChunk) -> Self {
        let mut pending = chunk.data.aborted.clone();
        // Popped from the back in first-offset order.
        pending.sort_by_key(|a| std::cmp::Reverse(a.first_offset));
        BatchGate {
            chunk,
            pending,
            producers: Vec::new(),
            last_next_offset: None,
            aborted_records: 0,
        }
    }

    /// Notes that the walk passed `batch`; whether it is delivered: not when its transaction
    /// was aborted (counted), nor when it lies wholly before the fetch offset.
    fn admit(&mut self, batch: &GateInput) -> Result<bool, Error> {
        self.last_next_offset = Some(batch.next_offset);
        if self.is_aborted(batch) {
            self.aborted_records += u64::from(batch.record_count);
            return Ok(false);
        }
        Ok(batch.next_offset > self.chunk.data.fetch_offset)
    }

    /// Whether `batch` belongs to an aborted transaction, following the fetch response's
    /// aborted list the way Kafka's Java consumer does: a producer becomes aborted once the
    /// walk passes the first offset of one of its aborted transactions, and stops being
    /// aborted at its ABORT marker.
    fn is_aborted(&mut self, batch: &GateInput) -> bool {
        let producer_id = batch.producer_id;
        if !self.chunk.read_committed || producer_id < 0 {
            return false;
        }
        while let Some(next) = self.pending.last() {
            if next.first_offset > batch.last_offset {
                break;
            }
            if !self.producers.contains(&next.producer_id) {
                self.producers.push(next.producer_id);
            }
            self.pending.pop();
        }
        if batch.control {
            if batch.aborts {
                self.producers.retain(|p| *p != producer_id);
            }
            return false;
        }
        batch.transactional && self.producers.contains(&producer_id)
    }
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
                        Some(Err(error)) => Err(error.into()),
                        _ => Ok(()),
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
        if next_offset <= self.chunk.data.fetch_offset {
            return Ok(());
        }
        if let Some(metrics) = &self.chunk.metrics {
            metrics.batch_skipped(&self.chunk.topic, self.chunk.partition);
        }
        skipped(skip)
    }

    fn finish(&mut self) -> Option<Result<ChunkBatch<'a>, Error>> {
        self.finished = true;
        let chunk = self.chunk;
        if let Some(WalkEnd::Partial { position, .. }) = self.walk.end() {
            // The fetch loop only hands out complete batches; a cut here means the two disagree.
            return Some(Err(Error::CutBatch {
                topic: chunk.topic.to_string(),
                partition: chunk.partition,
                fetch_offset: chunk.data.fetch_offset,
                position,
            }));
        }
        match self.gate.last_next_offset {
            Some(next) if next == chunk.data.next_offset => None,
            other => Some(Err(Error::OffsetGap {
                topic: chunk.topic.to_string(),
                partition: chunk.partition,
                expected: chunk.data.next_offset,
                actual: other.unwrap_or(chunk.data.fetch_offset),
            })),
        }
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

/// The data records of a chunk, in order (see [`PartitionChunk::records`]).
pub struct ChunkRecordIter<'c> {
    chunk: &'c PartitionChunk,
    delivered: &'c Delivered<'c>,
    next_batch: usize,
    current: Option<Records<'c>>,
    done: bool,
}

impl<'c> Iterator for ChunkRecordIter<'c> {
    type Item = Result<Record<'c>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some(records) = self.current.as_mut() {
                match records.next() {
                    Some(Ok(record)) => return Some(Ok(record)),
                    Some(Err(source)) => {
                        self.done = true;
                        return Some(Err(self.chunk.decode_error(source)));
                    }
                    None => self.current = None,
                }
            }
            match self.delivered.batches.get(self.next_batch) {
                Some(batch) => {
                    self.next_batch += 1;
                    self.current = Some(batch.records().from_offset(self.chunk.data.fetch_offset));
                }
                None => {
                    self.done = true;
                    return self.ending_error().map(Err);
                }
            }
        }
        None
    }
}

impl ChunkRecordIter<'_> {
    /// The error that ended the chunk's walk: itself the first time, described again later.
    fn ending_error(&self) -> Option<Error> {
        let text = self.delivered.error_text.as_ref()?;
        let mut first = self
            .delivered
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        Some(first.take().unwrap_or_else(|| Error::InvalidArgument {
            what: "chunk",
            detail: format!(
                "{}/{}: its records were read before and ended in: {text}",
                self.chunk.topic, self.chunk.partition
            ),
        }))
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
                .from_offset(self.chunk.data.fetch_offset),
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
                Ok(control) if control.offset < first => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use krec_batch::encode::BatchBuilder;

    fn data_batch(base: i64, producer: i64, transactional: bool, values: &[&str]) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base)
            .producer(producer, 0, 0)
            .transactional(transactional);
        for value in values {
            builder = builder.record(Some(b"k"), Some(value.as_bytes()), &[]);
        }
        builder.build()
    }

    fn marker(offset: i64, producer: i64, kind: ControlKind) -> Vec<u8> {
        BatchBuilder::new(offset)
            .producer(producer, 0, -1)
            .transactional(true)
            .control_marker(kind, 0)
            .build()
    }

    fn chunk(
        batches: &[Vec<u8>],
        fetch_offset: i64,
        next_offset: i64,
        aborted: &[(i64, i64)],
        read_committed: bool,
    ) -> PartitionChunk {
        let data = ChunkData {
            fetch_offset,
            next_offset,
            high_watermark: next_offset,
            last_stable_offset: next_offset,
            aborted: aborted
                .iter()
                .map(|&(producer_id, first_offset)| AbortedTransaction {
                    producer_id,
                    first_offset,
                })
                .collect(),
            records: Bytes::from(batches.concat()),
        };
        PartitionChunk::new(Arc::from("t"), 0, 0, data, read_committed, None)
    }

    /// The delivered records' offsets and values, read through the iterator of owned batches;
    /// reading them in place (`try_for_each_ref`) must give the same records, the same error
    /// and the same count of aborted records.
    fn values(chunk: &PartitionChunk) -> Result<Vec<(i64, String)>, Error> {
        let value_of = |record: &Record<'_>| {
            (
                record.offset(),
                String::from_utf8(record.value().unwrap().to_vec()).unwrap(),
            )
        };
        let mut owned = chunk.batches();
        let by_iterator = (|| {
            let mut out = Vec::new();
            for batch in owned.by_ref() {
                for record in batch?.records() {
                    out.push(value_of(&record?));
                }
            }
            Ok(out)
        })();
        let mut in_place = chunk.batches();
        let mut out = Vec::new();
        let by_ref = in_place
            .try_for_each_ref(|batch| -> Result<_, Error> {
                let mut records = batch.records_in_place();
                while let Some(record) = records.next_ref() {
                    out.push(value_of(record?));
                }
                Ok(std::ops::ControlFlow::Continue(()))
            })
            .map(|()| out);
        assert_eq!(
            format!("{by_ref:?}"),
            format!("{by_iterator:?}"),
            "in place and by value differ"
        );
        assert_eq!(in_place.aborted_records(), owned.aborted_records());
        by_iterator
    }

    /// Producer 1 commits offsets 0-1, producer 2 aborts 2-3 (marker at 5), producer 1's second
    /// transaction 4 commits at 6, with producer 2's abort interleaved.
    fn interleaved() -> Vec<Vec<u8>> {
        vec![
            data_batch(0, 1, true, &["a0", "a1"]),
            data_batch(2, 2, true, &["x2", "x3"]),
            data_batch(4, 1, true, &["a4"]),
            marker(5, 2, ControlKind::Abort),
            marker(6, 1, ControlKind::Commit),
            data_batch(7, 3, false, &["plain7"]),
        ]
    }

    #[test]
    fn header_counts_match_what_decoding_delivers() {
        let compressed = BatchBuilder::new(0)
            .producer(1, 0, 0)
            .transactional(true)
            .compression(krec_batch::Compression::Lz4)
            .record(Some(b"k"), Some(b"a0"), &[])
            .record(Some(b"k"), Some(b"a1"), &[])
            .build();
        let mut with_compressed = interleaved();
        with_compressed[0] = compressed;
        for batches in [interleaved(), with_compressed] {
            for fetch_offset in 0..8 {
                for (read_committed, aborted) in [(false, &[][..]), (true, &[(2, 2)][..])] {
                    let c = chunk(&batches, fetch_offset, 8, aborted, read_committed);
                    let delivered = values(&c).unwrap().len() as u64;
                    let counted = c.count_records().unwrap();
                    assert_eq!(
                        counted, delivered,
                        "fetch offset {fetch_offset}, {read_committed}"
                    );
                }
            }
        }
    }

    #[test]
    fn read_committed_hides_exactly_the_aborted_transaction() {
        let c = chunk(&interleaved(), 0, 8, &[(2, 2)], true);
        let got = values(&c).unwrap();
        let offsets: Vec<i64> = got.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, vec![0, 1, 4, 7]);
        let mut walk = c.batches();
        for batch in walk.by_ref() {
            batch.unwrap();
        }
        assert_eq!(walk.aborted_records(), 2);
    }

    #[test]
    fn read_uncommitted_shows_everything() {
        let c = chunk(&interleaved(), 0, 8, &[(2, 2)], false);
        let offsets: Vec<i64> = values(&c).unwrap().iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, vec![0, 1, 2, 3, 4, 7]);
    }

    #[test]
    fn a_producer_is_aborted_only_from_its_first_offset_until_its_marker() {
        // Producer 2 commits 0, then aborts 2 (marker 3), then commits 4 (marker 5).
        let batches = vec![
            data_batch(0, 2, true, &["c0"]),
            marker(1, 2, ControlKind::Commit),
            data_batch(2, 2, true, &["x2"]),
            marker(3, 2, ControlKind::Abort),
            data_batch(4, 2, true, &["c4"]),
            marker(5, 2, ControlKind::Commit),
        ];
        let c = chunk(&batches, 0, 6, &[(2, 2)], true);
        let offsets: Vec<i64> = values(&c).unwrap().iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, vec![0, 4]);
    }

    #[test]
    fn records_before_the_fetch_offset_are_not_delivered() {
        let c = chunk(
            &[data_batch(10, -1, false, &["a", "b", "c", "d"])],
            12,
            14,
            &[],
            false,
        );
        let got = values(&c).unwrap();
        assert_eq!(got, vec![(12, "c".to_owned()), (13, "d".to_owned())]);
    }

    #[test]
    fn a_chunk_that_ends_before_its_next_offset_is_a_gap() {
        let c = chunk(&[data_batch(0, -1, false, &["a"])], 0, 5, &[], false);
        let error = values(&c).unwrap_err();
        assert!(
            matches!(
                error,
                Error::OffsetGap {
                    expected: 5,
                    actual: 1,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_batch_cut_inside_a_chunk_is_an_error_not_a_quiet_end() {
        let whole = data_batch(0, -1, false, &["a"]);
        let second = data_batch(1, -1, false, &["b"]);
        let c = chunk(&[whole.clone(), second[..20].to_vec()], 0, 1, &[], false);
        let error = values(&c).unwrap_err();
        assert!(
            matches!(&error, Error::CutBatch { position, fetch_offset: 0, .. } if *position == whole.len()),
            "{error}"
        );
    }

    #[test]
    fn a_corrupt_batch_names_topic_partition_and_offset() {
        let mut batch = data_batch(0, -1, false, &["a"]);
        let last = batch.len() - 1;
        batch[last] ^= 0xff; // breaks the CRC
        let c = chunk(&[batch], 0, 1, &[], false);
        let error = values(&c).unwrap_err();
        assert!(
            matches!(&error, Error::Decode { topic, partition: 0, fetch_offset: 0, .. } if topic == "t"),
            "{error}"
        );
    }

    #[test]
    fn under_skip_a_corrupt_batch_is_stepped_over_whole_and_counted() {
        let mut crc_flip = data_batch(1, -1, false, &["b1", "b2"]);
        let last = crc_flip.len() - 1;
        crc_flip[last] ^= 0xff;
        // Its CRC is right: only the record iterator finds a record missing, after "c3".
        let count_lie = BatchBuilder::new(3)
            .record(None, Some(b"c3"), &[])
            .record(None, Some(b"c4"), &[])
            .declared_record_count(3)
            .build();
        let batches = [
            data_batch(0, -1, false, &["a0"]),
            crc_flip.clone(),
            count_lie.clone(),
            data_batch(5, -1, false, &["d5"]),
        ];
        let metrics = Arc::new(Metrics::new(std::time::Duration::from_secs(1)));
        let c = chunk(&batches, 0, 6, &[], false).with_metrics(metrics.clone());
        let (mut written, mut skipped) = (Vec::new(), Vec::new());
        c.batches()
            .try_for_each_ref_or_skip(
                OnCorrupt::Skip,
                |batch| -> Result<_, Error> {
                    for record in batch.records() {
                        written.push(record?.offset());
                    }
                    Ok(std::ops::ControlFlow::Continue(()))
                },
                |skip| {
                    skipped.push(skip.span);
                    Ok(())
                },
            )
            .expect("corrupt batches are skipped");
        assert_eq!(
            written,
            [0, 5],
            "c3 is not written: its batch is skipped whole"
        );
        let first = batches[0].len();
        let span = |position, size, base_offset, last_offset| BatchSpan {
            position,
            size,
            base_offset,
            last_offset,
        };
        assert_eq!(
            skipped,
            [
                span(first, crc_flip.len(), 1, 2),
                span(first + crc_flip.len(), count_lie.len(), 3, 4),
            ]
        );
        let snapshot = metrics.snapshot(Vec::new());
        assert_eq!(snapshot.batches_skipped[&(Arc::from("t"), 0)], 2);
        // The default is to stop at the first one.
        assert!(matches!(values(&c), Err(Error::Decode { .. })));
    }
}
