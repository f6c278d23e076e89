//! `krec decode FILE...`: decode Kafka log segment files and write their records out.
//!
//! Each file (at most `--max-file-bytes`) is walked batch by batch, and every
//! record is written in the chosen format. Control records are
//! checked but only printed with `--print-control`. The first malformed byte
//! stops everything: the records before it are flushed, then one line on stderr
//! names file, byte position and offset, and the exit code is 1. With `--on-corrupt skip` a
//! batch that fails its checks is reported and stepped over instead, and the exit code at the
//! end is 3 ([`crate::corrupt`]).
//!
//! Every input, a file or standard input, is read in runs of whole batches (`--run-bytes`,
//! see `decode/runs.rs`) into reused buffers, so memory is bounded by the run size whatever
//! the input size. With `--threads 1` the runs are decoded on the calling thread as they are
//! read (`decode/stream.rs`); with `--threads N` (default: one per core) N threads decode them
//! while the next are read, and the output is written in input order, byte for byte what one
//! thread writes (`decode/parallel.rs`). Either way output and errors are those of one walk
//! over the whole input ([`decode_bytes`]).

mod args;
pub mod count;
mod parallel;
mod runs;
mod stream;

use args::offset_window;
#[cfg(test)]
use args::parse_size;
pub use args::DecodeArgs;
pub use parallel::{decode_bytes_parallel, Parallelism, DEFAULT_RUN_BYTES};
use parallel::{
    decode_sources_parallel, with_segment_workers, RunInput, SegmentWorkers, SourcedRun,
    SourcesFailure,
};
pub use runs::RunReadError;
use runs::{RunLimits, RunReader};

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use krec_batch::{BatchSpan, BatchWalk, DecodeConfig, OnCorrupt, Skipped};

use crate::corrupt::{report_line, SkipSource, SKIPPED_EXIT_CODE};
use crate::format::{RecordContext, RecordWriter};
use crate::Error;

/// Counts of what one decode wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeSummary {
    /// Batches (or top-level legacy messages) walked.
    pub batches: u64,
    /// Data records decoded.
    pub records: u64,
    /// Data records that passed the filters and were written (all of them without filters).
    pub matched: u64,
    /// Control records seen (written only with `--print-control`).
    pub control_records: u64,
    /// Corrupt batches skipped (`--on-corrupt skip`).
    pub skipped: u64,
}

impl DecodeSummary {
    /// Adds the counts of another part of the same input.
    pub fn add(&mut self, other: DecodeSummary) {
        self.batches += other.batches;
        self.records += other.records;
        self.matched += other.matched;
        self.control_records += other.control_records;
        self.skipped += other.skipped;
    }
}

/// Runs `krec decode`. Exit codes: 0 success, 1 malformed input or I/O error,
/// 2 bad options, 3 corrupt batches skipped (`--on-corrupt skip`).
pub fn run(mut args: DecodeArgs) -> ExitCode {
    match offset_window(args.offset.as_deref()) {
        Ok(window) => args.format.filter.offsets = window,
        Err(error) => {
            eprintln!("krec decode: {error}");
            return ExitCode::from(2);
        }
    }
    args.format.schema.set_on_corrupt(args.on_corrupt, "decode");
    // Checked once here, so a bad format is a usage error (exit 2) before any file is read.
    if let Err(error) = args.format.writer(io::sink()) {
        eprintln!("krec decode: {error}");
        return ExitCode::from(2);
    }
    let out = io::stdout().lock();
    let config = args.decode_config();
    let parallelism = args.parallelism();
    let contexts: Vec<ContextFromPath> = args
        .files
        .iter()
        .map(|file| ContextFromPath::new(file, args.topic.as_deref(), args.partition))
        .collect();
    let contexts: Vec<RecordContext<'_>> =
        contexts.iter().map(ContextFromPath::as_context).collect();
    let files = Files {
        args: &args,
        config: &config,
        contexts: &contexts,
        run_bytes: parallelism.run_bytes,
        skipped: Cell::new(0),
    };
    // One set of threads and buffers for all files (see `parallel`).
    if parallelism.threads.get() > 1 {
        let threads = parallelism.threads;
        with_segment_workers(&config, &args.format, threads, args.on_corrupt, |workers| {
            files.decode_all(Decoder::Threads(workers), out)
        })
    } else {
        files.decode_all(Decoder::OneThread(Vec::new()), out)
    }
}

