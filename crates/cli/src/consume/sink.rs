//! The sink: the decode threads that write chunks out (filtered, formatted and flushed), and
//! say what they wrote: to `-c`, to the ranges, to a group member's commits, and to a share
//! group (each record accepted once it has left the sink, or rejected).

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use krec_batch::{OnCorrupt, Skipped};
use krec_consumer::group::GroupProgress;
use krec_consumer::{AcknowledgeType, Acknowledger, ChunkBatchRef, PartitionChunk, ShareChunk};

use super::ConsumeArgs;
use crate::corrupt::{report_line, SkipSource};
use crate::format::{RecordContext, RecordWriter};
use crate::progress::{Cells, ChunkCount, ChunkOutput, OutputWorkers, Progress};
use crate::range::{PartitionEnd, RangeEnds};
use crate::workers::{self, PartitionWorkers, Partitioned};
use crate::Error;

/// What the decode threads write: a consumer's or group member's chunk, or the records
/// acquired for a share-group member.
#[derive(Debug)]
pub(super) enum OutputChunk {
    /// Fetched by a consumer or a group member.
    Read(PartitionChunk),
    /// Acquired for a share-group member (`--share-group`).
    Shared(ShareChunk),
}

impl OutputChunk {
    fn chunk(&self) -> &PartitionChunk {
        match self {
            Self::Read(chunk) => chunk,
            Self::Shared(shared) => shared.chunk(),
        }
    }

    fn context(&self) -> RecordContext<'_> {
        let context = RecordContext::new(self.topic(), self.partition());
        match self {
            Self::Read(_) => context,
            Self::Shared(shared) => context.with_delivery_count(shared.delivery_count()),
        }
    }
}

impl Partitioned for OutputChunk {
    fn topic(&self) -> &str {
        self.chunk().topic()
    }

    fn partition(&self) -> i32 {
        self.chunk().partition()
    }

    fn fetch_offset(&self) -> i64 {
        self.chunk().fetch_offset()
    }
}

/// What the decode threads report to, besides the progress counters.
#[derive(Clone, Debug)]
pub(super) struct Outputs {
    /// Told when `-c` is satisfied.
    pub(super) count_done: tokio::sync::mpsc::UnboundedSender<()>,
    /// For a group member: what was written, so only that is committed, and which chunks
    /// are still its own to write (none of a lost partition).
    pub(super) group: Option<GroupProgress>,
    /// For a share-group member: where the records written (or rejected) are acknowledged.
    pub(super) acknowledger: Option<Acknowledger>,
    /// Where bounded ranges end.
    pub(super) range_ends: Arc<RangeEnds>,
    /// Told when a partition's records passed its range's end.
    pub(super) range_done: tokio::sync::mpsc::UnboundedSender<(String, i32)>,
}

/// The decode threads of `krec consume`: each writes and flushes its chunks, says on
/// `count_done` when `-c` is satisfied, and says what became of the records: for a group
/// member, marked in `group` (only records that left the sink are committed); for a share
/// group member, acknowledged.
pub(super) fn start_output_workers(
    args: &ConsumeArgs,
    progress: &Arc<Progress>,
    outputs: Outputs,
) -> Result<OutputWorkers<OutputChunk>, Error> {
    let threads = args.threads.unwrap_or_else(workers::default_threads);
    let workers = PartitionWorkers::start(threads, |_| {
        let mut writer = args.format.writer(std::io::stdout()).ok();
        let progress = progress.clone();
        let outputs = outputs.clone();
        let (limit, on_corrupt) = (args.count, args.on_corrupt);
        let mut cells = Cells::default();
        move |chunk: OutputChunk| {
            let Some(writer) = writer.as_mut() else {
                return Ok(());
            };
            let (topic, partition) = (chunk.topic(), chunk.partition());
            if outputs
                .group
                .as_ref()
                .is_some_and(|g| !g.owns(chunk.chunk()))
            {
                // Lost since it was fetched: another member may be writing it already.
                let dropped = ChunkOutput {
                    records: 0,
                    scanned: 0,
                    bytes: 0,
                    next_offset: None,
                };
                progress.written(&mut cells, topic, partition, dropped);
                return Ok(());
            }
            let end = outputs.range_ends.get(topic, partition);
            let outcome = write_chunk(&chunk, writer, on_corrupt, &progress, (limit, end))?;
            if outcome.passed_end {
                let _ = outputs.range_done.send((topic.to_owned(), partition));
            }
            let output = ChunkOutput {
                records: outcome.records,
                scanned: outcome.scanned,
                bytes: chunk.chunk().records_bytes().len() as u64,
                next_offset: outcome.next_offset,
            };
            progress.written(&mut cells, topic, partition, output);
            // Flushed by write_chunk, and its skipped batches reported: these records have
            // left the sink, so they may be committed, or acknowledged.
            outputs.written_out(&chunk, &outcome);
            if outcome.reached {
                let _ = outputs.count_done.send(());
            }
            Ok(())
        }
    })?;
    Ok(OutputWorkers::new(workers, progress.clone()))
}

