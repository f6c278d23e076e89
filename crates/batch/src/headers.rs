//! Record headers, indexed in one pass on first use.

use std::cell::OnceCell;

use crate::v2::walk_headers;

/// Headers indexed inline before the index spills to the heap.
const INLINE_HEADERS: usize = 16;
/// Marks a null header value in a [`Span`].
const NULL: u16 = u16::MAX;

/// Where one header's key and value lie inside the record's headers section, as 16-bit
/// positions: the inline index stays at 128 bytes, cheap to carry in every record. Sections
/// of 64 KiB or more, or more than 16 headers, use the 32-bit spilled index instead.
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    key_start: u16,
    key_len: u16,
    value_start: u16,
    value_len: u16,
}

/// A header's key and value positions for large sections.
#[derive(Clone, Copy, Debug)]
struct WideSpan {
    key_start: u32,
    key_len: u32,
    value_start: u32,
    /// `u32::MAX` when the value is null.
    value_len: u32,
}

/// The index of one record's headers.
#[derive(Clone, Debug)]
enum Index {
    Inline {
        len: u8,
        spans: [Span; INLINE_HEADERS],
    },
    Spilled(Vec<WideSpan>),
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
    index: OnceCell<Index>,
}

impl<'r> Headers<'r> {
    /// `bytes` is the checked headers section (after the header count), holding `count` headers.
    #[inline(always)]
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

    #[inline]
    fn index(&self) -> &Index {
        self.index
            .get_or_init(|| build_index(self.bytes, self.count))
    }

    /// The first header with this key.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<Header<'r>> {
        self.iter().find(|h| h.key == key)
    }

    /// Every header with this key, in wire order.
    pub fn get_all<'h>(&'h self, key: &'h [u8]) -> impl Iterator<Item = Header<'r>> + 'h {
        self.iter().filter(move |h| h.key == key)
    }

    /// Every header, in wire order, duplicates and null values kept.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = Header<'r>> + '_ {
        let bytes = self.bytes;
        let (inline, spilled): (&[Span], &[WideSpan]) = if self.count == 0 {
            (&[], &[])
        } else {
            match self.index() {
                Index::Inline { len, spans } => (&spans[..*len as usize], &[]),
                Index::Spilled(spans) => (&[], spans),
            }
        };
        inline
            .iter()
            .map(move |s| Header {
                key: slice(bytes, s.key_start as usize, s.key_len as usize),
                value: (s.value_len != NULL)
                    .then(|| slice(bytes, s.value_start as usize, s.value_len as usize)),
            })
            .chain(spilled.iter().map(move |s| {
                Header {
                    key: slice(bytes, s.key_start as usize, s.key_len as usize),
                    value: (s.value_len != u32::MAX)
                        .then(|| slice(bytes, s.value_start as usize, s.value_len as usize)),
                }
            }))
    }
}

/// `bytes[start..start + len]`, empty if out of range (impossible for a checked record).
#[inline(always)]
fn slice(bytes: &[u8], start: usize, len: usize) -> &[u8] {
    bytes.get(start..start + len).unwrap_or_default()
}

/// Indexes every header of a checked headers section in one pass.
#[cold]
fn build_index(bytes: &[u8], count: u32) -> Index {
    let base = bytes.as_ptr() as usize;
    let position = |s: &[u8]| s.as_ptr() as usize - base;
    let mut pos = 0;
    if count as usize <= INLINE_HEADERS && bytes.len() < NULL as usize {
        let mut spans = [Span::default(); INLINE_HEADERS];
        let mut len = 0u8;
        // The record iterator checked these bytes: an error is impossible here and would only
        // shorten the index, never panic.
        let _ = walk_headers(bytes, &mut pos, count as usize, |i, k, v| {
            spans[i] = Span {
                key_start: position(k) as u16,
                key_len: k.len() as u16,
                value_start: v.map_or(0, |v| position(v) as u16),
                value_len: v.map_or(NULL, |v| v.len() as u16),
            };
            len = i as u8 + 1;
        });
        Index::Inline { len, spans }
    } else {
        let mut spans = Vec::with_capacity(count as usize);
        let _ = walk_headers(bytes, &mut pos, count as usize, |_, k, v| {
            spans.push(WideSpan {
                key_start: position(k) as u32,
                key_len: k.len() as u32,
                value_start: v.map_or(0, |v| position(v) as u32),
                value_len: v.map_or(u32::MAX, |v| v.len() as u32),
            });
        });
        Index::Spilled(spans)
    }
}

impl std::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