/// The files of one `krec decode`, with what decoding each needs.
struct Files<'a> {
    args: &'a DecodeArgs,
    config: &'a DecodeConfig,
    /// Topic and partition of each file, in order.
    contexts: &'a [RecordContext<'a>],
    run_bytes: usize,
    /// Corrupt batches skipped and reported so far.
    skipped: Cell<u64>,
}

/// Where runs are decoded: on the calling thread into one reused buffer, or on the segment workers.
enum Decoder<'d, 'p> {
    OneThread(Vec<u8>),
    Threads(&'d mut SegmentWorkers<'p>),
}

impl<'a> Files<'a> {
    fn decode_all<W: Write>(&self, decoder: Decoder<'_, 'a>, mut out: W) -> ExitCode {
        // Each file's records, up to any bad spot, are written and flushed before a message.
        let result = match decoder {
            Decoder::OneThread(mut buffer) => {
                self.args
                    .files
                    .iter()
                    .enumerate()
                    .try_for_each(|(index, path)| {
                        self.decode_file_here(index, path, &mut buffer, &mut out)
                    })
            }
            Decoder::Threads(workers) => self.decode_on(workers, &mut out),
        };
        if let Err(error) = result {
            let flushed = out.flush();
            if is_broken_pipe(&error)
                || flushed
                    .as_ref()
                    .is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("krec decode: {error}");
            return ExitCode::FAILURE;
        }
        match out.flush() {
            Ok(()) if self.skipped.get() + self.args.format.schema.records_skipped() > 0 => {
                let records = self.args.format.schema.records_skipped();
                if self.skipped.get() > 0 {
                    eprintln!(
                        "krec decode: {} corrupt batches skipped",
                        self.skipped.get()
                    );
                }
                if records > 0 {
                    eprintln!("krec decode: {records} undecodable records skipped");
                }
                ExitCode::from(SKIPPED_EXIT_CODE)
            }
            Ok(()) => ExitCode::SUCCESS,
            // The reader went away (`krec decode f.log | head`): it asked for no more.
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("krec decode: writing output: {error}");
                ExitCode::FAILURE
            }
        }
    }

    fn limits(&self) -> RunLimits {
        RunLimits {
            run_bytes: self.run_bytes,
            max_entry_bytes: self.config.max_batch_bytes,
            max_input_bytes: self.args.max_file_bytes,
        }
    }

    /// Opens one file (or stdin for `-`) to read run by run; a file larger than
    /// `--max-file-bytes` is refused before anything is read.
    fn open(&self, path: &Path) -> Result<RunReader<Box<dyn Read>>, Error> {
        if path == Path::new("-") {
            return Ok(RunReader::new(Box::new(io::stdin().lock()), self.limits()));
        }
        let io_error = |source| read_error(path, RunReadError::Io(source), 0);
        let file = std::fs::File::open(path).map_err(io_error)?;
        let metadata = file.metadata().map_err(io_error)?;
        let size = metadata.len();
        if size > self.args.max_file_bytes {
            return Err(Error::InputTooLarge {
                file: path.display().to_string(),
                size,
                limit: self.args.max_file_bytes,
            });
        }
        Ok(RunReader::new(Box::new(file), self.limits()))
    }

    /// Reports a corrupt batch of file `index` skipped, on stderr.
    fn report_skip(&self, index: usize, skipped: &Skipped) {
        let context = &self.contexts[index];
        let file = self.args.files[index].display().to_string();
        let source = SkipSource {
            command: "decode",
            file: Some(&file),
            topic: context.topic,
            partition: context.partition,
            fetch_offset: None,
        };
        eprintln!("{}", report_line(&source, skipped));
        self.skipped.set(self.skipped.get() + 1);
    }

    /// Decodes file `index` (at `path`) on this thread, run by run into `buffer`.
    fn decode_file_here<W: Write>(
        &self,
        index: usize,
        path: &Path,
        buffer: &mut Vec<u8>,
        out: &mut W,
    ) -> Result<(), Error> {
        let mut runs = self.open(path)?;
        let format = &self.args.format;
        let context = &self.contexts[index];
        let mut skips = Skips::new(self.args.on_corrupt);
        let mut report = |skipped: Skipped| self.report_skip(index, &skipped);
        let decoded = stream::decode_runs(
            &mut runs,
            self.config,
            context,
            format,
            buffer,
            out,
            (&mut skips, &mut report),
        );
        match decoded {
            Ok(_) => Ok(()),
            Err(failure) => Err(file_error(path, failure, self.args.max_file_bytes)),
        }
    }

    /// Decodes all files on the segment workers as one stream of runs, each tagged with its
    /// file: the next file is opened and read while the last runs of the previous one decode.
    fn decode_on<W: Write>(
        &self,
        workers: &mut SegmentWorkers<'a>,
        out: &mut W,
    ) -> Result<(), Error> {
        let files = &self.args.files;
        let mut next_file = 0;
        let mut current: Option<(usize, RunReader<Box<dyn Read>>)> = None;
        let next_run = |spare: Vec<u8>| -> Result<Option<SourcedRun<'a>>, Error> {
            let mut spare = Some(spare);
            loop {
                if let Some((index, runs)) = current.as_mut() {
                    let index = *index;
                    let next = runs
                        .next_run(spare.take().unwrap_or_default())
                        .map(|run| run.map(RunInput::Owned));
                    match next {
                        Ok(Some(input)) => {
                            return Ok(Some(SourcedRun {
                                input,
                                source: index,
                                context: &self.contexts[index],
                            }))
                        }
                        Ok(None) => current = None,
                        Err(error) => {
                            return Err(read_error(&files[index], error, self.args.max_file_bytes))
                        }
                    }
                }
                let Some(path) = files.get(next_file) else {
                    return Ok(None);
                };
                current = Some((next_file, self.open(path)?));
                next_file += 1;
            }
        };
        let mut report = |index: usize, skipped: Skipped| self.report_skip(index, &skipped);
        match decode_sources_parallel(workers, next_run, out, &mut report) {
            Ok(_) => Ok(()),
            Err(SourcesFailure::Read(error)) => Err(error),
            Err(SourcesFailure::Input { source, failure }) => Err(file_error(
                &files[source],
                failure,
                self.args.max_file_bytes,
            )),
            Err(SourcesFailure::Output(source)) => Err(Error::output("writing output", source)),
        }
    }
}