impl Outputs {
    /// Says what became of a chunk written out: a group member's partition is committable up
    /// to where it was written; a share group's records are rejected (undecodable, corrupt)
    /// or accepted (written, filtered out, or not records at all).
    fn written_out(&self, chunk: &OutputChunk, outcome: &ChunkWritten) {
        match chunk {
            OutputChunk::Read(chunk) => {
                if let (Some(group), Some(next_offset)) = (&self.group, outcome.next_offset) {
                    group.processed_before(chunk, next_offset);
                }
            }
            OutputChunk::Shared(chunk) => {
                let Some(acknowledger) = &self.acknowledger else {
                    return;
                };
                // Rejected first; accepting the range then leaves them as they are.
                for &(first, last) in &outcome.rejected {
                    acknowledger.ack_offsets(chunk, first, last, AcknowledgeType::Reject);
                }
                if let Some(next_offset) = outcome.next_offset {
                    let first = chunk.first_offset();
                    acknowledger.ack_offsets(
                        chunk,
                        first,
                        next_offset - 1,
                        AcknowledgeType::Accept,
                    );
                }
            }
        }
    }
}

/// What writing one chunk did.
#[derive(Debug, Clone)]
struct ChunkWritten {
    /// This chunk satisfied `-c`.
    reached: bool,
    /// A record of this chunk is past the partition's range.
    passed_end: bool,
    /// Records written.
    records: u64,
    /// Data records decoded, matching the filters or not.
    scanned: u64,
    /// The partition is written out up to here (None: nothing of it was written).
    next_offset: Option<i64>,
    /// Offsets that could not be written (undecodable records, corrupt batches), ordered.
    rejected: Vec<(i64, i64)>,
}

/// Decodes one chunk, writes its records and flushes them; reports each corrupt batch that
/// `on_corrupt` skips on stderr (before returning, so before the chunk can be committed).
/// `(limit, end)`: `-c`'s count and where the partition's range ends.
fn write_chunk<W: Write>(
    output: &OutputChunk,
    writer: &mut RecordWriter<W>,
    on_corrupt: OnCorrupt,
    progress: &Progress,
    (limit, end): (Option<u64>, Option<PartitionEnd>),
) -> Result<ChunkWritten, Error> {
    if progress.count_reached.load(Ordering::Relaxed) {
        return Ok(ChunkWritten {
            reached: false,
            passed_end: false,
            records: 0,
            scanned: 0,
            next_offset: None,
            rejected: Vec::new(),
        });
    }
    let chunk = output.chunk();
    let context = output.context();
    let mut state = ChunkWriting {
        writer,
        context: &context,
        progress,
        count: ChunkCount::new(limit, false),
        end,
        written: 0,
        scanned: 0,
        last_written: None,
        passed_end: false,
        rejected: Vec::new(),
    };
    let mut corrupt = Vec::new();
    // Batches parsed in place and lent (`try_for_each_ref`): moving each out by value costs
    // one-record batches a measurable share of their CPU.
    chunk.batches().try_for_each_ref_or_skip(
        on_corrupt,
        |batch| state.write_batch(batch),
        |skipped| report_skipped(chunk, progress, skipped, &mut corrupt),
    )?;
    let ChunkWriting {
        writer,
        written,
        scanned,
        last_written,
        count,
        passed_end,
        mut rejected,
        ..
    } = state;
    writer.flush().map_err(output_error)?;
    rejected.extend(corrupt);
    rejected.sort_unstable();
    // Cut short by `-c` (here or on another thread): written up to the last record written, if
    // any; otherwise the whole chunk (control records and compacted gaps included).
    let next_offset = if count.cut {
        last_written.map(|offset| offset + 1)
    } else {
        Some(chunk.next_offset())
    };
    Ok(ChunkWritten {
        reached: count.reached,
        passed_end,
        records: written,
        scanned,
        next_offset,
        rejected,
    })
}

