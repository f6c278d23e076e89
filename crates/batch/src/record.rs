//! Borrowed record views and the record iterator.

use bytes::Bytes;

use crate::headers::Headers;
use crate::legacy::LegacyRecords;
use crate::v2::V2Records;
use crate::{Error, TimestampType};

/// A borrowed record view. `'r` borrows from the walked input or from the batch's pooled
/// decompression buffer.
#[derive(Clone, Debug)]
pub struct Record<'r> {
    offset: i64,
    timestamp: i64,
    timestamp_type: TimestampType,
    key: Option<&'r [u8]>,
    value: Option<&'r [u8]>,
    headers: Headers<'r>,
    shared: Option<&'r Bytes>,
}

impl<'r> Record<'r> {
    pub(crate) fn new(
        offset: i64,
        timestamp: i64,
        timestamp_type: TimestampType,
        key: Option<&'r [u8]>,
        value: Option<&'r [u8]>,
        headers: Headers<'r>,
        shared: Option<&'r Bytes>,
    ) -> Self {
        Record {
            offset,
            timestamp,
            timestamp_type,
            key,
            value,
            headers,
            shared,
        }
    }

    /// The header index, for the record iterator to fill in place.
    #[inline(always)]
    pub(crate) fn inline_index_mut(&mut self) -> &mut crate::headers::InlineIndex {
        self.headers.inline_index_mut()
    }

    /// Sets the fields read from the wire (the index was filled in place).
    #[inline(always)]
    pub(crate) fn set_fields(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&'r [u8]>,
        value: Option<&'r [u8]>,
        headers: &'r [u8],
        header_count: u32,
    ) {
        self.offset = offset;
        self.timestamp = timestamp;
        self.key = key;
        self.value = value;
        self.headers.set_section(headers, header_count);
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
        self.key
    }
    /// The value, `None` when null (a tombstone).
    pub fn value(&self) -> Option<&'r [u8]> {
        self.value
    }
    /// The headers, indexed on first use.
    pub fn headers(&self) -> &Headers<'r> {
        &self.headers
    }
    /// The key as owned `Bytes`: zero-copy when walked with
    /// [`BatchWalk::new_shared`](crate::BatchWalk::new_shared) and uncompressed, a copy otherwise.
    pub fn key_bytes(&self) -> Option<Bytes> {
        self.key.map(|k| self.to_bytes(k))
    }
    /// The value as owned `Bytes` (same copy rules as [`Record::key_bytes`]).
    pub fn value_bytes(&self) -> Option<Bytes> {
        self.value.map(|v| self.to_bytes(v))
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
