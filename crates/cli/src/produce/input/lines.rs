//! kcat's `-P` input: each piece of the input between delimiters (`-D`, a newline by default)
//! is one record, or each FILE whole is one.
//!
//! kcat's meanings, kept exactly: an empty piece (an empty line) is skipped, and so is an
//! empty FILE; with `-K`, the bytes before the first key delimiter are the key and the rest
//! the value, and a piece without one is all value with no key; `-Z` makes an empty key or
//! value found that way null (a tombstone); a record left without a key takes `-k`'s key; `-H`'s
//! headers go on every record.

use std::io::Read;
use std::path::Path;

use super::{DecodedParts, Header, InputError, InputRecord, Origin, RecordRef};

/// How line input becomes records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineFormat {
    /// Between records (`-D`); never empty.
    pub delimiter: Vec<u8>,
    /// Between a record's key and value (`-K`).
    pub key_delimiter: Option<Vec<u8>>,
    /// The key of records that have none of their own (`-k`).
    pub fixed_key: Option<Vec<u8>>,
    /// An empty key or value after `-K` is null (`-Z`).
    pub null_empty: bool,
    /// Headers of every record (`-H`), in order.
    pub headers: Vec<Header>,
}

impl Default for LineFormat {
    fn default() -> Self {
        LineFormat {
            delimiter: b"\n".to_vec(),
            key_delimiter: None,
            fixed_key: None,
            null_empty: false,
            headers: Vec::new(),
        }
    }
}

impl LineFormat {
    /// The record `piece` holds, `None` for an empty piece (skipped, as kcat does).
    pub fn record(&self, piece: &[u8], origin: Origin) -> Option<InputRecord> {
        self.record_ref(piece, origin)
            .map(|record| record.to_owned())
    }

    /// The record `piece` holds, borrowing it and this format's key and headers; `None` for
    /// an empty piece.
    pub fn record_ref<'a>(&'a self, piece: &'a [u8], origin: Origin) -> Option<RecordRef<'a>> {
        if piece.is_empty() {
            return None;
        }
        let mut key = None;
        let mut value = Some(piece);
        if let Some(delimiter) = &self.key_delimiter {
            if let Some(at) = find(piece, delimiter) {
                let (before, after) = (&piece[..at], &piece[at + delimiter.len()..]);
                key = Some(before).filter(|k| !(self.null_empty && k.is_empty()));
                value = Some(after).filter(|v| !(self.null_empty && v.is_empty()));
            }
        }
        Some(RecordRef {
            key: key.or(self.fixed_key.as_deref()),
            value,
            headers: &self.headers,
            timestamp: None,
            partition: None,
            origin,
            decoded: DecodedParts::default(),
        })
    }
}

