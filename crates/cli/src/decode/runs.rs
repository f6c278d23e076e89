//! Cutting a segment into runs of whole entries (batches or top-level legacy messages) by
//! reading only each entry's length field: from an image in memory ([`Runs`]) or from a reader,
//! into a reused buffer ([`RunReader`]).
//!
//! A run ends at the first entry boundary at or past the run size, so a run is only larger
//! than the run size by the part of one entry. Every run is decoded by a walk of its own, which
//! reports the same errors as a walk of the whole input: a run starts on an entry boundary, and
//! an entry the walk will refuse (a cut one, a negative length, one over the batch size limit)
//! ends the last run.

use std::io::{self, Read};
use std::ops::Range;

use krec_batch::layout::ENTRY_HEADER_SIZE;
use krec_batch::EntryHeader;

/// Most bytes asked of the reader at once, so a buffer grows only with bytes actually read,
/// never by what a length on the wire claims.
const READ_CHUNK: usize = 1 << 20;

/// Cuts an image into runs of whole entries. An entry whose length is negative or reaches
/// past the end makes the rest of the image one last run, whose walk then reports it.
pub(super) struct Runs<'a> {
    data: &'a [u8],
    position: usize,
    run_bytes: usize,
}

impl<'a> Runs<'a> {
    pub(super) fn new(data: &'a [u8], run_bytes: usize) -> Self {
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
            match EntryHeader::peek(&self.data[end..]).and_then(EntryHeader::size) {
                Some(size) if size <= self.data.len() - end => end += size,
                _ => end = self.data.len(),
            }
        }
        self.position = end;
        Some(start..end)
    }
}

/// One run read from a reader: where it starts in the input, and its bytes.
#[derive(Debug)]
pub(super) struct Run {
    /// Byte position of the run's first entry in the input.
    pub(super) start: usize,
    /// Holds the run's bytes; handed back to [`RunReader::next_run`] once decoded.
    buffer: Vec<u8>,
    /// Where the run's bytes are in `buffer`; the rest are stale or another run's.
    bytes: Range<usize>,
}

impl Run {
    /// The run at input position `start` whose bytes are the first `len` of `buffer`.
    pub(super) fn new(start: usize, buffer: Vec<u8>, len: usize) -> Run {
        Run::within(start, buffer, 0..len)
    }

    /// The run at input position `start` whose bytes are `buffer[bytes]`.
    pub(super) fn within(start: usize, buffer: Vec<u8>, bytes: Range<usize>) -> Run {
        debug_assert!(bytes.start <= bytes.end && bytes.end <= buffer.len());
        Run {
            start,
            buffer,
            bytes,
        }
    }

    /// The run's bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buffer[self.bytes.clone()]
    }

    /// Its buffer, to read the next run into.
    pub(super) fn into_buffer(self) -> Vec<u8> {
        self.buffer
    }
}

/// Why reading an input's next run failed.
#[derive(Debug)]
pub enum RunReadError {
    /// The reader failed.
    Io(io::Error),
    /// The input holds more than the limit: `read` bytes were read (the limit plus one).
    OverLimit {
        /// Bytes read before stopping.
        read: u64,
    },
}

/// Limits of a [`RunReader`].
#[derive(Clone, Copy, Debug)]
pub(super) struct RunLimits {
    /// A run ends at the first entry boundary at or past this many bytes.
    pub(super) run_bytes: usize,
    /// Largest entry read whole (the walk's `max_batch_bytes`): a larger one is refused by the
    /// walk from its length field alone, so only its header is read.
    pub(super) max_entry_bytes: usize,
    /// Largest input accepted: one byte more is an [`RunReadError::OverLimit`].
    pub(super) max_input_bytes: u64,
}

/// Reads runs of whole entries from a reader into buffers the caller hands in (and reuses).
///
/// Reads ask for exactly the bytes up to the end of the entry that reaches the run size, so a
/// run's buffer holds that run and nothing of the next one (no bytes are carried over, and no
/// second buffer sits between reader and run). A buffer keeps its size from run to run, so it
/// is not zeroed again for every run, and grows [`READ_CHUNK`] at a time, only after the bytes
/// before were read: it holds at most the run size plus one entry of at most
/// `max_entry_bytes` and one chunk (its capacity at most about twice that, as a `Vec`
/// grows), whatever the input's size or its length fields.
pub(super) struct RunReader<R> {
    reader: R,
    limits: RunLimits,
    /// Input position of the next run.
    position: usize,
    /// Bytes read from the reader so far.
    read: u64,
    /// The reader reached its end, or the last run holds an entry the walk will refuse.
    ended: bool,
}

impl<R: Read> RunReader<R> {
    pub(super) fn new(reader: R, limits: RunLimits) -> Self {
        RunReader {
            reader,
            limits: RunLimits {
                run_bytes: limits.run_bytes.max(1),
                ..limits
            },
            position: 0,
            read: 0,
            ended: false,
        }
    }

