//! The header index the record parser fills as it checks a record's headers: plain data
//! (spans of 16-bit positions) that the [`Headers`](crate::Headers) view reads.

/// Headers indexed inline; beyond this the index spills to the heap. As many as keep a
/// [`Record`] (which carries the index) within 128 bytes, so moving one by value is a few
/// register stores rather than a `memcpy` call.
///
/// [`Record`]: crate::Record
pub(crate) const INLINE_HEADERS: usize = 9;
/// Headers sections this long or longer use the wide index (16-bit positions would not do).
pub(crate) const MAX_INLINE_SECTION: usize = u16::MAX as usize;

/// Where one header lies inside the record's headers section: the start of its key bytes and
/// the position of its value-length varint (which is also where the key ends). Two 16-bit
/// positions per header keep the inline index cheap to carry in every record; the value's
/// length is read from its (already checked) varint when the value is asked for.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    pub(crate) key_start: u16,
    pub(crate) value_length_at: u16,
}

/// The inline index, filled while the record is checked.
pub(crate) type InlineIndex = [Span; INLINE_HEADERS];

/// Whether the inline index covers a section of `len` bytes holding `count` headers.
#[inline(always)]
pub(crate) fn fits_inline(count: usize, len: usize) -> bool {
    count <= INLINE_HEADERS && len < MAX_INLINE_SECTION
}

/// A record's header count, with the top bit set when the inline index does not cover the
/// record. The record reader knows which index applies when it reads the headers; kept
/// here, a lookup tells it with one comparison instead of testing [`fits_inline`] again
/// (two comparisons and the section's length, each lookup).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeaderCount(u32);

impl HeaderCount {
    /// Set on counts whose record uses the wide index. Counts are below it: each header
    /// takes at least two bytes of a record whose length is an `i32`.
    const WIDE: u32 = 1 << 31;

    /// `count` headers, covered by the inline index ([`fits_inline`] held).
    #[inline(always)]
    pub(crate) fn inline(count: u32) -> Self {
        HeaderCount(count)
    }

    /// `count` headers, too many or too long for the inline index.
    #[inline(always)]
    pub(crate) fn wide(count: u32) -> Self {
        HeaderCount(count | Self::WIDE)
    }

    /// Whether the record uses the wide index.
    #[inline(always)]
    pub(crate) fn is_wide(self) -> bool {
        self.0 & Self::WIDE != 0
    }

    /// How many headers.
    #[inline(always)]
    pub(crate) fn count(self) -> usize {
        (self.0 & !Self::WIDE) as usize
    }

    /// No headers, and the inline index (empty) covers them.
    #[inline(always)]
    pub(crate) fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// How many headers, when the inline index covers them.
    #[inline(always)]
    pub(crate) fn inline_count(self) -> Option<usize> {
        // A wide count has the top bit set, so it is never this small.
        (self.0 as usize <= INLINE_HEADERS).then_some(self.0 as usize)
    }
}
