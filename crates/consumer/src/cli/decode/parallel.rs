//! `krec decode --threads N`: one segment image decoded on several threads, written in order.
//!
//! The image is cut into runs of whole log entries by reading only each entry's length field
//! (every batch and every top-level legacy message starts with offset, then length). Worker
//! threads decode and format whole runs into their own buffers; the calling thread writes the
//! buffers out in input order. At most `2 * threads` runs are in flight, so memory stays
//! bounded by that many formatted runs whatever the file size.
//!
//! `krec decode` reads files this way run by run while the threads decode
//! ([`decode_reader_parallel`]), so reading is no serial step before decoding and a file never
//! sits in memory whole; an image already in memory is split by range ([`decode_bytes_parallel`]).
//!
//! A run that fails is not reported from the worker's copy: positions in the worker's error are
//! relative to the run. The calling thread decodes that run again in place (walking the whole
//! image up to it; a file is read again for that), which prints the records before the bad spot
//! and reports the error exactly as `--threads 1` does.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
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
        Outcome::FailedRun(run) => Err(report_failed_run(&shared, data, run, out)),
    }
}

/// Why [`decode_reader_parallel`] stopped.
#[derive(Debug)]
pub(super) enum ReaderFailure {
    /// Reading the input failed.
    Read(io::Error),
    /// Decoding or writing failed.
    Decode(DecodeFailure),
    /// The bytes of this run of the input are malformed: the caller decodes the input again
    /// up to the run's end (see [`report_failed_run_in`]) to write the records before the bad
    /// spot and report it with the file's positions.
    FailedRun(Range<usize>),
}

/// Like [`decode_bytes_parallel`], but reads the input while the threads decode it: runs are
/// read into buffers of their own (reused), so reading overlaps decoding and the input never
/// sits in memory whole. The caller bounds the reader's length.
pub(super) fn decode_reader_parallel<R: Read, W: Write>(
    reader: R,
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    format: &FormatArgs,
    parallelism: Parallelism,
    out: &mut W,
) -> Result<DecodeSummary, ReaderFailure> {
    let shared = Shared {
        data: &[],
        config,
        context,
        format,
    };
    let mut runs = RunReader::new(reader, parallelism.run_bytes);
    let next_run = move |spare: Vec<u8>| runs.next_run(spare);
    match run_on_threads(&shared, parallelism.threads, next_run, out) {
        Ok(Outcome::Done(summary)) => Ok(summary),
        Ok(Outcome::FailedRun(run)) => Err(ReaderFailure::FailedRun(run)),
        Err(RunFailure::Read(error)) => Err(ReaderFailure::Read(error)),
        Err(RunFailure::Decode(failure)) => Err(ReaderFailure::Decode(failure)),
    }
}

/// Decodes the failed `run` of a whole input `data` again on this thread, as
/// [`ReaderFailure::FailedRun`] asks, and returns its failure.
pub(super) fn report_failed_run_in<W: Write>(
    data: &[u8],
    run: Range<usize>,
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    format: &FormatArgs,
    out: &mut W,
) -> DecodeFailure {
    let shared = Shared {
        data,
        config,
        context,
        format,
    };
    report_failed_run(&shared, data, run, out)
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
    Owned { start: usize, bytes: Vec<u8> },
}

impl RunInput {
    fn range(&self) -> Range<usize> {
        match self {
            RunInput::Slice(range) => range.clone(),
            RunInput::Owned { start, bytes } => *start..*start + bytes.len(),
        }
    }

    fn bytes<'d>(&'d self, data: &'d [u8]) -> &'d [u8] {
        match self {
            RunInput::Slice(range) => &data[range.clone()],
            RunInput::Owned { bytes, .. } => bytes,
        }
    }