/// Reports a corrupt batch stepped over in `chunk` (one stderr line), counts it, and keeps
/// the offsets of the chunk it covered in `corrupt`.
fn report_skipped(
    chunk: &PartitionChunk,
    progress: &Progress,
    skipped: &Skipped,
    corrupt: &mut Vec<(i64, i64)>,
) -> Result<(), Error> {
    let source = SkipSource {
        command: "consume",
        file: None,
        topic: Some(chunk.topic()),
        partition: Some(chunk.partition()),
        fetch_offset: Some(chunk.fetch_offset()),
    };
    let line = report_line(&source, skipped);
    writeln!(io::stderr().lock(), "{line}").map_err(|source| Error::Io {
        context: "reporting a skipped batch".to_owned(),
        source,
    })?;
    progress.batches_skipped.fetch_add(1, Ordering::Relaxed);
    let first = skipped.span.base_offset.max(chunk.fetch_offset());
    let last = skipped.span.last_offset.min(chunk.until_offset() - 1);
    if first <= last {
        corrupt.push((first, last));
    }
    Ok(())
}

pub(super) fn output_error(source: io::Error) -> Error {
    Error::output("writing records", source)
}

/// What [`write_chunk`] keeps while it writes a chunk's batches.
struct ChunkWriting<'w, W: Write> {
    writer: &'w mut RecordWriter<W>,
    context: &'w RecordContext<'w>,
    progress: &'w Progress,
    count: ChunkCount,
    /// Where the partition's range ends.
    end: Option<PartitionEnd>,
    written: u64,
    /// Data records decoded, written or not (filters).
    scanned: u64,
    last_written: Option<i64>,
    /// A record past the range's end was met: nothing after it is written.
    passed_end: bool,
    /// Offsets of records that could not be written (undecodable), as ranges.
    rejected: Vec<(i64, i64)>,
}

impl<W: Write> ChunkWriting<'_, W> {
    /// Writes one batch: its control records if they are printed, else its data records.
    fn write_batch(&mut self, batch: ChunkBatchRef<'_, '_>) -> Result<ControlFlow<()>, Error> {
        if !batch.batch().is_control() {
            return self.write_records(batch);
        }
        if self.writer.prints_control() {
            for control in batch.control_records() {
                self.writer
                    .write_control(self.context, &control?)
                    .map_err(output_error)?;
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Writes the data records of `batch`; `Break` once `-c`'s count is reached.
    // A function of its own, so that the record loop gets the record iterator inlined (inside
    // the batch closure the compiler called it once per record).
    #[inline(never)]
    fn write_records(&mut self, batch: ChunkBatchRef<'_, '_>) -> Result<ControlFlow<()>, Error> {
        let mut records = batch.records_in_place();
        while let Some(record) = records.next_ref() {
            let record = record?;
            if let Some(end) = &self.end {
                if end.excludes(record.offset(), record.timestamp()) {
                    self.passed_end = true;
                    return Ok(ControlFlow::Break(()));
                }
                if record.offset() < end.from {
                    continue;
                }
            }
            self.scanned += 1;
            if !self.writer.admits(record) {
                continue;
            }
            if !self.count.claim(self.progress) {
                return Ok(ControlFlow::Break(()));
            }
            let offset = record.offset();
            let wrote = self
                .writer
                .write_record(self.context, record)
                .map_err(output_error)?;
            if wrote {
                self.written += 1;
            } else {
                self.reject(offset);
            }
            self.last_written = Some(offset);
            if self.count.reached {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    fn reject(&mut self, offset: i64) {
        match self.rejected.last_mut() {
            Some(previous) if previous.1 + 1 == offset => previous.1 = offset,
            _ => self.rejected.push((offset, offset)),
        }
    }
}
