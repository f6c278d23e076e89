//! The sink: the decode threads that write chunks out (filtered, formatted and flushed), and
//! say what they wrote: to `-c`, to the ranges, and to a group member's commits.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use krec_batch::{OnCorrupt, Skipped};
use krec_consumer::group::GroupProgress;
use krec_consumer::{ChunkBatchRef, PartitionChunk};

use super::ConsumeArgs;
use crate::corrupt::{report_line, SkipSource};
use crate::format::{RecordContext, RecordWriter};
use crate::progress::{Cells, ChunkCount, ChunkOutput, OutputWorkers, Progress};
use crate::range::{PartitionEnd, RangeEnds};
use crate::workers::{self, PartitionWorkers};
use crate::Error;

/// What the decode threads report to, besides the progress counters.
#[derive(Clone, Debug)]
pub(super) struct Outputs {
    /// Told when `-c` is satisfied.
    pub(super) count_done: tokio::sync::mpsc::UnboundedSender<()>,
    /// For a group member: what was written, so only that is committed, and which chunks
    /// are still its own to write (none of a lost partition).
    pub(super) group: Option<GroupProgress>,
    /// Where bounded ranges end.
    pub(super) range_ends: Arc<RangeEnds>,
    /// Told when a partition's records passed its range's end.
    pub(super) range_done: tokio::sync::mpsc::UnboundedSender<(String, i32)>,
}

/// The decode threads of `krec consume`: each writes and flushes its chunks, says on
/// `count_done` when `-c` is satisfied, and, for a group member, marks what it wrote in
/// `group`, so only records that left the sink are committed.
pub(super) fn start_output_workers(
    args: &ConsumeArgs,
    progress: &Arc<Progress>,
    outputs: Outputs,
) -> Result<OutputWorkers, Error> {
    let threads = args.threads.unwrap_or_else(workers::default_threads);
    let workers = PartitionWorkers::start(threads, |_| {
        let writer = args.format.writer(std::io::stdout());
        let progress = progress.clone();
        let Outputs {
            count_done,
            group,
            range_ends,
            range_done,
        } = outputs.clone();
        let limit = args.count;
        let on_corrupt = args.on_corrupt;
        let mut writer = writer.ok();
        let mut cells = Cells::default();
        move |chunk: PartitionChunk| {
            let Some(writer) = writer.as_mut() else {
                return Ok(());
            };
            if group.as_ref().is_some_and(|g| !g.owns(&chunk)) {
                // Lost since it was fetched: another member may be writing it already.
                let dropped = ChunkOutput {
                    records: 0,
                    scanned: 0,
                    bytes: 0,
                    next_offset: None,
                };
                progress.written(&mut cells, chunk.topic(), chunk.partition(), dropped);
                return Ok(());
            }
            let end = range_ends.get(chunk.topic(), chunk.partition());
            let outcome = write_chunk(&chunk, writer, on_corrupt, &progress, (limit, end))?;
            if outcome.passed_end {
                let _ = range_done.send((chunk.topic().to_owned(), chunk.partition()));
            }
            let output = ChunkOutput {
                records: outcome.records,
                scanned: outcome.scanned,
                bytes: chunk.records_bytes().len() as u64,
                next_offset: outcome.next_offset,
            };
            progress.written(&mut cells, chunk.topic(), chunk.partition(), output);
            // Flushed by write_chunk, and its skipped batches reported: these records have
            // left the sink, so they may be committed.
            if let (Some(group), Some(next_offset)) = (&group, outcome.next_offset) {
                group.processed_before(&chunk, next_offset);
            }
            if outcome.reached {
                let _ = count_done.send(());
            }
            Ok(())
        }
    })?;
    Ok(OutputWorkers::new(workers, progress.clone()))
}

/// What writing one chunk did.
#[derive(Debug, Clone, Copy)]
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
}

/// Decodes one chunk, writes its records and flushes them; reports each corrupt batch that
/// `on_corrupt` skips on stderr (before returning, so before the chunk can be committed).
/// `(limit, end)`: `-c`'s count and where the partition's range ends.
fn write_chunk<W: Write>(
    chunk: &PartitionChunk,
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
        });
    }
    let context = RecordContext::new(chunk.topic(), chunk.partition());
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
    };
    // Batches parsed in place and lent (`try_for_each_ref`): moving each out by value costs
    // one-record batches a measurable share of their CPU.
    chunk.batches().try_for_each_ref_or_skip(
        on_corrupt,
        |batch| state.write_batch(batch),
        |skipped| report_skipped(chunk, progress, skipped),
    )?;
    let ChunkWriting {
        writer,
        written,
        scanned,
        last_written,
        count,
        passed_end,
        ..
    } = state;
    writer.flush().map_err(output_error)?;
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
    })
}

/// One report line on stderr for a skipped corrupt batch of `chunk`, counted in `progress`.
/// Reports a corrupt batch stepped over in `chunk` (one stderr line) and counts it.
pub(super) fn report_skipped(
    chunk: &PartitionChunk,
    progress: &Progress,
    skipped: &Skipped,
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
            self.writer
                .write_record(self.context, record)
                .map_err(output_error)?;
            self.last_written = Some(record.offset());
            self.written += 1;
            if self.count.reached {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}