/// FILE whole as one record with `-k`'s key and `-H`'s headers; `None` for an empty file
/// (skipped, as kcat does). A file over `limit` bytes is refused before it is read.
pub fn read_whole_file(
    format: &LineFormat,
    path: &Path,
    limit: usize,
) -> Result<Option<InputRecord>, InputError> {
    let origin = Origin {
        source: path.display().to_string().into(),
        line: None,
    };
    let open = |source| InputError::Open {
        file: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(open)?;
    let too_long = |origin| InputError::TooLong {
        origin,
        what: "a record",
        limit,
    };
    if file.metadata().map_err(open)?.len() > limit as u64 {
        return Err(too_long(origin));
    }
    let mut value = Vec::new();
    // The file may grow after the size check: read at most one byte past the limit.
    file.take(limit as u64 + 1)
        .read_to_end(&mut value)
        .map_err(|source| InputError::Read {
            origin: origin.clone(),
            source,
        })?;
    if value.len() > limit {
        return Err(too_long(origin));
    }
    if value.is_empty() {
        return Ok(None);
    }
    Ok(Some(InputRecord {
        key: format.fixed_key.clone(),
        value: Some(value),
        headers: format.headers.clone(),
        timestamp: None,
        partition: None,
        origin,
        decoded: DecodedParts::default(),
    }))
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    match *needle {
        [] => Some(0),
        [byte] => memchr::memchr(byte, haystack),
        _ => memchr::memmem::find(haystack, needle),
    }
}

/// A `-D` or `-K` delimiter as kcat reads it: `\n`, `\t` and `\xHH` (one or two hex digits)
/// stand for their bytes; krec also reads `\r` and `\\`. Any other text is taken as it is.
pub fn parse_delimiter(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'\\').then(|| bytes.get(at + 1)).flatten();
        match escaped {
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'r') => out.push(b'\r'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let digits = bytes[at + 2..]
                    .iter()
                    .take(2)
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count();
                if digits == 0 {
                    return Err(format!("{text:?}: \\x expects a hex number (\\x1f)"));
                }
                let hex = &text[at + 2..at + 2 + digits];
                out.push(u8::from_str_radix(hex, 16).expect("checked hex digits"));
                at += 2 + digits;
                continue;
            }
            _ => {
                out.push(bytes[at]);
                at += 1;
                continue;
            }
        }
        at += 2;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            source: "stdin".into(),
            line: Some(1),
        }
    }

    type Parts = (Option<&'static [u8]>, Option<&'static [u8]>);
    type KeyValue = (Option<Vec<u8>>, Option<Vec<u8>>);

    fn parts(format: &LineFormat, piece: &[u8]) -> Option<KeyValue> {
        format
            .record(piece, origin())
            .map(|record| (record.key, record.value))
    }

    fn owned((key, value): Parts) -> Option<KeyValue> {
        Some((key.map(<[u8]>::to_vec), value.map(<[u8]>::to_vec)))
    }

    #[test]
    fn key_delimiter_splits_at_its_first_occurrence() {
        let format = LineFormat {
            key_delimiter: Some(b"::".to_vec()),
            ..LineFormat::default()
        };
        assert_eq!(
            parts(&format, b"k::v::w"),
            owned((Some(b"k"), Some(b"v::w")))
        );
        assert_eq!(parts(&format, b"no key"), owned((None, Some(b"no key"))));
        // A one-byte delimiter is searched for apart from longer ones.
        let tab = LineFormat {
            key_delimiter: Some(b"\t".to_vec()),
            ..LineFormat::default()
        };
        assert_eq!(parts(&tab, b"k\tv\tw"), owned((Some(b"k"), Some(b"v\tw"))));
        // Without -Z, empty stays empty.
        assert_eq!(parts(&format, b"::"), owned((Some(b""), Some(b""))));
        assert_eq!(parts(&format, b""), None, "an empty line is skipped");
    }

    #[test]
    fn null_empty_makes_empty_keys_and_values_null_after_a_key_delimiter_only() {
        let format = LineFormat {
            key_delimiter: Some(b"\t".to_vec()),
            null_empty: true,
            ..LineFormat::default()
        };
        assert_eq!(parts(&format, b"k\t"), owned((Some(b"k"), None)));
        assert_eq!(parts(&format, b"\tv"), owned((None, Some(b"v"))));
        assert_eq!(parts(&format, b"\t"), owned((None, None)));
        let no_key_delimiter = LineFormat {
            null_empty: true,
            ..LineFormat::default()
        };
        assert_eq!(parts(&no_key_delimiter, b"v"), owned((None, Some(b"v"))));
    }

    #[test]
    fn fixed_key_goes_on_records_left_without_one() {
        let format = LineFormat {
            key_delimiter: Some(b";".to_vec()),
            fixed_key: Some(b"fixed".to_vec()),
            null_empty: true,
            headers: vec![(b"h".to_vec(), Some(b"1".to_vec())), (b"n".to_vec(), None)],
            ..LineFormat::default()
        };
        assert_eq!(parts(&format, b"own;v"), owned((Some(b"own"), Some(b"v"))));
        assert_eq!(parts(&format, b"v"), owned((Some(b"fixed"), Some(b"v"))));
        // kcat: the key -Z made null is then replaced by -k's.
        assert_eq!(parts(&format, b";v"), owned((Some(b"fixed"), Some(b"v"))));
        let record = format.record(b"x", origin()).unwrap();
        assert_eq!(record.headers, format.headers);
        assert_eq!((record.timestamp, record.partition), (None, None));
    }

    #[test]
    fn delimiters_read_kcats_escapes() {
        let cases: [(&str, &[u8]); 8] = [
            ("\\n", b"\n"),
            ("\\t\\n\\n", b"\t\n\n"),
            ("\\x54!\\x45\\x53T", b"T!EST"),
            ("\\x30", b"0"),
            ("\\x0", b"\0"),
            ("\\x4142", b"\x4142"),
            ("a\\\\b\\r", b"a\\b\r"),
            ("|\\q|", b"|\\q|"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_delimiter(text).unwrap(), expected, "{text}");
        }
        assert!(parse_delimiter("\\xg").unwrap_err().contains("hex"));
        assert!(parse_delimiter("end\\x").is_err());
    }

    #[test]
    fn a_whole_file_is_one_record_and_an_empty_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let format = LineFormat {
            fixed_key: Some(b"k".to_vec()),
            key_delimiter: Some(b"\n".to_vec()),
            ..LineFormat::default()
        };
        let path = dir.path().join("one");
        std::fs::write(&path, b"a\nb\n\xff").unwrap();
        let record = read_whole_file(&format, &path, 100).unwrap().unwrap();
        assert_eq!(
            record.value.as_deref(),
            Some(&b"a\nb\n\xff"[..]),
            "-K does not split files"
        );
        assert_eq!(record.key.as_deref(), Some(&b"k"[..]));
        assert_eq!(record.origin.to_string(), path.display().to_string());
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(read_whole_file(&format, &empty, 100).unwrap().is_none());
        let big = dir.path().join("big");
        std::fs::write(&big, [b'x'; 101]).unwrap();
        let error = read_whole_file(&format, &big, 100).unwrap_err();
        assert!(error.to_string().contains("over 100 bytes"), "{error}");
        let missing = read_whole_file(&format, &dir.path().join("nope"), 100).unwrap_err();
        assert!(missing.to_string().contains("nope"), "{missing}");
    }
}
