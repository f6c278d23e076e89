//! `krec decode --threads N`: one segment image decoded on several threads, written in order.
//!
//! The image is cut into runs of whole log entries by reading only each entry's length field
//! (every batch and every top-level legacy message starts with offset, then length). Worker
//! threads decode and format whole runs into their own buffers; the calling thread writes the
//! buffers out in input order. At most `2 * threads` runs are in flight, so memory stays
//! bounded by that many formatted runs whatever the file size.
//!
//! A run that fails is not reported from the worker's copy: positions in the worker's error are
//! relative to the run. The calling thread decodes that run again in place (walking the whole
//! image up to it), which prints the records before the bad spot and reports the error exactly
//! as `--threads 1` does.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

use krec_batch::{BatchWalk, DecodeConfig};

use super::{decode_walk, input_failure, DecodeFailure, DecodeSummary};
use crate::format::{FormatArgs, RecordContext, RecordWriter};

/// Input bytes per run by default: big enough that handing a run to a thread costs
/// nothing next to decoding it, small enough that runs in flight stay a few MiB.
pub const DEFAULT_RUN_BYTES: usize = 1 << 20;

/// Offset (8 bytes) and length (4 bytes): the start of every batch and legacy message.
const ENTRY_HEADER: usize = 12;

/// How [`decode_bytes_parallel`] splits and spreads the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallelism {
    /// Decode threads; 1 decodes on the calling thread.
    pub threads: NonZeroUsize,
    /// A run ends at the first entry boundary at or past this many bytes from its start.
    pub run_bytes: usize,
}

/// Decodes one whole segment image like [`decode_bytes`](super::decode_bytes), on
/// `parallelism.threads` threads, writing output byte-identical to one thread's to `out`.
///
/// `format` must already have been checked (its writer built once); a format error here is
/// reported as an output failure.
pub fn decode_bytes_parallel<W: Write>(
    data: &[u8],
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    format: &FormatArgs,
    parallelism: Parallelism,
    out: &mut W,
) -> Result<DecodeSummary, DecodeFailure> {
    let run_bytes = parallelism.run_bytes.max(1);
    if parallelism.threads.get() == 1 || data.len() <= run_bytes {
        let mut writer = writer_for(format, &mut *out)?;
        let summary = decode_walk(BatchWalk::new(data, config), context, &mut writer);
        writer.flush().map_err(DecodeFailure::Output)?;
        return summary;
    }
    let max_in_flight = parallelism.threads.get() * 2;
    let (job_sender, job_receiver) = mpsc::channel::<Job>();
    let (result_sender, result_receiver) = mpsc::channel::<(usize, RunResult)>();
    let job_receiver = Mutex::new(job_receiver);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..parallelism.threads.get() {
            let result_sender = result_sender.clone();
            let (job_receiver, stop) = (&job_receiver, &stop);
            scope.spawn(move || {
                worker(
                    data,
                    config,
                    context,
                    format,
                    job_receiver,
                    stop,
                    &result_sender,
                )
            });
        }
        drop(result_sender);
        let orderer = Orderer {
            data,
            config,
            context,
            format,
            max_in_flight,
            runs: Runs::new(data, run_bytes),
        };
        // The job sender is moved in and dropped on return, which lets the workers finish.
        let result = orderer.drive(job_sender, &result_receiver, out);
        stop.store(true, Ordering::Relaxed);
        result
    })
}

/// One run for a worker: its index in input order, its bytes, and a buffer to format into.
struct Job {
    index: usize,
    range: Range<usize>,
    buffer: Vec<u8>,
}

/// What a worker made of one run.
enum RunResult {
    /// Every entry decoded: the formatted records.
    Done {
        output: Vec<u8>,
        summary: DecodeSummary,
    },
    /// The run holds malformed bytes; the calling thread decodes it again to report them.
    InputFailed,
    /// Formatting into memory failed (only a format error can do that).
    OutputFailed(io::Error),
}

fn worker(
    data: &[u8],
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    format: &FormatArgs,
    jobs: &Mutex<mpsc::Receiver<Job>>,
    stop: &AtomicBool,
    results: &mpsc::Sender<(usize, RunResult)>,
) {
    loop {
        // A poisoned lock only means another worker panicked; the queue itself is intact.
        let job = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(job) = job else { return };
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let result = decode_run(&data[job.range], config, context, format, job.buffer);
        if results.send((job.index, result)).is_err() {
            return;
        }
    }
}

