//! Input cut at a delimiter, streamed: one reused buffer that never holds more than the
//! longest allowed record plus one read, however long the input.

use std::io::{ErrorKind, Read};

/// How much is asked of the reader at a time.
const READ_SIZE: usize = 64 << 10;

/// A stream of byte strings separated by a delimiter of one or more bytes.
///
/// The last one may end at the end of input without a delimiter (as a last line without
/// its newline). Pieces are numbered from 1, empty ones included, so a piece's number is its
/// line number when the delimiter is `\n`.
pub(crate) struct Delimited<R> {
    reader: R,
    delimiter: Vec<u8>,
    /// Longest piece allowed, without its delimiter.
    limit: usize,
    buf: Vec<u8>,
    /// The unread piece starts here.
    start: usize,
    /// Bytes of `buf` filled by the reader.
    end: usize,
    /// Where the delimiter search resumes: the bytes from `start` up to here hold none.
    scanned: usize,
    /// The number of the piece returned last.
    number: u64,
    at_eof: bool,
}

/// Why no piece could be returned.
#[derive(Debug)]
pub(crate) enum SplitError {
    /// Piece `number` runs past the limit without a delimiter.
    TooLong {
        /// Its number.
        number: u64,
    },
    /// Reading failed while piece `number` was read.
    Read {
        /// Its number.
        number: u64,
        /// What the reader said.
        source: std::io::Error,
    },
}

impl<R: Read> Delimited<R> {
    /// Pieces of `reader` split at `delimiter` (not empty), each at most `limit` bytes.
    pub(crate) fn new(reader: R, delimiter: &[u8], limit: usize) -> Self {
        debug_assert!(
            !delimiter.is_empty(),
            "the arguments refuse an empty delimiter"
        );
        Delimited {
            reader,
            delimiter: delimiter.to_vec(),
            limit,
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            number: 0,
            at_eof: false,
        }
    }

    /// The next piece and its number, `None` at the end of input.
    #[cfg(test)]
    pub(crate) fn next_piece(&mut self) -> Result<Option<(u64, &[u8])>, SplitError> {
        Ok(self
            .next_span()?
            .map(|(number, span)| (number, self.slice(span))))
    }

    /// The bytes of a span [`next_span`](Self::next_span) returned, until the next call.
    pub(crate) fn slice(&self, span: std::ops::Range<usize>) -> &[u8] {
        &self.buf[span]
    }

