//! Record headers and their index.
//!
//! The record iterator must parse every header anyway to check that a record uses exactly its
//! declared length, so that same pass writes each header's key and value span into an inline
//! index (16-bit positions, up to `INLINE_HEADERS` headers, no heap; see `index`). Lookups
//! only read the index and never re-scan the record. Records with more headers, or a headers
//! section of 64 KiB or more, get a 32-bit index built on the heap on first use instead.

use std::cell::OnceCell;

use crate::index::{HeaderCount, InlineIndex, Span, INLINE_HEADERS};
use crate::v2::walk_headers;
use crate::varint::{read_varint, SHORT_LENGTH_MASK};

/// A header's key and value positions, for records the inline index cannot cover.
#[derive(Clone, Copy, Debug)]
struct WideSpan {
    key_start: u32,
    key_len: u32,
    value_start: u32,
    /// `u32::MAX` when the value is null.
    value_len: u32,
}

/// The heap index of a record the inline index cannot cover. A box of this (one pointer)
/// rather than a boxed slice (two) keeps the rarely used cell small in every record.
#[derive(Clone, Debug)]
struct SpilledIndex {
    spans: Vec<WideSpan>,
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

/// A record's headers, with the index of every key and value span.
///
/// The record iterator already checked the bytes, so lookups cannot fail.
pub struct Headers<'r> {
    /// The headers section (after the header count).
    section: &'r [u8],
    count: HeaderCount,
    inline: InlineIndex,
    spilled: OnceCell<Box<SpilledIndex>>,
}

impl<'r> Headers<'r> {
    #[inline(always)]
    pub(crate) fn inline_index_mut(&mut self) -> &mut InlineIndex {
        &mut self.inline
    }

    /// `section` is the checked headers section holding `count` headers; the inline index
    /// was filled while checking it when `count` says it covers them.
    #[inline(always)]
    pub(crate) fn set_section(&mut self, section: &'r [u8], count: HeaderCount) {
        self.section = section;
        self.count = count;
        // A heap index left from the record these headers belonged to before is read only
        // through a wide count, so only a wide record needs it gone: records the inline index
        // covers skip the cell (and the last call of a record walk, which finds no record, no
        // longer tests it either).
        if count.is_wide() && self.spilled.get().is_some() {
            self.spilled = OnceCell::new();
        }
    }

    /// The checked headers section in wire form (after the header count), for a writer that
    /// copies it as it is.
    pub(crate) fn wire_section(&self) -> &'r [u8] {
        self.section
    }

    /// No headers.
    pub(crate) fn none() -> Self {
        Headers {
            section: &[],
            count: HeaderCount::inline(0),
            inline: [Span::default(); INLINE_HEADERS],
            spilled: OnceCell::new(),
        }
    }

    /// Number of headers, duplicates included.
    pub fn len(&self) -> usize {
        self.count.count()
    }

    /// True when the record has no headers.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first header with this key.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<Header<'r>> {
        // Only a record without headers has an all-zero count (a wide one has its top bit).
        if self.count.is_zero() {
            return None;
        }
        self.find(key)
    }

    /// [`Headers::get`] on a record with headers. Keys are compared by their spans first and
    /// only the match's value varint is read (`iter().find` would read the value of every
    /// header it passes). Inlined into the caller, so a constant key is compared without a
    /// call to `memcmp`.
    #[inline(always)]
    fn find(&self, key: &[u8]) -> Option<Header<'r>> {
        let bytes = self.section;
        let Some(count) = self.count.inline_count() else {
            return self.iter().find(|h| h.key == key);
        };
        for s in &self.inline[..count] {
            let (start, key_end) = (s.key_start as usize, s.value_length_at as usize);
            if key_end.wrapping_sub(start) != key.len() {
                continue;
            }
            match bytes.get(start..key_end) {
                Some(found) if found == key => {
                    return Some(Header {
                        key: found,
                        value: value_at(bytes, key_end),
                    })
                }
                _ => {}
            }
        }
        None
    }

    /// Every header with this key, in wire order.
    pub fn get_all<'h>(&'h self, key: &'h [u8]) -> impl Iterator<Item = Header<'r>> + 'h {
        self.iter().filter(move |h| h.key == key)
    }

    /// Every header, in wire order, duplicates and null values kept.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = Header<'r>> + '_ {
        let bytes = self.section;
        let (inline, spilled): (&[Span], &[WideSpan]) = match self.count.inline_count() {
            Some(count) => (&self.inline[..count], &[]),
            None => (
                &[],
                &self.spilled.get_or_init(|| spill(bytes, self.len())).spans[..],
            ),
        };
        inline
            .iter()
            .map(move |s| {
                let key_end = s.value_length_at as usize;
                Header {
                    key: bytes.get(s.key_start as usize..key_end).unwrap_or_default(),
                    value: value_at(bytes, key_end),
                }
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

/// The value whose length varint is at `at`: `None` for null (or, impossibly for a checked
/// record, a bad varint).
#[inline(always)]
fn value_at(bytes: &[u8], at: usize) -> Option<&[u8]> {
    // Most header values are short: a one-byte length, read without the general reader.
    if let Some(&length) = bytes.get(at) {
        if length & SHORT_LENGTH_MASK == 0 {
            return Some(slice(bytes, at + 1, (length >> 1) as usize));
        }
    }
    let mut pos = at;
    let len = read_varint(bytes, &mut pos).ok()?;
    if len < 0 {
        return None;
    }
    Some(slice(bytes, pos, len as usize))
}

/// `bytes[start..start + len]`, empty if out of range (impossible for a checked record).
#[inline(always)]
fn slice(bytes: &[u8], start: usize, len: usize) -> &[u8] {
    bytes.get(start..start + len).unwrap_or_default()
}

/// Indexes every header of a checked section too big for the inline index, in one pass.
#[cold]
fn spill(bytes: &[u8], count: usize) -> Box<SpilledIndex> {
    let base = bytes.as_ptr() as usize;
    let position = |s: &[u8]| (s.as_ptr() as usize - base) as u32;
    // The count is bounded by the section length (each header takes at least two bytes).
    let mut spans = Vec::with_capacity(count.min(bytes.len() / 2));
    let mut pos = 0;
    // The record iterator checked these bytes: an error is impossible here and would only
    // shorten the index, never panic.
    let _ = walk_headers(bytes, &mut pos, count, |k, v| {
        spans.push(WideSpan {
            key_start: position(k),
            key_len: k.len() as u32,
            value_start: v.map_or(0, position),
            value_len: v.map_or(u32::MAX, |v| v.len() as u32),
        });
    });
    Box::new(SpilledIndex { spans })
}

impl Clone for Headers<'_> {
    /// A heap index is cloned only with the record it belongs to: a record refilled in place
    /// keeps the index of an earlier wide record until the next wide one (see
    /// `set_section`), and a copy of a later record has no use for it.
    fn clone(&self) -> Self {
        Headers {
            section: self.section,
            count: self.count,
            inline: self.inline,
            spilled: if self.count.is_wide() {
                self.spilled.clone()
            } else {
                OnceCell::new()
            },
        }
    }
}

impl std::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
