//! Runs of a regular file of small entries, each read by the thread that decodes it, with the
//! entry boundaries handed from run to run.
//!
//! [`positional`](super::positional) cuts a file into runs from its entry headers, one `pread`
//! per header, on the calling thread: worth it for large entries only. A file of small entries
//! (a one-record batch is ~250 bytes) was read whole by the calling thread instead, and that
//! copy out of the page cache plus the header walk were a quarter of the CPU of a two-thread
//! decode, which held the speed-up to ~1.5x.
//!
//! Here the calling thread reads nothing. It cuts the file into fixed byte ranges of the run
//! size, without knowing where entries start, and hands them out in order. The worker of a
//! range reads its bytes (in parallel with the other workers), then waits for the range before
//! it to say where the first entry at or past its start begins: its start [`Boundary`]. From
//! there it walks the entry headers in its buffer to the first entry boundary at or past the
//! range's end, reads the tail of that last entry, says where it ended (the next range's start
//! boundary), and only then decodes. The only serial work is the header walk, which is a few
//! percent of a decode; the copy and the decode run on every worker at once.
//!
//! Runs are whole entries and every entry is in exactly one run, so the output is the one-walk
//! output whatever the range size. An entry the walk will refuse from its header (negative
//! length, over the entry limit, cut off by the end of the file) ends the chain: its run ends
//! after it, as [`RunReader`](super::runs::RunReader) ends there, and the runs after it are
//! empty. The file is cut as it was when opened: its length then is its end.

use std::fs::File;
use std::io;
use std::sync::{Arc, Condvar, Mutex};

use krec_batch::layout::ENTRY_HEADER_SIZE;
use krec_batch::EntryHeader;

use super::positional::read_up_to;
use super::runs::{Run, RunLimits};

/// Smallest range, whatever the run size asked for. A range costs a job, a boundary and a
/// `pread` even when it lies inside one entry and its run is empty; ranges of a byte (as
/// `--run-bytes 1` asks for, to cut every batch apart) made a 2.5 MiB file 2.5 million jobs.
pub(super) const MIN_RANGE_BYTES: usize = 64 << 10;

/// Bytes of a range read at once; small enough that a piece is still in the cache when its
/// headers are walked.
const READ_PIECE_BYTES: usize = 128 << 10;

/// What the run before says about where a run's first entry starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handoff {
    /// The first entry at or past the range's start begins at this file position.
    At(u64),
    /// The entries ended before (a refused or cut entry, or the end of the file): the run is
    /// empty.
    Ended,
    /// The run before was never read (its read failed, or the decode stopped): this one
    /// cannot know where it starts.
    Abandoned,
}

/// One entry boundary, said by the worker of one run and awaited by the worker of the next.
#[derive(Debug, Default)]
pub(super) struct Boundary {
    handoff: Mutex<Option<Handoff>>,
    said: Condvar,
}

