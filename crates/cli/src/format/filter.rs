//! Record filters (`--key`, `--header`, `--grep`), checked before a record is formatted: a
//! record that does not match costs a comparison or a header lookup in the one-pass header
//! index, never an output line.

use regex::bytes::Regex;

use super::record::RecordFields;
use super::template::unescape;
use crate::Error;

/// The filter options of `krec decode` and `krec consume`.
#[derive(Clone, Debug, Default, PartialEq, Eq, clap::Args)]
pub struct FilterArgs {
    /// Only records whose key is exactly KEY (escapes \n \t \\ \xHH allowed, for binary keys).
    #[arg(long = "key", value_name = "KEY")]
    pub key: Option<String>,

    /// Only records carrying header NAME (any value), or NAME=VALUE (that exact value); may
    /// be repeated, and every one must hold. Escapes as for --key.
    #[arg(long = "header", value_name = "NAME[=VALUE]")]
    pub headers: Vec<String>,

    /// Only records whose value matches REGEX (Rust regex syntax, on the value's bytes; a
    /// null value never matches).
    #[arg(long = "grep", value_name = "REGEX")]
    pub grep: Option<String>,

    /// Offsets to write, `[from, to)` (`krec decode -o START:END`; consume bounds its fetches
    /// instead).
    #[arg(skip)]
    pub offsets: Option<OffsetWindow>,
}

/// Offsets `from` up to `to` (exclusive; none: no end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffsetWindow {
    /// The first offset written.
    pub from: i64,
    /// The first offset past the window.
    pub to: Option<i64>,
}

impl OffsetWindow {
    fn holds(&self, offset: i64) -> bool {
        offset >= self.from && self.to.is_none_or(|to| offset < to)
    }
}

impl FilterArgs {
    /// The filter these options describe; `None` when they ask for every record.
    pub fn filter(&self) -> Result<Option<RecordFilter>, Error> {
        let key = self
            .key
            .as_deref()
            .map(|k| unescape("--key", k))
            .transpose()?;
        let headers = self
            .headers
            .iter()
            .map(|text| HeaderTest::parse(text))
            .collect::<Result<Vec<_>, _>>()?;
        let grep = self
            .grep
            .as_deref()
            .map(|pattern| {
                Regex::new(pattern).map_err(|error| Error::InvalidArgument {
                    what: "--grep",
                    detail: format!("{pattern:?}: {error}"),
                })
            })
            .transpose()?;
        let offsets = self.offsets;
        if key.is_none() && headers.is_empty() && grep.is_none() && offsets.is_none() {
            return Ok(None);
        }
        Ok(Some(RecordFilter {
            offsets,
            key,
            headers,
            grep,
        }))
    }
}

/// What a record must satisfy to be written: all of its parts.
#[derive(Clone, Debug)]
pub struct RecordFilter {
    offsets: Option<OffsetWindow>,
    key: Option<Vec<u8>>,
    headers: Vec<HeaderTest>,
    grep: Option<Regex>,
}

/// One `--header`: a name, and the value it must have if one was given.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HeaderTest {
    name: Vec<u8>,
    value: Option<Vec<u8>>,
}

impl HeaderTest {
    fn parse(text: &str) -> Result<Self, Error> {
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(unescape("--header", value)?)),
            None => (text, None),
        };
        if name.is_empty() {
            return Err(Error::InvalidArgument {
                what: "--header",
                detail: format!("{text:?}: expected NAME or NAME=VALUE"),
            });
        }
        Ok(Self {
            name: unescape("--header", name)?,
            value,
        })
    }

    fn holds<R: RecordFields + ?Sized>(&self, record: &R) -> bool {
        match &self.value {
            // The first header of that name, as `%{h:NAME}` reads it, is a lookup in the index.
            None => record.header_value(&self.name).is_some(),
            Some(wanted) => record
                .header_pairs()
                .any(|(name, value)| name == self.name && value == Some(wanted.as_slice())),
        }
    }
}