fn decode_run(
    run: &[u8],
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    format: &FormatArgs,
    mut buffer: Vec<u8>,
) -> RunResult {
    buffer.clear();
    let mut writer = match format.writer(buffer) {
        Ok(writer) => writer,
        Err(error) => return RunResult::OutputFailed(io::Error::other(error)),
    };
    match decode_walk(BatchWalk::new(run, config), context, &mut writer) {
        Ok(summary) => match writer.into_inner() {
            Ok(output) => RunResult::Done { output, summary },
            Err(error) => RunResult::OutputFailed(error),
        },
        Err(DecodeFailure::Input { .. }) => RunResult::InputFailed,
        Err(DecodeFailure::Output(error)) => RunResult::OutputFailed(error),
    }
}

/// The calling thread's side: hands out runs, writes results in input order.
struct Orderer<'a, 'c> {
    data: &'a [u8],
    config: &'a DecodeConfig,
    context: &'a RecordContext<'c>,
    format: &'a FormatArgs,
    max_in_flight: usize,
    runs: Runs<'a>,
}

impl Orderer<'_, '_> {
    fn drive<W: Write>(
        mut self,
        jobs: mpsc::Sender<Job>,
        results: &mpsc::Receiver<(usize, RunResult)>,
        out: &mut W,
    ) -> Result<DecodeSummary, DecodeFailure> {
        let mut summary = DecodeSummary::default();
        // Ranges of the runs handed out and not yet written, oldest first.
        let mut in_flight: VecDeque<Range<usize>> = VecDeque::with_capacity(self.max_in_flight);
        // Results that arrived before an earlier run's; never more than `max_in_flight`.
        let mut arrived: BTreeMap<usize, RunResult> = BTreeMap::new();
        let mut spare_buffers: Vec<Vec<u8>> = Vec::with_capacity(self.max_in_flight);
        let mut next_written = 0usize;
        loop {
            while in_flight.len() < self.max_in_flight {
                let Some(range) = self.runs.next() else { break };
                let job = Job {
                    index: next_written + in_flight.len(),
                    range: range.clone(),
                    buffer: spare_buffers.pop().unwrap_or_default(),
                };
                in_flight.push_back(range);
                jobs.send(job).map_err(|_| workers_gone())?;
            }
            let Some(range) = in_flight.front().cloned() else {
                return Ok(summary);
            };
            let result = match arrived.remove(&next_written) {
                Some(result) => result,
                None => {
                    let (index, result) = results.recv().map_err(|_| workers_gone())?;
                    arrived.insert(index, result);
                    continue;
                }
            };
            match result {
                RunResult::Done {
                    mut output,
                    summary: run_summary,
                } => {
                    out.write_all(&output).map_err(DecodeFailure::Output)?;
                    summary.add(run_summary);
                    output.clear();
                    spare_buffers.push(output);
                }
                RunResult::InputFailed => {
                    drop(jobs);
                    return Err(self.report_failed_run(range, out));
                }
                RunResult::OutputFailed(error) => return Err(DecodeFailure::Output(error)),
            }
            in_flight.pop_front();
            next_written += 1;
        }
    }

    /// Decodes a failed run again on this thread, over the whole image up to its end, so the
    /// records before the bad spot are written and the error's positions are the file's.
    fn report_failed_run<W: Write>(&self, run: Range<usize>, out: &mut W) -> DecodeFailure {
        let mut writer = match writer_for(self.format, &mut *out) {
            Ok(writer) => writer,
            Err(failure) => return failure,
        };
        let mut walk = BatchWalk::new(&self.data[..run.end], self.config);
        // The entries before the run decoded in earlier runs; walking them only finds its start.
        while walk.position() < run.start {
            match walk.next() {
                Some(Ok(_)) => {}
                Some(Err(error)) => return input_failure(error, walk.position()),
                None => break,
            }
        }
        let failure = match decode_walk(walk, self.context, &mut writer) {
            Err(failure) => failure,
            // Cannot happen (the same bytes failed in the worker); say so rather than succeed.
            Ok(_) => DecodeFailure::Output(io::Error::other(
                "a run that failed on a worker decoded on the second try",
            )),
        };
        match writer.flush() {
            Ok(()) => failure,
            Err(error) => DecodeFailure::Output(error),
        }
    }
}

