//! Runs of a regular file whose bytes are read by the thread that decodes them.
//!
//! With several threads, the calling thread reads every run and the workers decode them. On
//! large batches that reading (the kernel's copy out of the page cache) is most of what the
//! calling thread does, and it stays serial: after the JSON output got faster it was an eighth
//! of the CPU of a two-thread decode, and it capped the speed-up. Here the calling thread reads
//! only each entry's 12-byte header, at its position, to find where runs end; the worker that
//! decodes a run reads its bytes ([`read_span`]). A 1 MiB batch then costs the calling thread
//! one small `pread`.
//!
//! Only worth it when entries are large: each header is a system call, so a file of small
//! batches is read by [`RunReader`](super::runs::RunReader) as before (one read per run). The
//! file is cut as it was when opened: its length then is its end.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use krec_batch::layout::ENTRY_HEADER_SIZE;
use krec_batch::EntryHeader;

use super::runs::{read_fully, Run, RunLimits};

/// A file whose first entry is at least this large is cut into runs by header reads: at 16
/// KiB per entry a header read costs about a quarter of copying the entry.
pub(super) const POSITIONAL_FROM_ENTRY_BYTES: usize = 16 << 10;

/// Where one run lies in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    /// Byte position of the run's first entry.
    pub(super) start: u64,
    /// Bytes of the run.
    pub(super) len: usize,
}

/// Cuts a regular file into runs of whole entries from their headers alone, exactly where
/// [`RunReader`](super::runs::RunReader) would cut it: a run ends at the first entry boundary
/// at or past the run size, and an entry the walk will refuse (negative length, over the
/// entry limit, cut off by the end of the file) ends the last run.
pub(super) struct PositionalRuns {
    file: Arc<File>,
    /// The file's length when opened: where it ends.
    len: u64,
    limits: RunLimits,
    /// Start of the next run.
    position: u64,
    ended: bool,
}

impl PositionalRuns {
    /// Cuts `file`, `len` bytes long, into runs.
    pub(super) fn new(file: Arc<File>, len: u64, limits: RunLimits) -> Self {
        PositionalRuns {
            file,
            len,
            limits: RunLimits {
                run_bytes: limits.run_bytes.max(1),
                ..limits
            },
            position: 0,
            ended: false,
        }
    }

    /// The file, for the thread that reads a run's bytes.
    pub(super) fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// Whether `file`'s first entry is large enough for header reads to pay off (see
    /// [`POSITIONAL_FROM_ENTRY_BYTES`]).
    pub(super) fn worth_it(file: &File) -> io::Result<bool> {
        let mut header = [0u8; ENTRY_HEADER_SIZE];
        let got = read_up_to(file, 0, &mut header)?;
        Ok(EntryHeader::peek(&header[..got])
            .and_then(EntryHeader::size)
            .is_some_and(|size| size >= POSITIONAL_FROM_ENTRY_BYTES))
    }

    /// The next run; `None` at the end of the file.
    pub(super) fn next_span(&mut self) -> io::Result<Option<Span>> {
        let start = self.position;
        if self.ended || start >= self.len {
            return Ok(None);
        }
        let run_bytes = self.limits.run_bytes as u64;
        let mut end = start;
        while end - start < run_bytes && end < self.len {
            let mut header = [0u8; ENTRY_HEADER_SIZE];
            let got = read_up_to(&self.file, end, &mut header)?;
            if got < ENTRY_HEADER_SIZE {
                // The file ends inside this header (or shrank since it was opened): the walk
                // reports the cut entry.
                self.len = self.len.min(end + got as u64);
                end = self.len;
                self.ended = true;
                break;
            }
            match EntryHeader::peek(&header).and_then(EntryHeader::size) {
                Some(size) if size <= self.limits.max_entry_bytes => {
                    if size as u64 <= self.len - end {
                        end += size as u64;
                    } else {
                        // Cut off by the end of the file: the run takes what there is.
                        end = self.len;
                        self.ended = true;
                    }
                }
                // Refused by the walk from its header alone: the run ends after the header.
                _ => {
                    end += ENTRY_HEADER_SIZE as u64;
                    self.ended = true;
                    break;
                }
            }
        }
        self.position = end;
        let len = usize::try_from(end - start).map_err(io::Error::other)?;
        Ok(Some(Span { start, len }))
    }
}

/// Reads the bytes of `span` from `file` into `buffer` (reused; grown to the span's length
/// only, which header reads checked against the file's length). Fewer bytes if the file
/// shrank since: the walk then reports the cut entry.
pub(super) fn read_span(file: &File, span: Span, mut buffer: Vec<u8>) -> io::Result<Run> {
    if buffer.len() < span.len {
        buffer.resize(span.len, 0);
    }
    let got = read_up_to(file, span.start, &mut buffer[..span.len])?;
    let start = usize::try_from(span.start).map_err(io::Error::other)?;
    Ok(Run::new(start, buffer, got))
}

