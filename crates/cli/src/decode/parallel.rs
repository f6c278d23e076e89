//! `krec decode --threads N`: inputs decoded on several threads, written in order.
//!
//! An input is cut into runs of whole log entries (see [`runs`](super::runs)). Worker threads
//! decode and format whole runs into buffers of their own; the calling thread reads the next
//! runs meanwhile and writes the formatted buffers out in input order. At most `2 * threads`
//! runs are in flight, so memory stays bounded by that many runs, read and formatted,
//! whatever the input size.
//!
//! One [`SegmentWorkers`] serves every file of a command: its threads, their per-thread
//! decompression buffers and the run buffers live from the first file to the last (started per
//! file, each file paid for new threads and fresh buffers). The files are one stream of runs
//! tagged with their file ([`decode_sources_parallel`]), so the next file is read while the
//! last runs of the previous one decode.
//!
//! A run that fails is not reported from the worker: its formatted records are not in the
//! output yet. The worker hands the run back and the calling thread decodes it again, which
//! writes the records before the bad spot and reports the error with the input's positions,
//! exactly as one thread does.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use krec_batch::{BatchWalk, DecodeConfig, OnCorrupt, Skipped};

use super::runs::{Run, Runs};
use super::{decode_walk, DecodeFailure, DecodeSummary, Skips};
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
        let walk = BatchWalk::new(data, config);
        let summary = decode_walk(walk, context, &mut writer, &mut Skips::stop());
        writer.flush().map_err(DecodeFailure::Output)?;
        return summary;
    }
    with_segment_workers(
        config,
        format,
        parallelism.threads,
        OnCorrupt::Stop,
        |workers| {
            let mut runs = Runs::new(data, run_bytes);
            let next_run = move |_spare: Vec<u8>| {
                Ok::<_, Infallible>(runs.next().map(|range| SourcedRun {
                    input: RunInput::Slice {
                        start: range.start,
                        bytes: &data[range],
                    },
                    source: 0,
                    context,
                }))
            };
            match workers.decode(next_run, out, &mut |_, _| {}) {
                Ok(Outcome::Done(summary)) => Ok(summary),
                Ok(Outcome::FailedRun(run)) => Err(report_failed_run(
                    &workers.decoding(),
                    &run,
                    out,
                    &mut |_, _| {},
                )),
                Err(SourcesFailure::Output(error)) => Err(DecodeFailure::Output(error)),
                Err(SourcesFailure::Input { failure, .. }) => Err(failure),
                Err(SourcesFailure::Read(never)) => match never {},
            }
        },
    )
}

/// Starts `threads` decode threads for `body` and stops them when it returns; they skip
/// corrupt batches as `on_corrupt` says.
pub(super) fn with_segment_workers<'p, T>(
    config: &'p DecodeConfig,
    format: &'p FormatArgs,
    threads: NonZeroUsize,
    on_corrupt: OnCorrupt,
    body: impl FnOnce(&mut SegmentWorkers<'p>) -> T,
) -> T {
    let (job_sender, job_receiver) = mpsc::channel::<Job<'p>>();
    let results = Arc::new(ResultBoard::new(threads.get()));
    let job_receiver = Arc::new(Mutex::new(job_receiver));
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|scope| {
        for _ in 0..threads.get() {
            let (jobs, stop) = (Arc::clone(&job_receiver), Arc::clone(&stop));
            let results = Arc::clone(&results);
            scope.spawn(move || {
                let _gone = WorkerGone(&results);
                let decoding = Decoding {
                    config,
                    format,
                    on_corrupt,
                };
                worker(&decoding, &jobs, &stop, &results);
            });
        }
        let mut workers = SegmentWorkers {
            config,
            format,
            on_corrupt,
            max_in_flight: threads.get() * 2,
            jobs: job_sender,
            results,
            stop,
            spare_outputs: Vec::new(),
            spare_inputs: Vec::new(),
            broken: false,
        };
        // Dropping the workers drops the job sender, which lets the workers finish.
        body(&mut workers)
    })
}

