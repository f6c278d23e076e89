//! Record headers, indexed in one pass on first use.

use std::cell::OnceCell;

use smallvec::SmallVec;

use crate::v2::walk_headers;

/// Headers indexed inline before the index spills to the heap.
const INLINE_HEADERS: usize = 16;
/// Marks a null header value in a [`Span`].
const NULL: u32 = u32::MAX;

/// Where one header's key and value lie inside the record's headers section.
#[derive(Clone, Copy, Debug)]
struct Span {
    key_start: u32,
    key_len: u32,
    value_start: u32,
    value_len: u32,
}

/// One record header. The key is a non-null byte string (usually UTF-8, but Kafka does not
/// enforce it); the value may be null.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'r> {
    /// Header key bytes.
    pub key: &'r [u8],
    /// Header value, `None` when null.
    pub value: Option<&'r [u8]>,
}

impl<'r> Header<'r> {
    /// The key as UTF-8; the error keeps non-UTF-8 keys reportable rather than lost.
    pub fn key_str(&self) -> Result<&'r str, std::str::Utf8Error> {
        std::str::from_utf8(self.key)
    }
}

/// A record's headers. The first lookup indexes every header's key and value span in one
/// pass (inline up to 16 headers, on the heap beyond); later lookups only read the index.
///
/// The record iterator already checked the bytes, so lookups cannot fail.
#[derive(Clone)]
pub struct Headers<'r> {
    bytes: &'r [u8],
    count: u32,
    index: OnceCell<SmallVec<[Span; INLINE_HEADERS]>>,
}

impl<'r> Headers<'r> {
    /// `bytes` is the checked headers section (after the header count), holding `count` headers.
    pub(crate) fn new(bytes: &'r [u8], count: u32) -> Self {
        Headers {
            bytes,
            count,
            index: OnceCell::new(),
        }
    }

    /// No headers.
    pub(crate) fn none() -> Self {
        Headers::new(&[], 0)
    }

    /// Number of headers, duplicates included.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the record has no headers.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn spans(&self) -> &[Span] {
        self.index.get_or_init(|| {
            let mut spans = SmallVec::new();
            let base = self.bytes.as_ptr() as usize;
            let mut pos = 0;
            // Checked by the record iterator: an error here is impossible, and would only
            // shorten the index, never panic.
            let _ = walk_headers(self.bytes, &mut pos, self.count as usize, |_, k, v| {
                let key_start = (k.as_ptr() as usize - base) as u32;
                let (value_start, value_len) = match v {
                    Some(v) => ((v.as_ptr() as usize - base) as u32, v.len() as u32),
                    None => (0, NULL),
                };
                spans.push(Span {
                    key_start,
                    key_len: k.len() as u32,
                    value_start,
                    value_len,
                });
            });
            spans
        })
    }

    #[inline]
    fn header(&self, span: &Span) -> Header<'r> {
        let bytes = self.bytes;
        let key_end = span.key_start as usize + span.key_len as usize;
        let key = bytes
            .get(span.key_start as usize..key_end)
            .unwrap_or_default();
        let value = if span.value_len == NULL {
            None
        } else {
            let start = span.value_start as usize;
            bytes.get(start..start + span.value_len as usize)
        };
        Header { key, value }
    }

    /// The first header with this key.
    pub fn get(&self, key: &[u8]) -> Option<Header<'r>> {
        self.get_all(key).next()
    }

    /// Every header with this key, in wire order.
    pub fn get_all<'h>(&'h self, key: &'h [u8]) -> impl Iterator<Item = Header<'r>> + 'h {
        let bytes = self.bytes;
        self.spans()
            .iter()
            .filter(move |s| {
                s.key_len as usize == key.len()
                    && bytes.get(s.key_start as usize..s.key_start as usize + s.key_len as usize)
                        == Some(key)
            })
            .map(move |s| self.header(s))
    }

    /// Every header, in wire order, duplicates and null values kept.
    pub fn iter(&self) -> impl Iterator<Item = Header<'r>> + '_ {
        self.spans().iter().map(move |s| self.header(s))
    }
}

impl std::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
