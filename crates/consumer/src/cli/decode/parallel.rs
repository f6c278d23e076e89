//! `krec decode --threads N`: one segment image decoded on several threads, written in order.
//!
//! The image is cut into runs of whole log entries by reading only each entry's length field
//! (every batch and every top-level legacy message starts with offset, then length). Worker
//! threads decode and format whole runs into their own buffers; the calling thread writes the
//! buffers out in input order. At most `2 * threads` runs are in flight, so memory stays
//! bounded by that many formatted runs whatever the file size.
//!
//! `krec decode` reads its input this way run by run while the threads decode
//! ([`decode_reader_parallel`]), so reading is no serial step before decoding and the input
//! never sits in memory whole; an image already in memory is split by range
//! ([`decode_bytes_parallel`]).
//!
//! A run that fails is not reported from the worker: its formatted records are not in the
//! output yet. The worker hands the run back and the calling thread decodes it again, which
//! writes the records before the bad spot and reports the error with the input's positions,
//! exactly as one thread does.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

use krec_batch::{BatchWalk, DecodeConfig};

use super::runs::{Run, RunReadError, RunReader, Runs};
use super::{decode_walk, DecodeFailure, DecodeSummary, ReaderFailure};
use crate::format::{FormatArgs, RecordContext, RecordWriter};

/// Input bytes per run by default: big enough that handing a run to a thread costs
/// nothing next to decoding it, small enough that runs in flight stay a few MiB.
pub const DEFAULT_RUN_BYTES: usize = 1 << 20;

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
    let shared = Shared {
        data,
        config,
        context,
        format,
    };
    let mut runs = Runs::new(data, run_bytes);
    let next_run = move |_spare: Vec<u8>| Ok(runs.next().map(RunInput::Slice));
    match run_on_threads(&shared, parallelism.threads, next_run, out)? {
        Outcome::Done(summary) => Ok(summary),
        Outcome::FailedRun(run) => Err(report_failed_run(&shared, &run, out)),
    }
}

/// Like [`decode_bytes_parallel`], but reads the input while the threads decode it: runs are
/// read into buffers of their own (reused), so reading overlaps decoding and the input never
/// sits in memory whole.
pub(super) fn decode_reader_parallel<R: Read, W: Write>(
    runs: &mut RunReader<R>,
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    format: &FormatArgs,
    threads: NonZeroUsize,
    out: &mut W,
) -> Result<DecodeSummary, ReaderFailure> {
    let shared = Shared {
        data: &[],
        config,
        context,
        format,
    };
    let next_run = |spare: Vec<u8>| Ok(runs.next_run(spare)?.map(RunInput::Owned));
    match run_on_threads(&shared, threads, next_run, out) {
        Ok(Outcome::Done(summary)) => Ok(summary),
        Ok(Outcome::FailedRun(run)) => {
            Err(ReaderFailure::Decode(report_failed_run(&shared, &run, out)))
        }
        Err(RunFailure::Read(error)) => Err(ReaderFailure::Read(error)),
        Err(RunFailure::Decode(failure)) => Err(ReaderFailure::Decode(failure)),
    }
}

/// What every thread reads: the input image (empty when runs are read from a reader), the
/// limits, the context and the output format.
struct Shared<'a, 'c> {
    data: &'a [u8],
    config: &'a DecodeConfig,
    context: &'a RecordContext<'c>,
    format: &'a FormatArgs,
}

/// The bytes of one run: a range of the shared image, or a buffer of its own read from a
/// reader (with its position in the input).
enum RunInput {
    Slice(Range<usize>),
    Owned(Run),
}

impl RunInput {
    /// Byte position of the run in the input.
    fn start(&self) -> usize {
        match self {
            RunInput::Slice(range) => range.start,
            RunInput::Owned(run) => run.start,
        }
    }

    fn bytes<'d>(&'d self, data: &'d [u8]) -> &'d [u8] {
        match self {
            RunInput::Slice(range) => &data[range.clone()],
            RunInput::Owned(run) => &run.bytes,
        }
    }

    /// Its buffer, for the next run read, if it has one.
    fn into_buffer(self) -> Option<Vec<u8>> {
        match self {
            RunInput::Slice(_) => None,
            RunInput::Owned(run) => Some(run.bytes),
        }
    }
}

/// One run for a worker: its index in input order, its bytes, and a buffer to format into.
struct Job {
    index: usize,
    input: RunInput,
    output: Vec<u8>,
}

/// What a worker made of one run; the input comes back for its buffer to be reused.
enum RunResult {
    /// Every entry decoded: the formatted records.
    Done {
        output: Vec<u8>,
        summary: DecodeSummary,
        input: RunInput,
    },
    /// The run holds malformed bytes; the calling thread decodes it again to report them.
    InputFailed(RunInput),
    /// Formatting into memory failed (only a format error can do that).
    OutputFailed(io::Error),
}

/// How the threads' work ended when no read, write or format error stopped it.
enum Outcome {
    Done(DecodeSummary),
    /// This run failed to decode; everything before it was written.
    FailedRun(RunInput),
}

/// Why the threads' work stopped with an error.
enum RunFailure {
    Read(RunReadError),
    Decode(DecodeFailure),
}

impl From<RunFailure> for DecodeFailure {
    fn from(failure: RunFailure) -> Self {
        match failure {
            RunFailure::Decode(failure) => failure,
            // Runs of an image in memory are never read.
            RunFailure::Read(RunReadError::Io(error)) => DecodeFailure::Output(error),
            RunFailure::Read(RunReadError::OverLimit { read }) => DecodeFailure::Output(
                io::Error::other(format!("input over its limit after {read} bytes")),
            ),
        }
    }
}