/// Decode threads and the buffers they pass around, shared by every input of a command.
pub(super) struct SegmentWorkers<'p> {
    config: &'p DecodeConfig,
    format: &'p FormatArgs,
    on_corrupt: OnCorrupt,
    max_in_flight: usize,
    jobs: mpsc::Sender<Job<'p>>,
    results: Arc<ResultBoard<'p>>,
    stop: Arc<AtomicBool>,
    /// Formatted-output buffers written out and free for the next runs.
    spare_outputs: Vec<Vec<u8>>,
    /// Input buffers decoded and free for the next runs read.
    spare_inputs: Vec<Vec<u8>>,
    /// An input stopped with runs still in flight; their results would mix with the next
    /// input's, so the workers take no more work.
    broken: bool,
}

impl Drop for SegmentWorkers<'_> {
    fn drop(&mut self) {
        // Queued runs of an input that failed are not worth decoding.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Why [`decode_sources_parallel`] stopped.
#[derive(Debug)]
pub(super) enum SourcesFailure<E> {
    /// Reading or opening a source failed (after the runs read before were written).
    Read(E),
    /// A run of source `source` is malformed; the records before the bad spot were written.
    Input {
        /// Index of the source, as the runs were tagged.
        source: usize,
        /// What is wrong, with the source's positions.
        failure: DecodeFailure,
    },
    /// Writing the output failed.
    Output(io::Error),
}

impl<E> SourcesFailure<E> {
    /// A decode failure of a run of `source`.
    fn of_run(source: usize, failure: DecodeFailure) -> Self {
        match failure {
            DecodeFailure::Output(error) => SourcesFailure::Output(error),
            failure => SourcesFailure::Input { source, failure },
        }
    }
}

/// Decodes the runs `next_run` reads (from any number of sources, in order) on the
/// segment workers, writing their records in order, as [`decode_runs`](super::stream::decode_runs)
/// does for each source on one thread. The runs of the next source are read while the last
/// ones of the previous source decode, so the threads do not wait at each file's end.
/// Skipped corrupt batches go to `report` with their source, once the records before them
/// are written.
pub(super) fn decode_sources_parallel<'p, W, F, E>(
    workers: &mut SegmentWorkers<'p>,
    next_run: F,
    out: &mut W,
    report: &mut dyn FnMut(usize, Skipped),
) -> Result<DecodeSummary, SourcesFailure<E>>
where
    W: Write,
    F: FnMut(Vec<u8>) -> Result<Option<SourcedRun<'p>>, E>,
{
    match workers.decode(next_run, out, report) {
        Ok(Outcome::Done(summary)) => Ok(summary),
        Ok(Outcome::FailedRun(run)) => Err(SourcesFailure::of_run(
            run.source,
            report_failed_run(&workers.decoding(), &run, out, report),
        )),
        // The workers themselves only fail to write (or to reach its threads): no run's source.
        Err(failure) => Err(failure),
    }
}

/// A run with where it comes from: the index of its source (a file of the command line) and
/// the topic and partition its records are printed with.
pub(super) struct SourcedRun<'p> {
    /// The run's bytes.
    pub(super) input: RunInput<'p>,
    /// Index of its source.
    pub(super) source: usize,
    /// Context of its records.
    pub(super) context: &'p RecordContext<'p>,
}

/// The bytes of one run: a slice of an image in memory, or a buffer of its own read from a
/// reader; either with its position in the input.
pub(super) enum RunInput<'p> {
    Slice { start: usize, bytes: &'p [u8] },
    Owned(Run),
}

impl RunInput<'_> {
    /// Byte position of the run in the input.
    fn start(&self) -> usize {
        match self {
            RunInput::Slice { start, .. } => *start,
            RunInput::Owned(run) => run.start,
        }
    }

    /// The run's bytes.
    fn bytes(&self) -> &[u8] {
        match self {
            RunInput::Slice { bytes, .. } => bytes,
            RunInput::Owned(run) => run.bytes(),
        }
    }

    /// Its buffer, for the next run read, if it has one.
    fn into_buffer(self) -> Option<Vec<u8>> {
        match self {
            RunInput::Slice { .. } => None,
            RunInput::Owned(run) => Some(run.into_buffer()),
        }
    }
}

/// One run for a worker: its index in input order, its bytes, the context of its input, and a
/// buffer to format into.
struct Job<'p> {
    index: usize,
    run: SourcedRun<'p>,
    output: Vec<u8>,
}

/// What a worker made of one run; the input comes back for its buffer to be reused.
enum RunResult<'p> {
    /// Every entry decoded: the formatted records.
    Done {
        output: Vec<u8>,
        summary: DecodeSummary,
        input: RunInput<'p>,
        /// Index of the run's source.
        source: usize,
        /// Corrupt batches skipped, with the input's positions.
        skipped: Vec<Skipped>,
    },
    /// The run holds malformed bytes; the calling thread decodes it again to report them.
    InputFailed(SourcedRun<'p>),
    /// Formatting into memory failed (only a format error can do that).
    OutputFailed(io::Error),
}

