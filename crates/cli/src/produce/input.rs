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
        };
        input.current = Some((name.into(), input.delimited(reader)));
        input
    }

    /// The next record, `None` when every input is read.
    pub fn next_record(&mut self) -> Result<Option<InputRecord>, InputError> {
        loop {
            if self.whole_files {
                let Some(path) = self.pending.pop_front() else {
                    return Ok(None);
                };
                let InputFormat::Lines(format) = &self.format else {
                    unreachable!("whole files are line input only")
                };
                match lines::read_whole_file(format, &path, self.limit)? {
                    Some(record) => return Ok(Some(record)),
                    None => continue,
                }
            }
            if let Some(record) = self.next_in_current()? {
                return Ok(Some(record));
            }
            let Some(path) = self.pending.pop_front() else {
                return Ok(None);
            };
            let file = std::fs::File::open(&path).map_err(|source| InputError::Open {
                file: path.display().to_string(),
                source,
            })?;
            let reader: Box<dyn Read + Send> = Box::new(file);
            self.current = Some((path.display().to_string().into(), self.delimited(reader)));
        }
    }

    /// The next record of the file (or stdin) being read; `None` once it is done.
    fn next_in_current(&mut self) -> Result<Option<InputRecord>, InputError> {
        let Some((source, pieces)) = &mut self.current else {
            return Ok(None);
        };
        loop {
            let origin = |number| Origin {
                source: source.clone(),
                line: Some(number),
            };
            let (number, piece) = match pieces.next_piece() {
                Ok(Some(found)) => found,
                Ok(None) => break,
                Err(SplitError::TooLong { number }) => {
                    return Err(InputError::TooLong {
                        origin: origin(number),
                        what: match self.format {
                            InputFormat::Lines(_) => "a record",
                            InputFormat::Json(_) => "a JSON line",
                        },
                        limit: self.piece_limit(),
                    })
                }
                Err(SplitError::Read { number, source }) => {
                    return Err(InputError::Read {
                        origin: origin(number),
                        source,
                    })
                }
            };
            let record = match &self.format {
                InputFormat::Lines(format) => format.record(piece, origin(number)),
                InputFormat::Json(format) => format.record(piece, origin(number))?,
            };
            if let Some(record) = record {
                return Ok(Some(record));
            }
        }
        self.current = None;
        Ok(None)
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