/// The error for a failed read of `path` (`limit`: its `--max-file-bytes`).
fn read_error(path: &Path, error: RunReadError, limit: u64) -> Error {
    match error {
        RunReadError::Io(source) => Error::Io {
            context: format!("reading {}", path.display()),
            source,
        },
        RunReadError::OverLimit { read } => Error::InputTooLarge {
            file: path.display().to_string(),
            size: read,
            limit,
        },
    }
}

fn is_broken_pipe(error: &Error) -> bool {
    matches!(error, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

fn file_error(path: &Path, failure: DecodeFailure, limit: u64) -> Error {
    match failure {
        DecodeFailure::Read(error) => read_error(path, error, limit),
        DecodeFailure::Input { error, position } => Error::DecodeInput {
            file: path.display().to_string(),
            position,
            offset: error.offset(),
            source: error,
        },
        DecodeFailure::Output(source) => Error::output("writing output", source),
    }
}

/// Why [`decode_bytes`] stopped.
#[derive(Debug)]
pub enum DecodeFailure {
    /// The input is malformed, or ends inside a batch.
    Input {
        /// What is wrong.
        error: krec_batch::Error,
        /// Byte position of the batch at fault: the error's own, else where the walk stood.
        position: usize,
    },
    /// Reading the input failed, or it holds more than its limit.
    Read(RunReadError),
    /// Writing the output failed.
    Output(io::Error),
}

impl DecodeFailure {
    /// The same failure of a walk over a run that begins at byte `start` of the input, with
    /// the input's positions.
    fn with_input_start(self, start: usize) -> DecodeFailure {
        match self {
            DecodeFailure::Input { error, position } => DecodeFailure::Input {
                error: error.with_input_start(start),
                position: position.saturating_add(start),
            },
            output => output,
        }
    }
}

/// Decodes one whole segment image: every complete batch, records in order. A
/// partial batch at the end is an error ([`krec_batch::Error::Truncated`]), as a
/// segment file only ever holds whole batches. Control records are always walked
/// (so a malformed one is reported) and handed to the writer, which prints them
/// only if asked to.
pub fn decode_bytes<W: Write>(
    data: &[u8],
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    writer: &mut RecordWriter<W>,
) -> Result<DecodeSummary, DecodeFailure> {
    decode_walk(
        BatchWalk::new(data, config),
        context,
        writer,
        &mut Skips::stop(),
    )
}

/// The corrupt-batch policy of a walk, and the batches it skipped (the walk's positions).
#[derive(Debug)]
pub(crate) struct Skips {
    on_corrupt: OnCorrupt,
    skipped: Vec<Skipped>,
}

impl Skips {
    pub(crate) fn new(on_corrupt: OnCorrupt) -> Self {
        Skips {
            on_corrupt,
            skipped: Vec::new(),
        }
    }

    /// Today's behaviour: the first corrupt batch stops the walk.
    pub(crate) fn stop() -> Self {
        Skips::new(OnCorrupt::Stop)
    }

    /// The skipped batches, in input order, moved to an input where the walk began at `start`.
    pub(crate) fn drain_from(&mut self, start: usize) -> impl Iterator<Item = Skipped> + '_ {
        self.skipped
            .drain(..)
            .map(move |Skipped { span, error }| Skipped {
                span: BatchSpan {
                    position: span.position.saturating_add(start),
                    ..span
                },
                error: error.with_input_start(start),
            })
    }
}

/// Decodes the batches left in `walk`, records in order, as [`decode_bytes`] describes.
/// Under `skips`' [`OnCorrupt::Skip`], a batch that fails its checks is left in `skips` and
/// walked past, and a batch's records are all checked before any is written.
fn decode_walk<W: Write>(
    mut walk: BatchWalk<'_>,
    context: &RecordContext<'_>,
    writer: &mut RecordWriter<W>,
    skips: &mut Skips,
) -> Result<DecodeSummary, DecodeFailure> {
    let mut summary = DecodeSummary::default();
    // Batches and records are filled in place (`next_ref`): moving them out by value per
    // step costs store-forwarding stalls on small records.
    while let Some(batch) = walk.next_ref() {
        let batch = match batch {
            Ok(batch) => batch,
            Err(error) => match walk.skip_failed(skips.on_corrupt, error) {
                Ok(skipped) => {
                    skips.skipped.push(skipped);
                    summary.skipped += 1;
                    continue;
                }
                // The walk only moves past a batch it accepted, so it still points at this one.
                Err(error) => return Err(input_failure(error, walk.position())),
            },
        };
        if skips.on_corrupt == OnCorrupt::Skip {
            if let Err(error) = batch.check_records() {
                let span = BatchSpan::of_batch(batch);
                let skipped = skips
                    .on_corrupt
                    .decide(error, Some(span))
                    .map_err(|error| input_failure(error, span.position))?;
                skips.skipped.push(skipped);
                summary.skipped += 1;
                continue;
            }
        }
        summary.batches += 1;
        if batch.is_control() {
            for control in batch.control_records() {
                let control = control.map_err(|e| input_failure(e, batch.position()))?;
                writer
                    .write_control(context, &control)
                    .map_err(DecodeFailure::Output)?;
                summary.control_records += 1;
            }
        } else {
            let mut records = batch.records();
            while let Some(record) = records.next_ref() {
                let record = record.map_err(|e| input_failure(e, batch.position()))?;
                summary.records += 1;
                if !writer.admits(record) {
                    continue;
                }
                writer
                    .write_record(context, record)
                    .map_err(DecodeFailure::Output)?;
                summary.matched += 1;
            }
        }
    }
    walk.end_of_file()
        .map_err(|error| input_failure(error, walk.position()))?;
    Ok(summary)
}

fn input_failure(error: krec_batch::Error, fallback_position: usize) -> DecodeFailure {
    DecodeFailure::Input {
        position: error.position().unwrap_or(fallback_position),
        error,
    }
}

/// Topic and partition for a file: given on the command line, else parsed from
/// the parent directory when it is named like a broker's `TOPIC-PARTITION` directory.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ContextFromPath {
    topic: Option<String>,
    partition: Option<i32>,
}

