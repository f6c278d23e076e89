//! The sink of a share-group member (`--share-group`): decode threads write each acquired
//! range out (filtered, formatted, flushed) and then say what became of its records, so that
//! a record is accepted only once it has left krec's output.

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use krec_batch::Skipped;
use krec_consumer::{AcknowledgeType, Acknowledger, ChunkBatchRef, ShareChunk};
use tokio::sync::mpsc::UnboundedSender;

use super::sink::{self, output_error};
use super::ConsumeArgs;
use crate::format::{RecordContext, RecordWriter};
use crate::progress::{Cells, ChunkCount, ChunkOutput, Progress};
use crate::workers::{self, PartitionWorkers, Partitioned};
use crate::Error;

impl Partitioned for ShareChunk {
    fn topic(&self) -> &str {
        self.chunk().topic()
    }

    fn partition(&self) -> i32 {
        self.chunk().partition()
    }
}

/// The decode threads of a share-group member: each writes and flushes its chunks, tells
/// `count_done` when `-c` is satisfied, then acknowledges what became of the records.
pub(super) fn start_share_workers(
    args: &ConsumeArgs,
    progress: &Arc<Progress>,
    acknowledger: &Acknowledger,
    count_done: UnboundedSender<()>,
) -> Result<PartitionWorkers<ShareChunk>, Error> {
    let threads = args.threads.unwrap_or_else(workers::default_threads);
    PartitionWorkers::start(threads, |_| {
        let mut writer = args.format.writer(std::io::stdout()).ok();
        let progress = progress.clone();
        let (acknowledger, count_done) = (acknowledger.clone(), count_done.clone());
        let (limit, on_corrupt) = (args.count, args.on_corrupt);
        let mut cells = Cells::default();
        move |chunk: ShareChunk| {
            let Some(writer) = writer.as_mut() else {
                return Ok(());
            };
            let mut writing = ShareWriting::new(writer, &progress, limit, &chunk);
            let mut corrupt = Vec::new();
            chunk.batches().try_for_each_ref_or_skip(
                on_corrupt,
                |batch| writing.write_batch(batch),
                |skipped| report_skipped(&chunk, &progress, skipped, &mut corrupt),
            )?;
            let done = writing.finish(corrupt)?;
            let output = ChunkOutput {
                records: done.written,
                scanned: done.scanned,
                bytes: chunk.records_bytes().len() as u64,
                next_offset: done.accept_through.map(|offset| offset + 1),
            };
            progress.written(&mut cells, chunk.topic(), chunk.partition(), output);
            if done.reached {
                let _ = count_done.send(());
            }
            // Flushed (and the skipped reported): these records have left the sink. Rejected
            // first; accepting the range then leaves them as they are.
            for &(first, last) in &done.rejected {
                acknowledger.ack_offsets(&chunk, first, last, AcknowledgeType::Reject);
            }
            if let Some(last) = done.accept_through {
                acknowledger.ack_offsets(
                    &chunk,
                    chunk.first_offset(),
                    last,
                    AcknowledgeType::Accept,
                );
            }
            Ok(())
        }
    })
}

/// What [`ShareWriting::finish`] reports.
struct ChunkDone {
    written: u64,
    scanned: u64,
    reached: bool,
    accept_through: Option<i64>,
    rejected: Vec<(i64, i64)>,
}

/// One chunk being written.
struct ShareWriting<'w, W: Write> {
    writer: &'w mut RecordWriter<W>,
    progress: &'w Progress,
    context: RecordContext<'w>,
    /// Cut short by `-c`, only what was written is accepted.
    count: ChunkCount,
    range: (i64, i64),
    written: u64,
    scanned: u64,
    last_written: Option<i64>,
    rejected: Vec<(i64, i64)>,
}

impl<'w, W: Write> ShareWriting<'w, W> {
    fn new(
        writer: &'w mut RecordWriter<W>,
        progress: &'w Progress,
        limit: Option<u64>,
        chunk: &'w ShareChunk,
    ) -> Self {
        let cut = progress.count_reached.load(Ordering::Relaxed);
        Self {
            writer,
            progress,
            context: RecordContext::new(chunk.topic(), chunk.partition())
                .with_delivery_count(chunk.delivery_count()),
            count: ChunkCount::new(limit, cut),
            range: (chunk.first_offset(), chunk.last_offset()),
            written: 0,
            scanned: 0,
            last_written: None,
            rejected: Vec::new(),
        }
    }

    fn write_batch(&mut self, batch: ChunkBatchRef<'_, '_>) -> Result<ControlFlow<()>, Error> {
        if self.count.cut {
            return Ok(ControlFlow::Break(()));
        }
        if batch.batch().is_control() {
            if self.writer.prints_control() {
                for control in batch.control_records() {
                    self.writer
                        .write_control(&self.context, &control?)
                        .map_err(output_error)?;
                }
            }
            return Ok(ControlFlow::Continue(()));
        }
        self.write_records(batch)
    }

    #[inline(never)]
    fn write_records(&mut self, batch: ChunkBatchRef<'_, '_>) -> Result<ControlFlow<()>, Error> {
        let mut records = batch.records_in_place();
        while let Some(record) = records.next_ref() {
            let record = record?;
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
                .write_record(&self.context, record)
                .map_err(output_error)?;
            if wrote {
                self.written += 1;
            } else {
                self.reject(offset, offset);
            }
            self.last_written = Some(offset);
            if self.count.reached {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    fn reject(&mut self, first: i64, last: i64) {
        match self.rejected.last_mut() {
            Some(previous) if previous.1 + 1 == first => previous.1 = last,
            _ => self.rejected.push((first, last)),
        }
    }

    /// Flushes, and says what to acknowledge (`corrupt`: the skipped batches' offsets).
    fn finish(mut self, corrupt: Vec<(i64, i64)>) -> Result<ChunkDone, Error> {
        self.rejected.extend(corrupt);
        self.rejected.sort_unstable();
        self.writer.flush().map_err(output_error)?;
        // Cut short by `-c`: accepted up to the last record written; else the whole range
        // (filtered records, control records and compacted gaps included).
        let accept_through = if self.count.cut {
            self.last_written
        } else {
            Some(self.range.1)
        };
        Ok(ChunkDone {
            written: self.written,
            scanned: self.scanned,
            reached: self.count.reached,
            accept_through,
            rejected: self.rejected,
        })
    }
}

/// Reports a corrupt batch of `chunk` and keeps the acquired offsets it covered, to REJECT.
fn report_skipped(
    chunk: &ShareChunk,
    progress: &Progress,
    skipped: &Skipped,
    corrupt: &mut Vec<(i64, i64)>,
) -> Result<(), Error> {
    sink::report_skipped(chunk, progress, skipped)?;
    let first = skipped.span.base_offset.max(chunk.first_offset());
    let last = skipped.span.last_offset.min(chunk.last_offset());
    if first <= last {
        corrupt.push((first, last));
    }
    Ok(())
}