/// How one input's runs ended when no read, write or format error stopped them.
enum Outcome<'p> {
    Done(DecodeSummary),
    /// This run failed to decode; everything before it was written.
    FailedRun(SourcedRun<'p>),
}

/// What every decode of a run needs: limits, output format, corrupt-batch policy.
struct Decoding<'p> {
    config: &'p DecodeConfig,
    format: &'p FormatArgs,
    on_corrupt: OnCorrupt,
}

fn worker<'p>(
    decoding: &Decoding<'_>,
    jobs: &Mutex<mpsc::Receiver<Job<'p>>>,
    stop: &AtomicBool,
    results: &ResultBoard<'p>,
) {
    loop {
        // A poisoned lock only means another worker panicked; the queue itself is intact.
        let job = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(job) = job else { return };
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let result = decode_run(decoding, job.run, job.output);
        results.put(job.index, result);
    }
}

fn decode_run<'p>(decoding: &Decoding<'_>, run: SourcedRun<'p>, output: Vec<u8>) -> RunResult<'p> {
    // Formatted straight into the run's output buffer: a writer's own buffer would copy
    // every byte once more.
    let mut writer = match decoding.format.writer(io::sink()) {
        Ok(writer) => writer.gathering_into(output),
        Err(error) => return RunResult::OutputFailed(io::Error::other(error)),
    };
    let walk = BatchWalk::new(run.input.bytes(), decoding.config);
    let mut skips = Skips::new(decoding.on_corrupt);
    match decode_walk(walk, run.context, &mut writer, &mut skips) {
        Ok(summary) => RunResult::Done {
            output: writer.into_buffer(),
            summary,
            skipped: skips.drain_from(run.input.start()).collect(),
            source: run.source,
            input: run.input,
        },
        Err(DecodeFailure::Output(error)) => RunResult::OutputFailed(error),
        // A walk of bytes in memory reads nothing: its other failures are the input's.
        Err(DecodeFailure::Input { .. } | DecodeFailure::Read(_)) => RunResult::InputFailed(run),
    }
}