impl ContextFromPath {
    fn new(path: &Path, topic: Option<&str>, partition: Option<i32>) -> Self {
        let from_dir = path.canonicalize().ok().and_then(|full| {
            full.parent()
                .and_then(|dir| dir.file_name())
                .and_then(|name| name.to_str())
                .and_then(topic_partition)
                .map(|(t, p)| (t.to_owned(), p))
        });
        ContextFromPath {
            topic: topic
                .map(str::to_owned)
                .or_else(|| from_dir.as_ref().map(|(t, _)| t.clone())),
            partition: partition.or(from_dir.map(|(_, p)| p)),
        }
    }

    fn as_context(&self) -> RecordContext<'_> {
        RecordContext {
            topic: self.topic.as_deref(),
            partition: self.partition,
            delivery_count: None,
        }
    }
}

/// Splits a broker partition directory name `TOPIC-N` (topic of Kafka's legal
/// characters `[A-Za-z0-9._-]`, N a non-negative int32).
fn topic_partition(dir_name: &str) -> Option<(&str, i32)> {
    let (topic, partition) = dir_name.rsplit_once('-')?;
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if topic.is_empty() || topic.len() > 249 || !topic.chars().all(legal) {
        return None;
    }
    if partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((topic, partition.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::{parse_size, topic_partition};

    #[test]
    fn sizes() {
        let cases = [
            ("0", Ok(0)),
            ("4096", Ok(4096)),
            ("64K", Ok(64 << 10)),
            ("64M", Ok(64 << 20)),
            ("64MiB", Ok(64 << 20)),
            ("1g", Ok(1 << 30)),
            ("12x", Err(())),
            ("", Err(())),
            ("M", Err(())),
            ("-1", Err(())),
            ("99999999999999999999", Err(())),
            ("17179869184G", Err(())),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_size(text).map_err(|_| ()), expected, "{text:?}");
        }
    }

    #[test]
    fn broker_directory_names() {
        let cases = [
            ("orders-0", Some(("orders", 0))),
            ("my-topic-12", Some(("my-topic", 12))),
            ("__consumer_offsets-49", Some(("__consumer_offsets", 49))),
            ("a.b_c-2147483647", Some(("a.b_c", i32::MAX))),
            ("orders-2147483648", None),
            ("orders", None),
            ("orders-", None),
            ("-3", None),
            ("orders-+3", None),
            ("ord ers-1", None),
            ("orders-1.delete", None),
        ];
        for (name, expected) in cases {
            assert_eq!(topic_partition(name), expected, "{name:?}");
        }
    }
}
