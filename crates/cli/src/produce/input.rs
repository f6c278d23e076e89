//! What `krec produce` reads: records from standard input or files, one module per format.
//!
//! - [`lines`]: kcat's `-P` input: pieces of the input cut at `-D` (a newline by default),
//!   each one record, its key before `-K` or `-k`'s, `-H`'s headers, `-Z` for nulls; or each
//!   FILE whole as one record.
//! - [`json`]: JSON lines in the shape `krec consume -J` writes.
//!
//! Each reader streams: it holds one record (and one read of input) at a time, never a whole
//! input, and each record says where it came from (`FILE:LINE`, `stdin:LINE`) for the errors
//! that may come later, when the broker refuses it.

pub mod json;
pub mod lines;
mod split;

use std::collections::VecDeque;
use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use split::{Delimited, SplitError};

/// A header: its name and its value, `None` for null.
pub type Header = (Vec<u8>, Option<Vec<u8>>);

/// The input being read, cut into pieces.
type Pieces = Delimited<Box<dyn Read + Send>>;

/// Which parts of a record are JSON documents in the notation `krec consume -J -s` writes
/// (the `-J` line carries `key_schema_id` / `value_schema_id`) rather than Avro's JSON
/// encoding: what a schema encoder reads them as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodedParts {
    /// The key is in the decoded notation.
    pub key: bool,
    /// The value is in the decoded notation.
    pub value: bool,
}

/// One record read, owned, with where it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputRecord {
    /// The key; `None` for a null key.
    pub key: Option<Vec<u8>>,
    /// The value; `None` for a null value (a tombstone).
    pub value: Option<Vec<u8>>,
    /// Headers in order, duplicates kept; a header's value may be null.
    pub headers: Vec<Header>,
    /// The timestamp in ms since the epoch, when the input gives one (else the producer's
    /// clock stamps it).
    pub timestamp: Option<i64>,
    /// The partition, when the input names one.
    pub partition: Option<i32>,
    /// Where the record was read.
    pub origin: Origin,
    /// The parts in the notation `krec consume -J -s` writes.
    pub decoded: DecodedParts,
}

/// One record read, borrowing the input's buffer (line input), the reader's storage for JSON
/// lines, or its last whole file: what is sent, with no copy of its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The key; `None` for a null key.
    pub key: Option<&'a [u8]>,
    /// The value; `None` for a null value.
    pub value: Option<&'a [u8]>,
    /// Headers in order.
    pub headers: &'a [Header],
    /// The timestamp in ms since the epoch, if the input gives one.
    pub timestamp: Option<i64>,
    /// The partition, if the input names one.
    pub partition: Option<i32>,
    /// Where the record was read.
    pub origin: Origin,
    /// The parts in the notation `krec consume -J -s` writes.
    pub decoded: DecodedParts,
}

impl RecordRef<'_> {
    /// The record with its bytes copied.
    pub fn to_owned(&self) -> InputRecord {
        InputRecord {
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            headers: self.headers.to_vec(),
            timestamp: self.timestamp,
            partition: self.partition,
            origin: self.origin.clone(),
            decoded: self.decoded,
        }
    }
}

impl InputRecord {
    /// The record, borrowed.
    pub fn as_ref(&self) -> RecordRef<'_> {
        RecordRef {
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            headers: &self.headers,
            timestamp: self.timestamp,
            partition: self.partition,
            origin: self.origin.clone(),
            decoded: self.decoded,
        }
    }
}

/// Where a record was read: a file (or `stdin`) and, for line input, the line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The file as given, or `stdin`.
    pub source: Arc<str>,
    /// The line (or `-D` piece) number from 1; `None` for a whole file.
    pub line: Option<u64>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.source),
            None => f.write_str(&self.source),
        }
    }
}

/// Input that cannot become a record, with where it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A FILE argument could not be opened or read.
    #[error("{file}: {source}")]
    Open {
        /// The file as given.
        file: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },

    /// Reading failed in the middle of the input.
    #[error("{origin}: reading failed: {source}")]
    Read {
        /// Where reading stopped.
        origin: Origin,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },

    /// A record, or the line holding it, is longer than a record may be.
    #[error("{origin}: {what} over {limit} bytes, the most max.request.size allows")]
    TooLong {
        /// The record's line, or its file.
        origin: Origin,
        /// `a record` or `a JSON line`.
        what: &'static str,
        /// The most allowed.
        limit: usize,
    },

    /// A `-J` line that is not JSON.
    #[error("{origin}: malformed JSON: {detail}")]
    Json {
        /// The line.
        origin: Origin,
        /// What the parser said, with the column.
        detail: String,
    },

    /// A `-J` line whose field has the wrong shape.
    #[error("{origin}: field {field}: {detail}")]
    Field {
        /// The line.
        origin: Origin,
        /// The field (`key`, `headers[2][1]`, ...).
        field: String,
        /// What was expected.
        detail: String,
    },
}

/// How the input is read.
#[derive(Clone, Debug)]
pub enum InputFormat {
    /// kcat's `-P`: pieces cut at a delimiter, or whole files.
    Lines(lines::LineFormat),
    /// `-J`: JSON lines as `krec consume -J` writes them.
    Json(json::JsonFormat),
}