/// Fills `buffer` from `file` at `position`; short only at the end of the file.
pub(super) fn read_up_to(file: &File, position: u64, buffer: &mut [u8]) -> io::Result<usize> {
    read_fully(&mut ReadAt { file, position }, buffer)
}

/// Reads `file` from `position` on with `pread`, leaving the file's own offset alone (other
/// threads read other runs of the same file at the same time).
struct ReadAt<'f> {
    file: &'f File,
    position: u64,
}

impl io::Read for ReadAt<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buffer, self.position)?;
        self.position += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::runs::tests::{
        entries_sized as entries, file_with, limits_with as limits, read_runs as streamed,
    };

    /// The runs cut from headers and then read, as (start, bytes).
    fn positional(data: &[u8], limits: RunLimits) -> Vec<(usize, Vec<u8>)> {
        let (_temp, file) = file_with(data);
        let mut runs = PositionalRuns::new(file, data.len() as u64, limits);
        let mut out = Vec::new();
        let mut buffer = Vec::new();
        while let Some(span) = runs.next_span().expect("header read") {
            let run = read_span(runs.file(), span, buffer).expect("span read");
            out.push((run.start, run.bytes().to_vec()));
            buffer = run.into_buffer();
        }
        out
    }

    /// Where the positional runs start and the entries they hold match the streamed ones.
    /// After a refused or cut entry the streamed run may hold more of the rest of the input
    /// than the positional one; that part is never decoded, as the walk stops at the entry.
    fn assert_same_runs(data: &[u8], limits: RunLimits, refused_at: Option<usize>) {
        let streamed = streamed(data, limits);
        let positional = positional(data, limits);
        assert_eq!(streamed.len(), positional.len(), "{limits:?}");
        for ((s_start, s_bytes), (p_start, p_bytes)) in streamed.iter().zip(&positional) {
            assert_eq!(s_start, p_start, "{limits:?}");
            match refused_at {
                Some(at) if at < s_start + s_bytes.len() && at >= *s_start => {
                    let keep = at - s_start + ENTRY_HEADER_SIZE.min(data.len() - at);
                    assert_eq!(&s_bytes[..keep], &p_bytes[..], "{limits:?}");
                }
                _ => assert_eq!(s_bytes, p_bytes, "{limits:?}"),
            }
        }
    }

    #[test]
    fn runs_are_cut_where_a_streaming_read_cuts_them() {
        let data = entries(&[20_000, 13, 40_000, 100, 100, 70_000, 16_384]);
        for run_bytes in [1, 12, 13, 20_000, 20_013, 50_000, 1 << 20] {
            assert_same_runs(&data, limits(run_bytes, 1 << 30), None);
        }
    }

    #[test]
    fn a_cut_last_entry_ends_the_runs_with_what_there_is() {
        let data = entries(&[20_000, 30_000]);
        for cut in [1, 5, 12, 13, 29_999] {
            let data = &data[..data.len() - cut];
            for run_bytes in [1, 25_000, 1 << 20] {
                assert_same_runs(data, limits(run_bytes, 1 << 30), None);
            }
        }
    }

    #[test]
    fn a_refused_entry_ends_the_runs_after_its_header() {
        let sizes = entries(&[20_000, 30_000, 20_000]);
        // Too large for the limit.
        for run_bytes in [1, 1 << 20] {
            assert_same_runs(&sizes, limits(run_bytes, 25_000), Some(20_000));
        }
        // A negative length.
        let mut negative = entries(&[20_000, 30_000]);
        negative[20_000 + 8..20_000 + 12].copy_from_slice(&(-5i32).to_be_bytes());
        for run_bytes in [1, 1 << 20] {
            assert_same_runs(&negative, limits(run_bytes, 1 << 30), Some(20_000));
        }
    }

    #[test]
    fn a_file_that_shrank_gives_a_short_run() {
        let data = entries(&[20_000, 30_000]);
        let (temp, file) = file_with(&data);
        let mut runs = PositionalRuns::new(file, data.len() as u64, limits(1 << 20, 1 << 30));
        let span = runs.next_span().expect("header read").expect("a run");
        assert_eq!(
            span,
            Span {
                start: 0,
                len: 50_000
            }
        );
        temp.as_file().set_len(25_000).expect("truncate");
        let run = read_span(runs.file(), span, Vec::new()).expect("read");
        assert_eq!(run.bytes(), &data[..25_000]);
    }

    #[test]
    fn only_files_of_large_first_entries_take_header_reads() {
        for (sizes, expected) in [
            (&[16_384, 100][..], true),
            (&[16_383, 100_000][..], false),
            (&[100, 100_000][..], false),
        ] {
            let data = entries(sizes);
            let (_temp, file) = file_with(&data);
            assert_eq!(
                PositionalRuns::worth_it(&file).expect("read"),
                expected,
                "{sizes:?}"
            );
        }
        let (_temp, empty) = file_with(&[]);
        assert!(!PositionalRuns::worth_it(&empty).expect("read"));
    }
}