impl<'p> SegmentWorkers<'p> {
    fn decoding(&self) -> Decoding<'p> {
        Decoding {
            config: self.config,
            format: self.format,
            on_corrupt: self.on_corrupt,
        }
    }

    /// Hands the runs `next_run` gives (reading into the spare buffers it is handed) to the
    /// threads, and writes their output to `out` in input order, each run's skipped batches
    /// to `report` after its records.
    fn decode<W, F, E>(
        &mut self,
        mut next_run: F,
        out: &mut W,
        report: &mut dyn FnMut(usize, Skipped),
    ) -> Result<Outcome<'p>, SourcesFailure<E>>
    where
        W: Write,
        F: FnMut(Vec<u8>) -> Result<Option<SourcedRun<'p>>, E>,
    {
        if self.broken {
            return Err(SourcesFailure::Output(io::Error::other(
                "the decode threads stopped after an earlier failure",
            )));
        }
        let mut in_flight = 0usize;
        let result = self.drive(&mut next_run, out, &mut in_flight, report);
        if in_flight > 0 {
            self.broken = true;
            self.stop.store(true, Ordering::Relaxed);
        }
        result
    }

    /// Keeps up to `max_in_flight` runs with the threads and writes their results in input
    /// order, until the input ends and every run is written, or something fails.
    fn drive<W, F, E>(
        &mut self,
        next_run: &mut F,
        out: &mut W,
        in_flight: &mut usize,
        report: &mut dyn FnMut(usize, Skipped),
    ) -> Result<Outcome<'p>, SourcesFailure<E>>
    where
        W: Write,
        F: FnMut(Vec<u8>) -> Result<Option<SourcedRun<'p>>, E>,
    {
        let mut summary = DecodeSummary::default();
        let mut input_exhausted = false;
        // A read that failed: reported once the runs read before it are written, as one
        // thread does.
        let mut read_failure = None;
        // Results taken from the board: those of `next_written` and the runs right after it.
        let mut ready: VecDeque<RunResult<'p>> = VecDeque::new();
        let mut next_written = 0usize;
        loop {
            if !input_exhausted {
                input_exhausted =
                    self.send_runs(next_run, next_written, in_flight, &mut read_failure)?;
            }
            if *in_flight == 0 {
                return match read_failure {
                    Some(error) => Err(SourcesFailure::Read(error)),
                    None => Ok(Outcome::Done(summary)),
                };
            }
            let result = match ready.pop_front() {
                Some(result) => result,
                None => {
                    ready.extend(
                        self.results
                            .take_from(next_written)
                            .ok_or_else(workers_gone)?,
                    );
                    continue;
                }
            };
            *in_flight -= 1;
            next_written += 1;
            if let Some(outcome) = self.write_result(result, out, report, &mut summary)? {
                return Ok(outcome);
            }
        }
    }

    /// Hands runs to the threads until `max_in_flight` are in flight or the input ends:
    /// true when it has ended (a failed read ends it, kept in `read_failure`).
    fn send_runs<F, E>(
        &mut self,
        next_run: &mut F,
        next_written: usize,
        in_flight: &mut usize,
        read_failure: &mut Option<E>,
    ) -> Result<bool, SourcesFailure<E>>
    where
        F: FnMut(Vec<u8>) -> Result<Option<SourcedRun<'p>>, E>,
    {
        while *in_flight < self.max_in_flight {
            let spare = self.spare_inputs.pop().unwrap_or_default();
            let input = match next_run(spare) {
                Ok(input) => input,
                Err(error) => {
                    *read_failure = Some(error);
                    None
                }
            };
            let Some(run) = input else {
                return Ok(true);
            };
            let job = Job {
                index: next_written + *in_flight,
                run,
                output: self.spare_outputs.pop().unwrap_or_default(),
            };
            self.jobs.send(job).map_err(|_| workers_gone())?;
            *in_flight += 1;
        }
        Ok(false)
    }

    /// Writes a run's output to `out` and its skipped batches to `report`, keeping its
    /// buffers for the next runs: the outcome when the run failed.
    fn write_result<W: Write, E>(
        &mut self,
        result: RunResult<'p>,
        out: &mut W,
        report: &mut dyn FnMut(usize, Skipped),
        summary: &mut DecodeSummary,
    ) -> Result<Option<Outcome<'p>>, SourcesFailure<E>> {
        let output_failure = SourcesFailure::Output;
        match result {
            RunResult::Done {
                mut output,
                summary: run_summary,
                input,
                source,
                skipped,
            } => {
                let written = out.write_all(&output);
                output.clear();
                self.spare_outputs.push(output);
                self.spare_inputs.extend(input.into_buffer());
                written.map_err(output_failure)?;
                if !skipped.is_empty() {
                    out.flush().map_err(output_failure)?;
                    skipped.into_iter().for_each(|s| report(source, s));
                }
                summary.add(run_summary);
                Ok(None)
            }
            RunResult::InputFailed(run) => Ok(Some(Outcome::FailedRun(run))),
            RunResult::OutputFailed(error) => Err(output_failure(error)),
        }
    }
}

/// Where workers leave the results of their runs for the calling thread, which writes them in
/// input order.
///
/// The calling thread is woken only when the run it waits for is done, not for every run (a
/// channel woke it for each result, also those it could not write yet): on a machine with as
/// many cores as decode threads, every wake-up takes a core from a worker. Results that arrive
/// before the one waited for stay here until it is done; there are never more than the runs in
/// flight.
pub(super) struct ResultBoard<'p> {
    state: Mutex<BoardState<'p>>,
    done: Condvar,
}

struct BoardState<'p> {
    results: BTreeMap<usize, RunResult<'p>>,
    /// The run the calling thread waits for.
    waiting_for: usize,
    /// Workers still running: with none left, nothing more will arrive.
    workers: usize,
}