    /// The next piece's number and where it is in the buffer ([`slice`](Self::slice)), `None`
    /// at the end of input: a span, not a borrow, so that a caller may skip it and read on.
    pub(crate) fn next_span(
        &mut self,
    ) -> Result<Option<(u64, std::ops::Range<usize>)>, SplitError> {
        loop {
            if let Some(at) = self.find_delimiter() {
                if at - self.start > self.limit {
                    return Err(SplitError::TooLong {
                        number: self.number + 1,
                    });
                }
                let piece = self.start..at;
                self.start = at + self.delimiter.len();
                self.scanned = self.start;
                return Ok(self.take(piece));
            }
            // No delimiter in the unread bytes: this many already make the piece too long.
            let unread = self.end - self.start;
            if unread >= self.limit + self.delimiter.len() || (self.at_eof && unread > self.limit) {
                return Err(SplitError::TooLong {
                    number: self.number + 1,
                });
            }
            if self.at_eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let piece = self.start..self.end;
                self.start = self.end;
                self.scanned = self.end;
                return Ok(self.take(piece));
            }
            self.fill()?;
        }
    }

    fn take(&mut self, piece: std::ops::Range<usize>) -> Option<(u64, std::ops::Range<usize>)> {
        self.number += 1;
        Some((self.number, piece))
    }

    /// Where the next delimiter starts, searching only bytes not searched before.
    fn find_delimiter(&mut self) -> Option<usize> {
        let window = &self.buf[self.scanned..self.end];
        let found = match *self.delimiter.as_slice() {
            [byte] => memchr::memchr(byte, window),
            _ => memchr::memmem::find(window, &self.delimiter),
        };
        match found {
            Some(offset) => Some(self.scanned + offset),
            None => {
                // A delimiter may straddle what is read next: keep its first bytes unscanned.
                let keep = self.delimiter.len() - 1;
                self.scanned = self.end.saturating_sub(keep).max(self.start);
                None
            }
        }
    }

    /// Reads more, first moving the unread bytes to the front of the buffer.
    fn fill(&mut self) -> Result<(), SplitError> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        // Room for one read past the longest piece and its delimiter, never more.
        let most = self.limit + self.delimiter.len() + 1;
        let wanted = (self.end + READ_SIZE).min(most.max(self.end + 1));
        if self.buf.len() < wanted {
            self.buf.resize(wanted, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.at_eof = true;
                    return Ok(());
                }
                Ok(read) => {
                    self.end += read;
                    return Ok(());
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(SplitError::Read {
                        number: self.number + 1,
                        source,
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Delimited, SplitError};

    /// A reader that hands out at most `step` bytes per read, to cut delimiters in two.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn pieces(data: &[u8], delimiter: &[u8], step: usize) -> Vec<(u64, Vec<u8>)> {
        let mut split = Delimited::new(Trickle { data, step }, delimiter, 100);
        let mut out = Vec::new();
        while let Some((number, piece)) = split.next_piece().expect("within the limit") {
            out.push((number, piece.to_vec()));
        }
        out
    }

    #[test]
    fn splits_at_every_delimiter_whatever_the_read_sizes() {
        let data = b"a;;b;;;;c;d;;";
        for step in 1..=data.len() {
            let got = pieces(data, b";;", step);
            let expected: Vec<(u64, Vec<u8>)> = vec![
                (1, b"a".to_vec()),
                (2, b"b".to_vec()),
                (3, b"".to_vec()),
                (4, b"c;d".to_vec()),
            ];
            assert_eq!(got, expected, "reads of {step} bytes");
        }
    }

    #[test]
    fn a_last_piece_without_delimiter_counts_and_empty_input_has_none() {
        assert_eq!(
            pieces(b"x\n\ny", b"\n", 3),
            [(1, b"x".to_vec()), (2, Vec::new()), (3, b"y".to_vec())]
        );
        assert!(pieces(b"", b"\n", 1).is_empty());
        assert_eq!(pieces(b"\n", b"\n", 1), [(1, Vec::new())]);
    }

    #[test]
    fn a_piece_over_the_limit_is_an_error_naming_its_number() {
        let mut data = b"short\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 101));
        data.extend_from_slice(b"\nnext\n");
        let mut split = Delimited::new(&data[..], b"\n", 100);
        assert_eq!(split.next_piece().unwrap().unwrap().0, 1);
        match split.next_piece() {
            Err(SplitError::TooLong { number }) => assert_eq!(number, 2),
            other => panic!("expected TooLong, got {:?}", other.map(|p| p.map(|p| p.0))),
        }
        // Exactly the limit is allowed, its delimiter not counted.
        for delimiter in [&b"\n"[..], b"<>"] {
            for step in [1, 7, 1000] {
                let exact = [vec![b'y'; 100], delimiter.to_vec(), vec![b'y'; 100]].concat();
                let data = Trickle { data: &exact, step };
                let mut split = Delimited::new(data, delimiter, 100);
                assert_eq!(split.next_piece().unwrap().unwrap().1.len(), 100);
                assert_eq!(split.next_piece().unwrap().unwrap().1.len(), 100);
                assert!(split.next_piece().unwrap().is_none());
            }
        }
        let over = [b'y'; 101];
        let mut split = Delimited::new(&over[..], b"\n", 100);
        assert!(matches!(
            split.next_piece(),
            Err(SplitError::TooLong { number: 1 })
        ));
    }

    #[test]
    fn the_buffer_stays_bounded_on_a_long_input() {
        let line = [vec![b'z'; 99], b"\n".to_vec()].concat();
        let data: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(line.len() * 5000)
            .collect();
        let mut split = Delimited::new(&data[..], b"\n", 100);
        let mut count = 0;
        while split.next_piece().unwrap().is_some() {
            count += 1;
        }
        assert_eq!(count, 5000);
        assert!(split.buf.len() <= 102, "buffer grew to {}", split.buf.len());
    }
}