    /// Its buffer, for the next run read, if it has one.
    fn into_buffer(self) -> Option<Vec<u8>> {
        match self {
            RunInput::Slice(_) => None,
            RunInput::Owned { bytes, .. } => Some(bytes),
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
    InputFailed(Range<usize>),
    /// Formatting into memory failed (only a format error can do that).
    OutputFailed(io::Error),
}

/// How the threads' work ended when no read, write or format error stopped it.
enum Outcome {
    Done(DecodeSummary),
    /// This run failed to decode; everything before it was written.
    FailedRun(Range<usize>),
}

/// Why the threads' work stopped with an error.
enum RunFailure {
    Read(io::Error),
    Decode(DecodeFailure),
}

impl From<RunFailure> for DecodeFailure {
    fn from(failure: RunFailure) -> Self {
        match failure {
            RunFailure::Read(error) | RunFailure::Decode(DecodeFailure::Output(error)) => {
                DecodeFailure::Output(error)
            }
            RunFailure::Decode(failure) => failure,
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
    F: FnMut(Vec<u8>) -> io::Result<Option<RunInput>>,
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
        Err(DecodeFailure::Input { .. }) => RunResult::InputFailed(input.range()),
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
    F: FnMut(Vec<u8>) -> io::Result<Option<RunInput>>,
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

/// Decodes a failed run again on this thread, over the whole image up to its end, so the
/// records before the bad spot are written and the error's positions are the file's.
fn report_failed_run<W: Write>(
    shared: &Shared<'_, '_>,
    data: &[u8],
    run: Range<usize>,
    out: &mut W,
) -> DecodeFailure {
    let mut writer = match writer_for(shared.format, &mut *out) {
        Ok(writer) => writer,
        Err(failure) => return failure,
    };
    let end = run.end.min(data.len());
    let mut walk = BatchWalk::new(&data[..end], shared.config);
    // The entries before the run decoded in earlier runs; walking them only finds its start.
    while walk.position() < run.start {
        match walk.next() {
            Some(Ok(_)) => {}
            Some(Err(error)) => return input_failure(error, walk.position()),
            None => break,
        }
    }
    let failure = match decode_walk(walk, shared.context, &mut writer) {
        Err(failure) => failure,
        // Only if the input changed between the two reads (a file being appended to).
        Ok(_) => DecodeFailure::Output(io::Error::other(
            "a run that failed on a worker decoded on the second try (did the input change?)",
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

/// Reads runs of whole entries from a reader, each into a buffer of its own. Lengths on the
/// wire never size an allocation: bodies are read in chunks of at most [`READ_CHUNK`], so a
/// buffer grows only with bytes actually read. An entry whose length is negative makes the
/// rest of the input one last run, and a cut entry ends the last run, for the walk to report.
struct RunReader<R> {
    reader: R,
    position: usize,
    run_bytes: usize,
    ended: bool,
}

/// Most bytes asked of the reader at once.
const READ_CHUNK: u64 = 1 << 20;

impl<R: Read> RunReader<R> {
    fn new(reader: R, run_bytes: usize) -> Self {
        RunReader {
            reader,
            position: 0,
            run_bytes: run_bytes.max(1),
            ended: false,
        }
    }

    fn next_run(&mut self, mut bytes: Vec<u8>) -> io::Result<Option<RunInput>> {
        bytes.clear();
        while !self.ended && bytes.len() < self.run_bytes {
            let header_at = bytes.len();
            if self.read_appending(&mut bytes, ENTRY_HEADER as u64)? < ENTRY_HEADER {
                self.ended = true;
                break;
            }
            match entry_size(&bytes[header_at..]) {
                Some(size) => {
                    let body = size - ENTRY_HEADER;
                    if self.read_appending(&mut bytes, body as u64)? < body {
                        self.ended = true;
                    }
                }
                None => {
                    while self.read_appending(&mut bytes, READ_CHUNK)? > 0 {}
                    self.ended = true;
                }
            }
        }
        if bytes.is_empty() {
            return Ok(None);
        }
        let start = self.position;
        self.position += bytes.len();
        Ok(Some(RunInput::Owned { start, bytes }))
    }

    /// Appends up to `count` bytes; fewer only at the end of the input.
    fn read_appending(&mut self, out: &mut Vec<u8>, count: u64) -> io::Result<usize> {
        let mut read = 0usize;
        let mut remaining = count;
        while remaining > 0 {
            let chunk = remaining.min(READ_CHUNK);
            let got = self.reader.by_ref().take(chunk).read_to_end(out)?;
            read += got;
            remaining -= got as u64;
            if (got as u64) < chunk {
                break;
            }
        }
        Ok(read)
    }
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
    use super::{RunInput, RunReader, Runs, READ_CHUNK};

    /// Every run a reader gives: position and bytes.
    fn read_runs(data: &[u8], run_bytes: usize) -> Vec<(usize, Vec<u8>)> {
        let mut reader = RunReader::new(data, run_bytes);
        let mut runs = Vec::new();
        while let Some(run) = reader.next_run(Vec::new()).expect("reading a slice") {
            match run {
                RunInput::Owned { start, bytes } => runs.push((start, bytes)),
                RunInput::Slice(_) => panic!("a reader's runs own their bytes"),
            }
        }
        runs
    }

    /// A reader cuts the same runs as the in-memory splitter, with the same bytes.
    fn assert_reader_matches_splitter(data: &[u8], run_bytes: usize) {
        let expected: Vec<(usize, Vec<u8>)> = Runs::new(data, run_bytes)
            .map(|range| (range.start, data[range].to_vec()))
            .collect();
        assert_eq!(read_runs(data, run_bytes), expected, "run size {run_bytes}");
    }

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
        assert!(read_runs(&[], 10).is_empty());
    }

    #[test]
    fn a_reader_cuts_the_same_runs_as_the_splitter() {
        let data = entries(&[100, 100, 100, 50, 300]);
        for run_bytes in [1, 99, 100, 150, 1000] {
            assert_reader_matches_splitter(&data, run_bytes);
        }
        let mut negative = entries(&[40, 40, 40]);
        negative[40 + 8..40 + 12].copy_from_slice(&(-5i32).to_be_bytes());
        let mut too_long = entries(&[40, 40]);
        too_long[40 + 8..40 + 12].copy_from_slice(&1000i32.to_be_bytes());
        let mut cut_header = entries(&[40]);
        cut_header.extend_from_slice(&[0; 7]);
        for data in [negative, too_long, cut_header] {
            assert_reader_matches_splitter(&data, 1);
            assert_reader_matches_splitter(&data, 60);
        }
    }

    #[test]
    fn a_huge_length_on_the_wire_allocates_only_what_is_read() {
        let mut data = entries(&[40, 40]);
        data[40 + 8..40 + 12].copy_from_slice(&i32::MAX.to_be_bytes());
        let mut reader = RunReader::new(&data[..], 1);
        let first = reader.next_run(Vec::new()).expect("read").expect("a run");
        assert!(matches!(first, RunInput::Owned { start: 0, .. }));
        let Some(RunInput::Owned { start, bytes }) = reader.next_run(Vec::new()).expect("read")
        else {
            panic!("expected the cut entry as a last run");
        };
        assert_eq!((start, bytes.len()), (40, 40));
        assert!(
            bytes.capacity() as u64 <= 2 * READ_CHUNK,
            "capacity {} for 40 bytes read",
            bytes.capacity()
        );
        assert!(reader.next_run(Vec::new()).expect("read").is_none());
    }
}
