//! Borrowed record views and the record iterator.

use bytes::Bytes;

use crate::headers::Headers;
use crate::legacy::LegacyRecords;
use crate::v2::V2Records;
use crate::{Error, TimestampType};

/// Where a key or value lies in the record body; `len == u32::MAX` means null. Positions
/// instead of slices keep [`Record`] within 128 bytes, so moving one is a few register stores.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Part {
    pub(crate) const NULL: Part = Part {
        start: 0,
        len: u32::MAX,
    };

    /// The part for `field`, a sub-slice of `record` (or null).
    #[inline(always)]
    fn of(record: &[u8], field: Option<&[u8]>) -> Part {
        match field {
            None => Part::NULL,
            Some(f) => Part {
                start: (f.as_ptr() as usize - record.as_ptr() as usize) as u32,
                len: f.len() as u32,
            },
        }
    }

    #[inline(always)]
    pub(crate) fn get(self, record: &[u8]) -> Option<&[u8]> {
        if self.len == u32::MAX {
            return None;
        }
        // In range by construction; `get` keeps an impossible miss from panicking.
        record.get(self.start as usize..self.start as usize + self.len as usize)
    }
}

/// A borrowed record view. `'r` borrows from the walked input or from the batch's pooled
/// decompression buffer.
#[derive(Clone, Debug)]
pub struct Record<'r> {
    offset: i64,
    timestamp: i64,
    shared: Option<&'r Bytes>,
    key: Part,
    value: Part,
    timestamp_type: TimestampType,
    headers: Headers<'r>,
}

impl<'r> Record<'r> {
    /// A record whose key and value are sub-slices of `record` and which has no headers.
    pub(crate) fn without_headers(
        offset: i64,
        timestamp: i64,
        timestamp_type: TimestampType,
        record: &'r [u8],
        key: Option<&'r [u8]>,
        value: Option<&'r [u8]>,
        shared: Option<&'r Bytes>,
    ) -> Self {
        Record {
            offset,
            timestamp,
            shared,
            key: Part::of(record, key),
            value: Part::of(record, value),
            timestamp_type,
            headers: Headers::none(record),
        }
    }

    /// An empty record for the v2 iterator to fill in place.
    #[inline(always)]
    pub(crate) fn empty(timestamp_type: TimestampType, shared: Option<&'r Bytes>) -> Self {
        Record {
            offset: 0,
            timestamp: 0,
            shared,
            key: Part::NULL,
            value: Part::NULL,
            timestamp_type,
            headers: Headers::none(&[]),
        }
    }

    /// The header index, for the record iterator to fill in place.
    #[inline(always)]
    pub(crate) fn inline_index_mut(&mut self) -> &mut crate::headers::InlineIndex {
        self.headers.inline_index_mut()
    }

    /// Sets the fields read from the wire (the index was filled in place). `key` and `value`
    /// lie in `record`, whose headers section starts at `headers_start`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn set_fields(
        &mut self,
        offset: i64,
        timestamp: i64,
        record: &'r [u8],
        key: Part,
        value: Part,
        headers_start: usize,
        header_count: u32,
    ) {
        self.offset = offset;
        self.timestamp = timestamp;
        self.key = key;
        self.value = value;
        self.headers
            .set_section(record, headers_start as u32, header_count);
    }

    /// Absolute offset.
    pub fn offset(&self) -> i64 {
        self.offset
    }
    /// Timestamp in ms: LogAppendTime batches give the batch max timestamp; magic 0 gives -1.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }
    /// What the timestamp means.
    pub fn timestamp_type(&self) -> TimestampType {
        self.timestamp_type
    }
    /// The key, `None` when null.
    pub fn key(&self) -> Option<&'r [u8]> {
        self.key.get(self.headers.record_bytes())
    }
    /// The value, `None` when null (a tombstone).
    pub fn value(&self) -> Option<&'r [u8]> {
        self.value.get(self.headers.record_bytes())
    }
    /// The headers, indexed on first use.
    pub fn headers(&self) -> &Headers<'r> {
        &self.headers
    }
    /// The key as owned `Bytes`: zero-copy when walked with
    /// [`BatchWalk::new_shared`](crate::BatchWalk::new_shared) and the records' bytes are in
    /// the input (uncompressed, or an LZ4 frame of one stored block), a copy otherwise.
    pub fn key_bytes(&self) -> Option<Bytes> {
        self.key().map(|k| self.to_bytes(k))
    }
    /// The value as owned `Bytes` (same copy rules as [`Record::key_bytes`]).
    pub fn value_bytes(&self) -> Option<Bytes> {
        self.value().map(|v| self.to_bytes(v))
    }

    fn to_bytes(&self, part: &[u8]) -> Bytes {
        match self.shared {
            // `shared` is only set when every field borrows from it, so slice_ref cannot panic.
            Some(shared) if !part.is_empty() => shared.slice_ref(part),
            _ => Bytes::copy_from_slice(part),
        }
    }
}

enum Inner<'b> {
    Empty,
    V2(V2Records<'b>),
    Legacy(LegacyRecords<'b>),
}

/// The data records of a batch, in order. Each record is checked as it is yielded; after
/// the last one the iterator checks the batch held exactly its declared count. It stops
/// after the first error.
pub struct Records<'b> {
    inner: Inner<'b>,
}

impl<'b> Records<'b> {
    pub(crate) fn empty() -> Self {
        Records {
            inner: Inner::Empty,
        }
    }
    pub(crate) fn v2(records: V2Records<'b>) -> Self {
        Records {
            inner: Inner::V2(records),
        }
    }
    pub(crate) fn legacy(records: LegacyRecords<'b>) -> Self {
        Records {
            inner: Inner::Legacy(records),
        }
    }
}

impl<'b> Iterator for Records<'b> {
    type Item = Result<Record<'b>, Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Empty => None,
            Inner::V2(r) => r.next_record(),
            Inner::Legacy(r) => r.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.inner {
            Inner::Empty => (0, Some(0)),
            // One more for a possible count-mismatch error.
            Inner::V2(r) => (0, Some(r.remaining() + 1)),
            Inner::Legacy(r) => (0, Some(r.remaining() + 1)),
        }
    }
}

impl std::iter::FusedIterator for Records<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_stays_within_two_cache_lines() {
        // Larger records are moved with a memcpy call per record, which the bench showed as
        // the main cost over the floor; this keeps the inline header index from growing back.
        assert!(
            std::mem::size_of::<Record<'_>>() <= 128,
            "{}",
            std::mem::size_of::<Record<'_>>()
        );
    }
}