impl<'p> ResultBoard<'p> {
    fn new(workers: usize) -> Self {
        ResultBoard {
            state: Mutex::new(BoardState {
                results: BTreeMap::new(),
                waiting_for: 0,
                workers,
            }),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BoardState<'p>> {
        // A poisoned lock only means a worker panicked; the results are intact.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leaves the result of run `index`.
    fn put(&self, index: usize, result: RunResult<'p>) {
        let mut state = self.lock();
        state.results.insert(index, result);
        if index == state.waiting_for {
            self.done.notify_one();
        }
    }

    /// Waits for run `next` and takes its result with those of the runs right after it that
    /// are done too, in order; `None` if every worker stopped without leaving it.
    fn take_from(&self, next: usize) -> Option<Vec<RunResult<'p>>> {
        let mut state = self.lock();
        state.waiting_for = next;
        while !state.results.contains_key(&next) && state.workers > 0 {
            state = self.done.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        let mut taken = Vec::new();
        while let Some(result) = state.results.remove(&(next + taken.len())) {
            taken.push(result);
        }
        (!taken.is_empty()).then_some(taken)
    }
}

/// Tells the board, when a worker's thread ends however it ends, that one worker fewer may
/// still leave results.
struct WorkerGone<'b, 'p>(&'b ResultBoard<'p>);

impl Drop for WorkerGone<'_, '_> {
    fn drop(&mut self) {
        self.0.lock().workers -= 1;
        self.0.done.notify_one();
    }
}

/// Decodes a failed run again on this thread from its own bytes, so the records before the
/// bad spot are written and the batches skipped before it reported; the error's positions are
/// moved to the input's.
fn report_failed_run<W: Write>(
    decoding: &Decoding<'_>,
    run: &SourcedRun<'_>,
    out: &mut W,
    report: &mut dyn FnMut(usize, Skipped),
) -> DecodeFailure {
    let mut writer = match writer_for(decoding.format, &mut *out) {
        Ok(writer) => writer,
        Err(failure) => return failure,
    };
    let walk = BatchWalk::new(run.input.bytes(), decoding.config);
    let mut skips = Skips::new(decoding.on_corrupt);
    let decoded = decode_walk(walk, run.context, &mut writer, &mut skips);
    if let Err(error) = writer.flush() {
        return DecodeFailure::Output(error);
    }
    skips
        .drain_from(run.input.start())
        .for_each(|s| report(run.source, s));
    match decoded {
        Err(failure) => failure.with_input_start(run.input.start()),
        // Decoding the same bytes the same way cannot succeed the second time.
        Ok(_) => DecodeFailure::Output(io::Error::other(
            "a run that failed on a worker decoded on the second try",
        )),
    }
}

fn workers_gone<E>() -> SourcesFailure<E> {
    SourcesFailure::Output(io::Error::other("the decode worker threads stopped"))
}

fn writer_for<W: Write>(format: &FormatArgs, out: W) -> Result<RecordWriter<W>, DecodeFailure> {
    format
        .writer(out)
        .map_err(|error| DecodeFailure::Output(io::Error::other(error)))
}

#[cfg(test)]
mod tests {
    use std::thread;
    use std::time::Duration;

    use super::*;

    /// A result that says which run it is, through its error message.
    fn result(index: usize) -> RunResult<'static> {
        RunResult::OutputFailed(io::Error::other(format!("run {index}")))
    }

    /// Which runs were taken, in the order taken.
    fn indices(taken: Option<Vec<RunResult<'static>>>) -> Vec<usize> {
        taken
            .expect("results")
            .into_iter()
            .map(|result| match result {
                RunResult::OutputFailed(error) => error.to_string()["run ".len()..]
                    .parse()
                    .expect("made by `result`"),
                _ => unreachable!("only OutputFailed results are made here"),
            })
            .collect()
    }

    #[test]
    fn results_are_taken_in_order_from_the_one_waited_for() {
        let board = ResultBoard::new(1);
        for index in [3, 1, 0, 5] {
            board.put(index, result(index));
        }
        assert_eq!(indices(board.take_from(0)), vec![0, 1]);
        board.put(2, result(2));
        assert_eq!(indices(board.take_from(2)), vec![2, 3], "5 waits for 4");
    }

    #[test]
    fn the_calling_thread_waits_for_the_run_it_needs() {
        let board = ResultBoard::new(1);
        board.put(1, result(1));
        thread::scope(|scope| {
            scope.spawn(|| {
                thread::sleep(Duration::from_millis(50));
                board.put(0, result(0));
            });
            assert_eq!(indices(board.take_from(0)), vec![0, 1]);
        });
    }

    #[test]
    fn workers_gone_without_the_run_leave_nothing_to_take() {
        let board = ResultBoard::new(2);
        board.put(1, result(1));
        thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    let _gone = WorkerGone(&board);
                    thread::sleep(Duration::from_millis(20));
                });
            }
            assert!(board.take_from(0).is_none());
        });
    }
}