impl RecordFilter {
    /// True when `record` satisfies every part; the cheapest parts are checked first.
    pub fn matches<R: RecordFields + ?Sized>(&self, record: &R) -> bool {
        if let Some(window) = &self.offsets {
            if !window.holds(record.offset()) {
                return false;
            }
        }
        if let Some(key) = &self.key {
            if record.key() != Some(key.as_slice()) {
                return false;
            }
        }
        if !self.headers.iter().all(|test| test.holds(record)) {
            return false;
        }
        match (&self.grep, record.value()) {
            (None, _) => true,
            (Some(grep), Some(value)) => grep.is_match(value),
            (Some(_), None) => false,
        }
    }

    /// The exact key asked for, if any: lets a reader go to the one partition holding it.
    pub fn key(&self) -> Option<&[u8]> {
        self.key.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::FilterArgs;
    use crate::format::record::tests::TestRecord;

    fn args(key: Option<&str>, headers: &[&str], grep: Option<&str>) -> FilterArgs {
        FilterArgs {
            key: key.map(str::to_owned),
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            grep: grep.map(str::to_owned),
            offsets: None,
        }
    }

    fn record() -> TestRecord {
        TestRecord {
            key: Some(b"user\x007".to_vec()),
            value: Some(b"{\"trace\":\"abc-123\"}".to_vec()),
            headers: vec![
                (b"trace".to_vec(), Some(b"t-1".to_vec())),
                (b"nil".to_vec(), None),
                (b"trace".to_vec(), Some(b"t-2".to_vec())),
            ],
            ..TestRecord::default()
        }
    }

    #[test]
    fn every_part_must_hold() {
        let cases = [
            (args(Some("user\\x007"), &[], None), true),
            (args(Some("user7"), &[], None), false),
            (args(None, &["trace"], None), true),
            (args(None, &["nil"], None), true),
            (args(None, &["absent"], None), false),
            (args(None, &["trace=t-2"], None), true),
            (args(None, &["trace=t-3"], None), false),
            (args(None, &["nil="], None), false),
            (args(None, &["trace=t-1", "nil"], None), true),
            (args(None, &["trace=t-1", "absent"], None), false),
            (args(None, &[], Some("abc-[0-9]+")), true),
            (args(None, &[], Some("^abc")), false),
            (args(Some("user\\x007"), &["trace=t-1"], Some("123")), true),
            (args(Some("user\\x007"), &["trace=t-1"], Some("999")), false),
        ];
        for (filter_args, expected) in cases {
            let filter = filter_args.filter().unwrap().expect("some filter");
            assert_eq!(filter.matches(&record()), expected, "{filter_args:?}");
        }
        let tombstone = TestRecord {
            value: None,
            ..record()
        };
        let grep = args(None, &[], Some(".*")).filter().unwrap().unwrap();
        assert!(
            !grep.matches(&tombstone),
            "a null value never matches --grep"
        );
    }

    #[test]
    fn an_offset_window_holds_from_up_to_its_end() {
        let window = |from, to| FilterArgs {
            offsets: Some(super::OffsetWindow { from, to }),
            ..FilterArgs::default()
        };
        let at = |offset| TestRecord { offset, ..record() };
        let bounded = window(3, Some(5)).filter().unwrap().expect("a filter");
        let kept: Vec<i64> = (0..8).filter(|&o| bounded.matches(&at(o))).collect();
        assert_eq!(kept, [3, 4]);
        let open = window(6, None).filter().unwrap().unwrap();
        assert!(open.matches(&at(i64::MAX)) && !open.matches(&at(5)));
    }

    #[test]
    fn no_options_no_filter_and_bad_ones_are_errors() {
        assert!(FilterArgs::default().filter().unwrap().is_none());
        for bad in [
            args(None, &[], Some("(unclosed")),
            args(None, &["=v"], None),
            args(Some("\\q"), &[], None),
        ] {
            assert!(bad.filter().is_err(), "{bad:?}");
        }
    }
}