/// Runs `threads` workers on the runs `next_run` gives (handing it spare buffers to read
/// into), and writes their output to `out` in input order.
fn run_on_threads<W, F>(
    shared: &Shared<'_, '_>,
    threads: NonZeroUsize,
    next_run: F,
    out: &mut W,
) -> Result<Outcome, RunFailure>
where
    W: Write,
    F: FnMut(Vec<u8>) -> Result<Option<RunInput>, RunReadError>,
{
    let (job_sender, job_receiver) = mpsc::channel::<Job>();
    let (result_sender, result_receiver) = mpsc::channel::<(usize, RunResult)>();
    let job_receiver = Mutex::new(job_receiver);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..threads.get() {
            let result_sender = result_sender.clone();
            let (job_receiver, stop) = (&job_receiver, &stop);
            scope.spawn(move || worker(shared, job_receiver, stop, &result_sender));
        }
        drop(result_sender);
        let orderer = Orderer {
            max_in_flight: threads.get() * 2,
            next_run,
        };
        // The job sender is moved in and dropped on return, which lets the workers finish.
        let result = orderer.drive(job_sender, &result_receiver, out);
        stop.store(true, Ordering::Relaxed);
        result
    })
}

fn worker(
    shared: &Shared<'_, '_>,
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
        let result = decode_run(shared, job.input, job.output);
        if results.send((job.index, result)).is_err() {
            return;
        }
    }
}

fn decode_run(shared: &Shared<'_, '_>, input: RunInput, mut output: Vec<u8>) -> RunResult {
    output.clear();
    let mut writer = match shared.format.writer(output) {
        Ok(writer) => writer,
        Err(error) => return RunResult::OutputFailed(io::Error::other(error)),
    };
    let walk = BatchWalk::new(input.bytes(shared.data), shared.config);
    match decode_walk(walk, shared.context, &mut writer) {
        Ok(summary) => match writer.into_inner() {
            Ok(output) => RunResult::Done {
                output,
                summary,
                input,
            },
            Err(error) => RunResult::OutputFailed(error),
        },
        Err(DecodeFailure::Input { .. }) => RunResult::InputFailed(input),
        Err(DecodeFailure::Output(error)) => RunResult::OutputFailed(error),
    }
}

/// The calling thread's side: hands out runs, writes results in input order.
struct Orderer<F> {
    max_in_flight: usize,
    next_run: F,
}

impl<F> Orderer<F>
where
    F: FnMut(Vec<u8>) -> Result<Option<RunInput>, RunReadError>,
{
    fn drive<W: Write>(
        mut self,
        jobs: mpsc::Sender<Job>,
        results: &mpsc::Receiver<(usize, RunResult)>,
        out: &mut W,
    ) -> Result<Outcome, RunFailure> {
        let output_failure = |error| RunFailure::Decode(DecodeFailure::Output(error));
        let mut summary = DecodeSummary::default();
        // Runs handed out and not yet written.
        let mut in_flight = 0usize;
        let mut input_exhausted = false;
        // Results that arrived before an earlier run's; never more than `max_in_flight`.
        let mut arrived: BTreeMap<usize, RunResult> = BTreeMap::new();
        let mut spare_outputs: Vec<Vec<u8>> = Vec::with_capacity(self.max_in_flight);
        let mut spare_inputs: Vec<Vec<u8>> = Vec::with_capacity(self.max_in_flight);
        let mut next_written = 0usize;
        loop {
            while !input_exhausted && in_flight < self.max_in_flight {
                let spare = spare_inputs.pop().unwrap_or_default();
                let Some(input) = (self.next_run)(spare).map_err(RunFailure::Read)? else {
                    input_exhausted = true;
                    break;
                };
                let job = Job {
                    index: next_written + in_flight,
                    input,
                    output: spare_outputs.pop().unwrap_or_default(),
                };
                in_flight += 1;
                jobs.send(job).map_err(|_| workers_gone())?;
            }
            if in_flight == 0 {
                return Ok(Outcome::Done(summary));
            }
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
                    input,
                } => {
                    out.write_all(&output).map_err(output_failure)?;
                    summary.add(run_summary);
                    output.clear();
                    spare_outputs.push(output);
                    spare_inputs.extend(input.into_buffer());
                }
                RunResult::InputFailed(run) => return Ok(Outcome::FailedRun(run)),
                RunResult::OutputFailed(error) => return Err(output_failure(error)),
            }
            in_flight -= 1;
            next_written += 1;
        }
    }
}

/// Decodes a failed run again on this thread from its own bytes, so the records before the
/// bad spot are written; the error's positions are moved to the input's.
fn report_failed_run<W: Write>(
    shared: &Shared<'_, '_>,
    run: &RunInput,
    out: &mut W,
) -> DecodeFailure {
    let mut writer = match writer_for(shared.format, &mut *out) {
        Ok(writer) => writer,
        Err(failure) => return failure,
    };
    let walk = BatchWalk::new(run.bytes(shared.data), shared.config);
    let failure = match decode_walk(walk, shared.context, &mut writer) {
        Err(failure) => failure.with_input_start(run.start()),
        // Decoding the same bytes the same way cannot succeed the second time.
        Ok(_) => DecodeFailure::Output(io::Error::other(
            "a run that failed on a worker decoded on the second try",
        )),
    };
    match writer.flush() {
        Ok(()) => failure,
        Err(error) => DecodeFailure::Output(error),
    }
}

fn workers_gone() -> RunFailure {
    RunFailure::Decode(DecodeFailure::Output(io::Error::other(
        "the decode worker threads stopped",
    )))
}

fn writer_for<W: Write>(format: &FormatArgs, out: W) -> Result<RecordWriter<W>, DecodeFailure> {
    format
        .writer(out)
        .map_err(|error| DecodeFailure::Output(io::Error::other(error)))
}