    /// The next run, read into `buffer` (its old contents are overwritten); `None` at the end
    /// of the input.
    pub(super) fn next_run(&mut self, mut buffer: Vec<u8>) -> Result<Option<Run>, RunReadError> {
        // Bytes of this run read into `buffer`.
        let mut filled = 0;
        // End of the whole entries in `buffer`.
        let mut whole = 0;
        while !self.ended {
            let missing = loop {
                if whole >= self.limits.run_bytes {
                    break 0;
                }
                let rest = &buffer[whole..filled];
                if rest.len() < ENTRY_HEADER_SIZE {
                    break ENTRY_HEADER_SIZE - rest.len();
                }
                match EntryHeader::peek(rest).and_then(EntryHeader::size) {
                    Some(size) if size <= self.limits.max_entry_bytes => {
                        if size <= rest.len() {
                            whole += size;
                        } else {
                            break size - rest.len();
                        }
                    }
                    // Refused by the walk from the header alone: no need to read its body.
                    _ => {
                        self.ended = true;
                        break 0;
                    }
                }
            };
            if missing == 0 {
                break;
            }
            // Up to the run size, and at least to the end of the entry under way.
            let wanted = missing.max(self.limits.run_bytes.saturating_sub(filled));
            let got = self.read_appending(&mut buffer, filled, wanted)?;
            filled += got;
            if got < wanted {
                self.ended = true;
            }
        }
        if filled == 0 {
            return Ok(None);
        }
        let start = self.position;
        self.position += filled;
        Ok(Some(Run::new(start, buffer, filled)))
    }

    /// Reads up to `count` bytes into `out` from `filled` on, fewer only at the end of the
    /// input; past the input limit, [`RunReadError::OverLimit`].
    fn read_appending(
        &mut self,
        out: &mut Vec<u8>,
        filled: usize,
        count: usize,
    ) -> Result<usize, RunReadError> {
        // One byte past the limit tells "exactly at the limit" from "over it".
        let allowed = self
            .limits
            .max_input_bytes
            .saturating_add(1)
            .saturating_sub(self.read);
        let count = usize::try_from(allowed).map_or(count, |allowed| count.min(allowed));
        let mut appended = 0;
        while appended < count {
            let chunk = (count - appended).min(READ_CHUNK);
            let at = filled + appended;
            if out.len() < at + chunk {
                out.resize(at + chunk, 0);
            }
            let got =
                read_fully(&mut self.reader, &mut out[at..at + chunk]).map_err(RunReadError::Io)?;
            appended += got;
            self.read += got as u64;
            if got < chunk {
                break;
            }
        }
        if self.read > self.limits.max_input_bytes {
            return Err(RunReadError::OverLimit { read: self.read });
        }
        Ok(appended)
    }
}