/// The records of standard input or of FILE arguments, read one after another.
pub struct Input {
    format: InputFormat,
    /// Whole files as records (FILE arguments of line input without `-l`).
    whole_files: bool,
    /// Longest record, in the input's own bytes (`max.request.size`).
    limit: usize,
    pending: VecDeque<PathBuf>,
    /// The file (or stdin) being read, by name.
    current: Option<(Arc<str>, Pieces)>,
    /// The last whole file read as a record, lent out by [`Input::next_borrowed`].
    held: Option<InputRecord>,
    /// The last JSON line's record, its storage kept from line to line.
    json: json::JsonRecordBuf,
}

impl Input {
    /// Records in `format` from `files` (standard input when empty), each at most `limit`
    /// bytes; with `whole_files`, each line-format FILE is one record.
    pub fn new(format: InputFormat, files: Vec<PathBuf>, whole_files: bool, limit: usize) -> Self {
        let mut input = Input {
            whole_files: whole_files
                && matches!(format, InputFormat::Lines(_))
                && !files.is_empty(),
            format,
            limit,
            pending: files.into(),
            current: None,
            held: None,
            json: json::JsonRecordBuf::default(),
        };
        if input.pending.is_empty() {
            let stdin: Box<dyn Read + Send> = Box::new(std::io::stdin());
            input.current = Some(("stdin".into(), input.delimited(stdin)));
        }
        input
    }

    /// Records in `format` from `reader`, named `name` in errors, line by line.
    pub fn from_reader(
        format: InputFormat,
        name: &str,
        reader: Box<dyn Read + Send>,
        limit: usize,
    ) -> Self {
        let mut input = Input {
            format,
            whole_files: false,
            limit,
            pending: VecDeque::new(),
            current: None,
            held: None,
            json: json::JsonRecordBuf::default(),
        };
        input.current = Some((name.into(), input.delimited(reader)));
        input
    }

    /// The next record, owned, `None` when every input is read.
    pub fn next_record(&mut self) -> Result<Option<InputRecord>, InputError> {
        Ok(self.next_borrowed()?.map(|record| record.to_owned()))
    }

    /// The next record, borrowed until the next call; `None` when every input is read.
    pub fn next_borrowed(&mut self) -> Result<Option<RecordRef<'_>>, InputError> {
        loop {
            if self.whole_files {
                let Some(path) = self.pending.pop_front() else {
                    return Ok(None);
                };
                let InputFormat::Lines(format) = &self.format else {
                    unreachable!("whole files are line input only")
                };
                match lines::read_whole_file(format, &path, self.limit)? {
                    Some(record) => return Ok(Some(self.held.insert(record).as_ref())),
                    None => continue,
                }
            }
            let Some((number, span)) = self.next_span_in_current()? else {
                let Some(path) = self.pending.pop_front() else {
                    return Ok(None);
                };
                let file = std::fs::File::open(&path).map_err(|source| InputError::Open {
                    file: path.display().to_string(),
                    source,
                })?;
                let reader: Box<dyn Read + Send> = Box::new(file);
                self.current = Some((path.display().to_string().into(), self.delimited(reader)));
                continue;
            };
            // Decided on the span, not the bytes: an empty piece is skipped without a borrow.
            if span.is_empty() {
                continue;
            }
            let origin = Origin {
                source: self.current_source(),
                line: Some(number),
            };
            // Each branch borrows on its own: a borrow returned from one must not be held
            // while the loop reads on.
            if let InputFormat::Json(_) = self.format {
                let (InputFormat::Json(format), Some((_, pieces))) = (&self.format, &self.current)
                else {
                    unreachable!("checked above")
                };
                if format.read_into(pieces.slice(span), &origin, &mut self.json)? {
                    return Ok(Some(self.json.record(origin)));
                }
                continue;
            }
            let (InputFormat::Lines(format), Some((_, pieces))) = (&self.format, &self.current)
            else {
                unreachable!("line input, with a span from the current input")
            };
            return Ok(format.record_ref(pieces.slice(span), origin));
        }
    }

    /// The name of the file (or stdin) being read.
    fn current_source(&self) -> Arc<str> {
        self.current
            .as_ref()
            .map_or_else(|| "stdin".into(), |(source, _)| source.clone())
    }

    /// The number and span of the next piece of the file (or stdin) being read; `None` once
    /// it is done.
    fn next_span_in_current(
        &mut self,
    ) -> Result<Option<(u64, std::ops::Range<usize>)>, InputError> {
        let Some((source, pieces)) = &mut self.current else {
            return Ok(None);
        };
        let origin = |number| Origin {
            source: source.clone(),
            line: Some(number),
        };
        match pieces.next_span() {
            Ok(Some(found)) => Ok(Some(found)),
            Ok(None) => {
                self.current = None;
                Ok(None)
            }
            Err(SplitError::TooLong { number }) => Err(InputError::TooLong {
                origin: origin(number),
                what: match self.format {
                    InputFormat::Lines(_) => "a record",
                    InputFormat::Json(_) => "a JSON line",
                },
                limit: self.piece_limit(),
            }),
            Err(SplitError::Read { number, source }) => Err(InputError::Read {
                origin: origin(number),
                source,
            }),
        }
    }

    fn delimited(&self, reader: Box<dyn Read + Send>) -> Pieces {
        let delimiter = match &self.format {
            InputFormat::Lines(format) => &format.delimiter[..],
            InputFormat::Json(_) => b"\n",
        };
        Delimited::new(reader, delimiter, self.piece_limit())
    }

    /// The longest piece of input read for one record.
    fn piece_limit(&self) -> usize {
        match self.format {
            InputFormat::Lines(_) => self.limit,
            InputFormat::Json(_) => json::line_limit(self.limit),
        }
    }
}