impl Boundary {
    fn at(position: u64) -> Arc<Boundary> {
        Arc::new(Boundary {
            handoff: Mutex::new(Some(Handoff::At(position))),
            said: Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Handoff>> {
        // A poisoned lock means a worker panicked while holding it; the value is still whole.
        self.handoff.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The boundary if it was said already.
    fn peek(&self) -> Option<Handoff> {
        *self.lock()
    }

    /// The boundary, waiting until it is said.
    fn wait(&self) -> Handoff {
        let mut handoff = self.lock();
        loop {
            if let Some(said) = *handoff {
                return said;
            }
            handoff = self.said.wait(handoff).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn say(&self, handoff: Handoff) {
        let mut slot = self.lock();
        if slot.is_none() {
            *slot = Some(handoff);
            self.said.notify_all();
        }
    }
}

/// The end boundary of one run, said by its worker. Dropped unsaid (the job was dropped, the
/// worker failed or panicked), it says [`Handoff::Abandoned`], so the worker of the next run
/// never waits for nothing.
#[derive(Debug)]
pub(super) struct EndBoundary(Arc<Boundary>);

impl EndBoundary {
    fn say(self, handoff: Handoff) {
        self.0.say(handoff);
    }
}

impl Drop for EndBoundary {
    fn drop(&mut self) {
        self.0.say(Handoff::Abandoned);
    }
}

/// One range of a file for a worker: its bytes, where the run before says its first entry
/// starts, and where it must say its own run ends.
#[derive(Debug)]
pub(super) struct ChainedSpan {
    file: Arc<File>,
    /// The file's length when opened.
    file_len: u64,
    limits: RunLimits,
    /// The range's first byte.
    start: u64,
    /// One past its last byte (at most the file's length).
    end: u64,
    first_entry: Arc<Boundary>,
    run_end: EndBoundary,
}

impl ChainedSpan {
    /// Byte position of the range in the file (its run starts there or after).
    pub(super) fn start(&self) -> u64 {
        self.start
    }
}

/// Cuts a regular file into ranges of the run size, chained by their boundaries.
pub(super) struct ChainedRuns {
    file: Arc<File>,
    /// The file's length when opened: where it ends.
    len: u64,
    limits: RunLimits,
    /// Start of the next range.
    position: u64,
    /// The end boundary of the last range handed out: the next range's start.
    last_end: Arc<Boundary>,
}

impl ChainedRuns {
    /// Cuts `file`, `len` bytes long, into ranges of the run size (at least
    /// [`MIN_RANGE_BYTES`]).
    pub(super) fn new(file: Arc<File>, len: u64, limits: RunLimits) -> Self {
        Self::with_min_range(file, len, limits, MIN_RANGE_BYTES)
    }

    /// [`ChainedRuns::new`] with another smallest range (the tests cut ranges of a byte).
    fn with_min_range(file: Arc<File>, len: u64, limits: RunLimits, min_range: usize) -> Self {
        ChainedRuns {
            file,
            len,
            limits: RunLimits {
                run_bytes: limits.run_bytes.max(min_range).max(1),
                ..limits
            },
            position: 0,
            last_end: Boundary::at(0),
        }
    }

    /// The next range; `None` at the end of the file, or once a run said the entries ended.
    pub(super) fn next_span(&mut self) -> Option<ChainedSpan> {
        let start = self.position;
        let chain_ended = matches!(
            self.last_end.peek(),
            Some(Handoff::Ended | Handoff::Abandoned)
        );
        if start >= self.len || chain_ended {
            return None;
        }
        let end = start
            .saturating_add(self.limits.run_bytes as u64)
            .min(self.len);
        self.position = end;
        let run_end = Arc::new(Boundary::default());
        let first_entry = std::mem::replace(&mut self.last_end, Arc::clone(&run_end));
        Some(ChainedSpan {
            file: Arc::clone(&self.file),
            file_len: self.len,
            limits: self.limits,
            start,
            end,
            first_entry,
            run_end: EndBoundary(run_end),
        })
    }
}

/// Reads the run of `span` into `buffer` (reused): the range's bytes, then, once the run
/// before said where the first entry starts, the tail of the entry that crosses the range's
/// end. Says where the run ends before returning, so the next worker can go on.
///
/// A run after a failed one is an error, never silently empty. Fewer bytes than the headers
/// promised if the file shrank since it was opened: the walk then reports the cut entry.
pub(super) fn read_run(span: ChainedSpan, mut buffer: Vec<u8>) -> io::Result<Run> {
    let ChainedSpan {
        file,
        file_len,
        limits,
        start,
        end,
        first_entry,
        run_end,
    } = span;
    let empty_at = |position: u64, buffer: Vec<u8>| -> io::Result<Run> {
        Ok(Run::new(to_usize(position)?, buffer, 0))
    };
    let range_len = to_usize(end - start)?;
    let walk_from = |first| HeaderWalk {
        first,
        position: first,
        end,
        len: file_len,
        max_entry_bytes: limits.max_entry_bytes,
        ended: false,
    };
    // The range is read a piece at a time. Before each piece, a look at whether the run before
    // has said where the first entry starts: if the chain already ended or passed this range,
    // the rest of it is not read; if it starts here (as it mostly has by then), each piece's
    // headers are walked while the piece is still in the cache. (Walked after the whole read,
    // every header was a cache miss, and the walk, the serial part, took 6% of a two-thread
    // decode.) Once the walk is past the range's end, the rest is read as its last entry's
    // tail.
    let mut walk: Option<HeaderWalk> = None;
    // The range's bytes held in `buffer`, from `start` on; short if the file shrank.
    let mut filled = 0;
    // The whole range is read (or the file ended inside it).
    let mut read_all = false;
    let mut walk = loop {
        if walk.is_none() {
            // While there is more to read, only a look; once there is not, a wait.
            let said = if read_all {
                Some(first_entry.wait())
            } else {
                first_entry.peek()
            };
            match said {
                None => {}
                Some(Handoff::At(first)) if first >= end => {
                    // The entry that ended the run before covers this whole range.
                    run_end.say(Handoff::At(first));
                    return empty_at(first, buffer);
                }
                Some(Handoff::At(first)) => {
                    let mut started = walk_from(first);
                    started.advance(&buffer[..filled], start);
                    walk = Some(started);
                }
                Some(Handoff::Ended) => {
                    run_end.say(Handoff::Ended);
                    return empty_at(start, buffer);
                }
                Some(Handoff::Abandoned) => return Err(abandoned()),
            }
        }
        match walk {
            Some(walk) if read_all || walk.done() => break walk,
            // Not after a wait, which starts the walk or returns; kept total without a panic.
            _ if read_all => continue,
            _ => {}
        }
        let piece_end = range_len.min(filled + READ_PIECE_BYTES);
        if buffer.len() < piece_end {
            buffer.resize(piece_end, 0);
        }
        let got = read_up_to(&file, start + filled as u64, &mut buffer[filled..piece_end])?;
        filled += got;
        if let Some(walk) = walk.as_mut() {
            walk.advance(&buffer[..filled], start);
        }
        read_all = filled == range_len || filled < piece_end;
    };
    let first = walk.first;
    // The header that crosses the range's end, read after the range.
    while !walk.done() {
        let header_end = to_usize(walk.position - start)? + ENTRY_HEADER_SIZE;
        filled += read_into(&file, start, &mut buffer, filled, header_end)?;
        if filled < header_end {
            // The file ends inside this header (or shrank): the walk reports the cut entry.
            walk.cut_at(start + filled as u64);
            break;
        }
        walk.advance(&buffer[..filled], start);
    }
    let position = walk.position;
    run_end.say(if walk.ended {
        Handoff::Ended
    } else {
        Handoff::At(position)
    });
    let run_len = to_usize(position - start)?;
    if filled < run_len {
        filled += read_into(&file, start, &mut buffer, filled, run_len)?;
    }
    let from = to_usize(first - start)?;
    Ok(Run::within(
        to_usize(first)?,
        buffer,
        from..run_len.min(filled).max(from),
    ))
}

/// Reads the file's bytes at `start + filled ..` into `buffer[filled..wanted]` (grown to
/// `wanted`); returns how many were read, fewer only at the end of the file.
fn read_into(
    file: &File,
    start: u64,
    buffer: &mut Vec<u8>,
    filled: usize,
    wanted: usize,
) -> io::Result<usize> {
    if buffer.len() < wanted {
        buffer.resize(wanted, 0);
    }
    read_up_to(file, start + filled as u64, &mut buffer[filled..wanted])
}

/// The walk over entry headers from a run's first entry to the first entry boundary at or
/// past its range's end, or to an entry the walk of the records will refuse.
struct HeaderWalk {
    /// The run's first entry, as the run before said.
    first: u64,
    /// Where the next entry starts.
    position: u64,
    /// The range's end.
    end: u64,
    /// Where the file ends for this walk.
    len: u64,
    max_entry_bytes: usize,
    /// A refused or cut entry ended the entries: the run ends at `position`.
    ended: bool,
}

impl HeaderWalk {
    fn done(&self) -> bool {
        self.ended || self.position >= self.end
    }

    /// Walks the headers that lie in `held`, the file's bytes from `start` on; stops at the
    /// first one that does not (or when done).
    fn advance(&mut self, held: &[u8], start: u64) {
        while !self.done() {
            // `position` is in the range (not done), so it is at most the range's length past
            // `start`, which is a `usize`.
            let at = (self.position - start) as usize;
            let Some(header) = held.get(at..at + ENTRY_HEADER_SIZE) else {
                return;
            };
            match EntryHeader::peek(header).and_then(EntryHeader::size) {
                Some(size) if size <= self.max_entry_bytes => {
                    if size as u64 <= self.len - self.position {
                        self.position += size as u64;
                    } else {
                        // Cut off by the end of the file: the run takes what there is.
                        self.position = self.len;
                        self.ended = true;
                    }
                }
                // Refused by the walk from its header alone: the run ends after the header.
                _ => {
                    self.position += ENTRY_HEADER_SIZE as u64;
                    self.ended = true;
                }
            }
        }
    }

    /// The file ends at `file_end`, inside the header at `position`.
    fn cut_at(&mut self, file_end: u64) {
        self.len = self.len.min(file_end);
        self.position = self.position.max(self.len);
        self.ended = true;
    }
}

fn to_usize(position: u64) -> io::Result<usize> {
    usize::try_from(position).map_err(io::Error::other)
}

fn abandoned() -> io::Error {
    io::Error::other("the run before this one was not read, so where this one starts is unknown")
}

#[cfg(test)]
mod tests {
    use std::thread;

    use super::*;
    use crate::decode::runs::tests::{
        entries_sized as entries, file_with, limits_with as limits, read_runs as streamed,
    };

    /// Every non-empty run, as (start, bytes), read in order on this thread (every start
    /// boundary is then said before its run is read).
    fn chained(data: &[u8], limits: RunLimits) -> Vec<(usize, Vec<u8>)> {
        let (_temp, file) = file_with(data);
        let mut runs = ChainedRuns::with_min_range(file, data.len() as u64, limits, 1);
        let mut out = Vec::new();
        let mut buffer = Vec::new();
        while let Some(span) = runs.next_span() {
            let run = read_run(span, buffer).expect("read");
            if !run.bytes().is_empty() {
                out.push((run.start, run.bytes().to_vec()));
            }
            buffer = run.into_buffer();
        }
        out
    }

    /// The runs hold the same entries as the streamed ones, each once and in order, and
    /// every run starts on an entry boundary. Runs are cut at other places (at the first
    /// boundary past a fixed range end, not past a run size from the run's start), so the
    /// comparison is of the bytes joined. After a refused or cut entry the streamed runs may
    /// hold more of the input than the chained ones; that part is never decoded.
    fn assert_same_entries(data: &[u8], limits: RunLimits, refused_at: Option<usize>) {
        let streamed: Vec<u8> = streamed(data, limits)
            .into_iter()
            .flat_map(|r| r.1)
            .collect();
        let runs = chained(data, limits);
        let mut joined = Vec::new();
        for (start, bytes) in &runs {
            assert_eq!(*start, joined.len(), "{limits:?}: a gap or overlap");
            joined.extend_from_slice(bytes);
        }
        match refused_at {
            Some(at) => {
                let keep = at + ENTRY_HEADER_SIZE.min(data.len() - at);
                assert_eq!(joined, &streamed[..keep], "{limits:?}");
            }
            None => assert_eq!(joined, streamed, "{limits:?}"),
        }
    }

    #[test]
    fn runs_hold_every_entry_once_for_any_range_size() {
        let data = entries(&[20_000, 13, 40_000, 100, 100, 70_000, 16_384, 12, 250, 250]);
        for run_bytes in [1, 11, 12, 13, 100, 20_000, 20_013, 50_000, 1 << 20] {
            assert_same_entries(&data, limits(run_bytes, 1 << 30), None);
        }
    }

    #[test]
    fn runs_start_on_entry_boundaries_at_or_past_their_range() {
        let data = entries(&[100, 100, 100, 50, 300]);
        let starts: Vec<usize> = chained(&data, limits(150, 1 << 30))
            .iter()
            .map(|r| r.0)
            .collect();
        // Ranges 0..150, 150..300, 300..450, 450..600, 600..650; entries start at 0, 100,
        // 200, 300, 350. The last two ranges lie inside the entry at 350: their runs are
        // empty.
        assert_eq!(starts, vec![0, 200, 300]);
    }

    #[test]
    fn a_cut_last_entry_ends_the_runs_with_what_there_is() {
        let data = entries(&[2_000, 3_000, 250, 250]);
        for cut in [1, 5, 12, 13, 249, 250, 251, 262, 3_499] {
            let data = &data[..data.len() - cut];
            for run_bytes in [1, 100, 2_500, 1 << 20] {
                assert_same_entries(data, limits(run_bytes, 1 << 30), None);
            }
        }
    }

    #[test]
    fn a_refused_entry_ends_the_runs_after_its_header() {
        let data = entries(&[2_000, 3_000, 2_000, 100]);
        // Too large for the limit.
        for run_bytes in [1, 100, 2_005, 1 << 20] {
            assert_same_entries(&data, limits(run_bytes, 2_500), Some(2_000));
        }
        // A negative length.
        let mut negative = entries(&[2_000, 3_000, 100]);
        negative[2_000 + 8..2_000 + 12].copy_from_slice(&(-5i32).to_be_bytes());
        for run_bytes in [1, 100, 2_005, 1 << 20] {
            assert_same_entries(&negative, limits(run_bytes, 1 << 30), Some(2_000));
        }
        // After the refused entry no range is handed out any more.
        let (_temp, file) = file_with(&negative);
        let mut runs =
            ChainedRuns::with_min_range(file, negative.len() as u64, limits(100, 1 << 30), 1);
        let mut handed_out = 0;
        let mut buffer = Vec::new();
        while let Some(span) = runs.next_span() {
            handed_out += 1;
            buffer = read_run(span, buffer).expect("read").into_buffer();
        }
        assert_eq!(
            handed_out, 21,
            "ranges up to the one holding the refused header"
        );
    }

    #[test]
    fn workers_on_other_threads_wait_for_their_start() {
        let sizes: Vec<i64> = (0..2_000).map(|i| 200 + (i * 37) % 300).collect();
        let data = entries(&sizes);
        let (_temp, file) = file_with(&data);
        let mut runs =
            ChainedRuns::with_min_range(file, data.len() as u64, limits(4_096, 1 << 30), 1);
        let spans: Vec<ChainedSpan> = std::iter::from_fn(|| runs.next_span()).collect();
        // Read in reverse on threads of their own: each waits for the one before.
        let handles: Vec<_> = spans
            .into_iter()
            .rev()
            .map(|span| thread::spawn(move || read_run(span, Vec::new()).expect("read")))
            .collect();
        let mut read: Vec<Run> = handles
            .into_iter()
            .map(|h| h.join().expect("join"))
            .collect();
        read.reverse();
        let joined: Vec<u8> = read.iter().flat_map(|run| run.bytes().to_vec()).collect();
        assert_eq!(joined, data);
    }

    #[test]
    fn a_run_after_an_abandoned_one_is_an_error() {
        let data = entries(&[100; 10]);
        let (_temp, file) = file_with(&data);
        let mut runs =
            ChainedRuns::with_min_range(file, data.len() as u64, limits(300, 1 << 30), 1);
        let first = runs.next_span().expect("a span");
        let second = runs.next_span().expect("a span");
        drop(first);
        let error = read_run(second, Vec::new()).expect_err("no start");
        assert!(error.to_string().contains("not read"), "{error}");
        assert!(runs.next_span().is_none(), "the chain is broken");
    }

    /// Entries of random sizes (now and then one larger than many ranges), cut into ranges of
    /// random sizes, with the file's end cut or one entry refused (negative length, or over
    /// the entry limit): the runs hold what a streaming read holds, each entry once, in order.
    mod random {
        use proptest::prelude::*;

        use super::*;

        fn sizes() -> impl Strategy<Value = Vec<i64>> {
            prop::collection::vec(
                prop_oneof![8 => 12i64..400, 2 => 400i64..3_000, 1 => 3_000i64..20_000],
                1..60,
            )
        }

        #[derive(Clone, Debug)]
        enum Damage {
            None,
            /// This many bytes cut off the end (at most the whole file).
            Cut(usize),
            /// The entry at this index (modulo the count) gets a negative length.
            Negative(usize),
            /// The entry at this index (modulo the count) is over the entry limit.
            OverLimit(usize),
        }

        fn damage() -> impl Strategy<Value = Damage> {
            prop_oneof![
                Just(Damage::None),
                (1usize..500).prop_map(Damage::Cut),
                any::<usize>().prop_map(Damage::Negative),
                any::<usize>().prop_map(Damage::OverLimit),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            #[test]
            fn runs_hold_the_streamed_entries(
                sizes in sizes(),
                run_bytes in 1usize..8_000,
                damage in damage(),
            ) {
                let mut data = entries(&sizes);
                let starts: Vec<usize> = sizes
                    .iter()
                    .scan(0usize, |at, &size| {
                        let start = *at;
                        *at += size as usize;
                        Some(start)
                    })
                    .collect();
                let mut max_entry_bytes = 1 << 30;
                let refused_at = match damage {
                    Damage::None => None,
                    Damage::Cut(cut) => {
                        data.truncate(data.len().saturating_sub(cut));
                        None
                    }
                    Damage::Negative(index) => {
                        let at = starts[index % starts.len()];
                        data[at + 8..at + 12].copy_from_slice(&(-7i32).to_be_bytes());
                        Some(at)
                    }
                    Damage::OverLimit(index) => {
                        let index = index % starts.len();
                        let at = starts[index];
                        // Every entry before it fits the limit; it does not.
                        let largest_before = sizes[..index].iter().copied().max().unwrap_or(12);
                        let size = (largest_before + 1).max(sizes[index]);
                        data[at + 8..at + 12].copy_from_slice(&((size - 12) as i32).to_be_bytes());
                        max_entry_bytes = size as usize - 1;
                        Some(at)
                    }
                };
                assert_same_entries(&data, limits(run_bytes, max_entry_bytes), refused_at);
            }
        }
    }

    #[test]
    fn a_file_that_shrank_gives_a_short_run() {
        let data = entries(&[2_000, 3_000]);
        let (temp, file) = file_with(&data);
        let mut runs =
            ChainedRuns::with_min_range(file, data.len() as u64, limits(1 << 20, 1 << 30), 1);
        let span = runs.next_span().expect("a range");
        temp.as_file().set_len(2_500).expect("truncate");
        let run = read_run(span, Vec::new()).expect("read");
        assert_eq!(run.start, 0);
        assert_eq!(run.bytes(), &data[..2_500]);
    }
}