/// Fills `buffer` from the reader, short only at its end.
pub(super) fn read_fully(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::{RunLimits, RunReadError, RunReader, Runs, READ_CHUNK};

    fn limits(run_bytes: usize) -> RunLimits {
        limits_with(run_bytes, 1 << 30)
    }

    /// Limits with the given run size and entry limit, and no input limit.
    fn limits_with(run_bytes: usize, max_entry_bytes: usize) -> RunLimits {
        RunLimits {
            run_bytes,
            max_entry_bytes,
            max_input_bytes: u64::MAX,
        }
    }

    /// Entries of the given total sizes (12-byte header counted; a size below 12 writes that
    /// raw length field instead), bodies filled with the entry's index.
    fn entries_sized(sizes: &[i64]) -> Vec<u8> {
        let mut data = Vec::new();
        for (offset, &size) in sizes.iter().enumerate() {
            data.extend_from_slice(&(offset as i64).to_be_bytes());
            data.extend_from_slice(&((size - 12) as i32).to_be_bytes());
            data.resize(data.len() + size.max(12) as usize - 12, offset as u8);
        }
        data
    }

    /// Every run a reader gives, read into one reused buffer: position and bytes.
    fn read_runs(data: &[u8], limits: RunLimits) -> Vec<(usize, Vec<u8>)> {
        let mut reader = RunReader::new(data, limits);
        let mut runs = Vec::new();
        let mut buffer = Vec::new();
        while let Some(run) = reader.next_run(buffer).expect("reading a slice") {
            runs.push((run.start, run.bytes().to_vec()));
            buffer = run.into_buffer();
        }
        runs
    }

    /// A reader cuts the same runs as the in-memory splitter, with the same bytes.
    fn assert_reader_matches_splitter(data: &[u8], run_bytes: usize) {
        let expected: Vec<(usize, Vec<u8>)> = Runs::new(data, run_bytes)
            .map(|range| (range.start, data[range].to_vec()))
            .collect();
        assert_eq!(
            read_runs(data, limits(run_bytes)),
            expected,
            "run size {run_bytes}"
        );
    }

    /// Entries of the given total sizes (12-byte header counted), bodies filled with the
    /// entry's index so a misplaced byte shows.
    fn entries(sizes: &[usize]) -> Vec<u8> {
        let sizes: Vec<i64> = sizes.iter().map(|&size| size as i64).collect();
        entries_sized(&sizes)
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
        assert!(read_runs(&[], limits(10)).is_empty());
    }

    #[test]
    fn a_reader_cuts_the_same_runs_as_the_splitter() {
        let data = entries(&[100, 100, 100, 50, 300]);
        for run_bytes in [1, 99, 100, 150, 199, 200, 201, 1000] {
            assert_reader_matches_splitter(&data, run_bytes);
        }
        // Cut inside the last entry's body, and inside its header.
        let mut too_long = entries(&[40, 40]);
        too_long[40 + 8..40 + 12].copy_from_slice(&1000i32.to_be_bytes());
        let mut cut_header = entries(&[40]);
        cut_header.extend_from_slice(&[0; 7]);
        for data in [too_long, cut_header] {
            assert_reader_matches_splitter(&data, 1);
            assert_reader_matches_splitter(&data, 60);
        }
    }

    #[test]
    fn a_dirty_reused_buffer_leaks_no_stale_bytes() {
        let data = entries(&[100, 30, 250]);
        for run_bytes in [1, 120, 1000] {
            let mut reader = RunReader::new(&data[..], limits(run_bytes));
            let mut buffer = vec![0xff; 4096];
            let mut read = Vec::new();
            while let Some(run) = reader.next_run(buffer).expect("reading a slice") {
                assert_eq!(run.start, read.len(), "run size {run_bytes}");
                read.extend_from_slice(run.bytes());
                buffer = run.into_buffer();
                buffer.fill(0xff);
            }
            assert_eq!(read, data, "run size {run_bytes}");
        }
    }

    #[test]
    fn entries_larger_than_a_read_chunk_arrive_whole() {
        let data = entries(&[50, READ_CHUNK * 2 + 7, 50]);
        for run_bytes in [1, 60, READ_CHUNK] {
            assert_reader_matches_splitter(&data, run_bytes);
        }
    }

    #[test]
    fn a_refused_entry_ends_the_last_run_after_its_header() {
        let mut negative = entries(&[40, 40, 40]);
        negative[40 + 8..40 + 12].copy_from_slice(&(-5i32).to_be_bytes());
        let runs = read_runs(&negative, limits(1));
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1], (40, negative[40..52].to_vec()));

        // Over the entry limit: its body is never read, nor anything after it.
        let data = entries(&[40, 500, 40]);
        let runs = read_runs(
            &data,
            RunLimits {
                max_entry_bytes: 499,
                ..limits(1)
            },
        );
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1], (40, data[40..52].to_vec()));
        // Exactly at the limit it is read.
        let runs = read_runs(
            &data,
            RunLimits {
                max_entry_bytes: 500,
                ..limits(1)
            },
        );
        assert_eq!(runs.len(), 3);
    }

    #[test]
    fn a_huge_length_on_the_wire_allocates_only_what_is_read() {
        let mut data = entries(&[40, 40]);
        data[40 + 8..40 + 12].copy_from_slice(&i32::MAX.to_be_bytes());
        // No entry limit, so the cut body is read as far as it goes.
        let unlimited = RunLimits {
            max_entry_bytes: usize::MAX,
            ..limits(1)
        };
        let mut reader = RunReader::new(&data[..], unlimited);
        let first = reader.next_run(Vec::new()).expect("read").expect("a run");
        assert_eq!((first.start, first.bytes().len()), (0, 40));
        let last = reader.next_run(Vec::new()).expect("read").expect("a run");
        assert_eq!((last.start, last.bytes().len()), (40, 40));
        let capacity = last.into_buffer().capacity();
        assert!(
            capacity <= 2 * READ_CHUNK,
            "capacity {capacity} for 40 bytes read"
        );
        assert!(reader.next_run(Vec::new()).expect("read").is_none());
    }

    #[test]
    fn input_over_the_limit_is_refused_and_at_the_limit_accepted() {
        let data = entries(&[40, 40, 40]);
        let at_limit = RunLimits {
            max_input_bytes: 120,
            ..limits(1)
        };
        assert_eq!(read_runs(&data, at_limit).len(), 3);

        let mut reader = RunReader::new(
            &data[..],
            RunLimits {
                max_input_bytes: 119,
                ..limits(1)
            },
        );
        let mut runs = 0;
        let refused = loop {
            match reader.next_run(Vec::new()) {
                Ok(Some(_)) => runs += 1,
                Ok(None) => panic!("input over the limit read to its end"),
                Err(error) => break error,
            }
        };
        assert!(
            matches!(refused, RunReadError::OverLimit { read: 120 }),
            "{refused:?}"
        );
        assert_eq!(runs, 2, "the runs wholly under the limit come first");
    }

    #[test]
    fn a_failing_reader_is_an_io_error() {
        struct Failing;
        impl std::io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let mut reader = RunReader::new(Failing, limits(10));
        match reader.next_run(Vec::new()) {
            Err(RunReadError::Io(error)) => assert_eq!(error.to_string(), "disk on fire"),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }
}