fn workers_gone() -> DecodeFailure {
    DecodeFailure::Output(io::Error::other("the decode worker threads stopped"))
}

fn writer_for<W: Write>(format: &FormatArgs, out: W) -> Result<RecordWriter<W>, DecodeFailure> {
    format
        .writer(out)
        .map_err(|error| DecodeFailure::Output(io::Error::other(error)))
}

/// Cuts an image into runs of whole entries, reading only length fields. An entry whose
/// length is negative or reaches past the end makes the rest of the image one last run, whose
/// walk then reports it.
struct Runs<'a> {
    data: &'a [u8],
    position: usize,
    run_bytes: usize,
}

impl<'a> Runs<'a> {
    fn new(data: &'a [u8], run_bytes: usize) -> Self {
        Runs {
            data,
            position: 0,
            run_bytes: run_bytes.max(1),
        }
    }
}

impl Iterator for Runs<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let start = self.position;
        if start >= self.data.len() {
            return None;
        }
        let mut end = start;
        while end - start < self.run_bytes && end < self.data.len() {
            match entry_size(&self.data[end..]) {
                Some(size) if size <= self.data.len() - end => end += size,
                _ => end = self.data.len(),
            }
        }
        self.position = end;
        Some(start..end)
    }
}

/// Size of the entry at the start of `rest` (header included), if its length field is there
/// and not negative.
fn entry_size(rest: &[u8]) -> Option<usize> {
    let length = rest.get(8..ENTRY_HEADER)?;
    let length = i32::from_be_bytes(length.try_into().ok()?);
    usize::try_from(length).ok().map(|n| ENTRY_HEADER + n)
}

#[cfg(test)]
mod tests {
    use super::Runs;

    /// Entries of the given total sizes (12-byte header counted), zero-filled bodies.
    fn entries(sizes: &[usize]) -> Vec<u8> {
        let mut data = Vec::new();
        for (offset, &size) in sizes.iter().enumerate() {
            data.extend_from_slice(&(offset as i64).to_be_bytes());
            data.extend_from_slice(&((size - 12) as i32).to_be_bytes());
            data.resize(data.len() + size - 12, 0);
        }
        data
    }

    #[test]
    fn runs_end_on_entry_boundaries_past_the_target() {
        let data = entries(&[100, 100, 100, 50, 300]);
        let runs: Vec<_> = Runs::new(&data, 150).collect();
        assert_eq!(runs, vec![0..200, 200..350, 350..650]);
    }

    #[test]
    fn run_size_one_gives_one_entry_per_run() {
        let data = entries(&[30, 40, 50]);
        let runs: Vec<_> = Runs::new(&data, 1).collect();
        assert_eq!(runs, vec![0..30, 30..70, 70..120]);
    }

    #[test]
    fn bad_lengths_make_the_rest_one_run() {
        let mut data = entries(&[40, 40, 40]);
        // Second entry: a negative length.
        data[40 + 8..40 + 12].copy_from_slice(&(-5i32).to_be_bytes());
        let runs: Vec<_> = Runs::new(&data, 1).collect();
        assert_eq!(runs, vec![0..40, 40..120]);

        let mut data = entries(&[40, 40]);
        // Second entry claims more bytes than there are.
        data[40 + 8..40 + 12].copy_from_slice(&1000i32.to_be_bytes());
        let runs: Vec<_> = Runs::new(&data, 1).collect();
        assert_eq!(runs, vec![0..40, 40..80]);

        // A cut header (fewer than 12 bytes left).
        let mut data = entries(&[40]);
        data.extend_from_slice(&[0; 7]);
        let runs: Vec<_> = Runs::new(&data, 1).collect();
        assert_eq!(runs, vec![0..40, 40..47]);
    }

    #[test]
    fn empty_input_has_no_runs() {
        assert_eq!(Runs::new(&[], 10).next(), None);
    }
}
