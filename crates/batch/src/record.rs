//! Borrowed record views and the record iterator.

use bytes::Bytes;

use crate::batch_header::TimestampType;
use crate::headers::Headers;
use crate::index::{HeaderCount, InlineIndex};
use crate::legacy::LegacyRecords;
use crate::v2::V2Records;
use crate::Error;

/// A borrowed record view. `'r` borrows from the walked input or from the batch's pooled
/// decompression buffer.
#[derive(Clone, Debug)]
pub struct Record<'r> {
    offset: i64,
    timestamp: i64,
    shared: Option<&'r Bytes>,
    key: Option<&'r [u8]>,
    value: Option<&'r [u8]>,
    timestamp_type: TimestampType,
    headers: Headers<'r>,
}

impl<'r> Record<'r> {
    /// A record with no headers.
    pub(crate) fn without_headers(
        offset: i64,
        timestamp: i64,
        timestamp_type: TimestampType,
        key: Option<&'r [u8]>,
        value: Option<&'r [u8]>,
        shared: Option<&'r Bytes>,
    ) -> Self {
        Record {
            offset,
            timestamp,
            shared,
            key,
            value,
            timestamp_type,
            headers: Headers::none(),
        }
    }

    /// An empty record for the v2 iterator to fill in place.
    #[inline(always)]
    pub(crate) fn empty(timestamp_type: TimestampType, shared: Option<&'r Bytes>) -> Self {
        Record::without_headers(0, 0, timestamp_type, None, None, shared)
    }

    /// The header index, for the record iterator to fill in place.
    #[inline(always)]
    pub(crate) fn inline_index_mut(&mut self) -> &mut InlineIndex {
        self.headers.inline_index_mut()
    }

    /// Sets the fields read from the wire (the header index was filled in place); the
    /// checked headers section `headers` holds `header_count` headers.
    #[inline(always)]
    pub(crate) fn set_fields(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&'r [u8]>,
        value: Option<&'r [u8]>,
        headers: &'r [u8],
        header_count: HeaderCount,
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
///
/// Two ways to read it: as an [`Iterator`] of owned [`Record`] views, or with
/// [`Records::next_ref`], which fills one record in place and lends it out. The second is the
/// hot path: returning a `Record` by value through `Option<Result<..>>` costs two copies and
/// a store-forwarding stall per record, a large share of a small record's decode time.
///
/// ```
/// # use krec_batch::{BatchWalk, DecodeConfig};
/// # fn sum(input: &[u8]) -> Result<usize, krec_batch::Error> {
/// let config = DecodeConfig::default();
/// let mut bytes = 0;
/// for batch in BatchWalk::new(input, &config) {
///     let batch = batch?;
///     let mut records = batch.records();
///     while let Some(record) = records.next_ref() {
///         let record = record?;
///         bytes += record.value().map_or(0, <[u8]>::len);
///     }
/// }
/// # Ok(bytes)
/// # }
/// ```
pub struct Records<'b> {
    inner: Inner<'b>,
    /// The record [`Records::next_ref`] fills in place.
    current: Record<'b>,
    /// Records below this offset are checked but not yielded ([`Records::from_offset`]).
    from: i64,
    /// Records at or after this offset are checked but not yielded ([`Records::until_offset`]).
    until: i64,
    /// `until - from` as unsigned: one comparison per record tests both bounds.
    span: u64,
}

impl<'b> Records<'b> {
    pub(crate) fn empty() -> Self {
        Records {
            inner: Inner::Empty,
            current: Record::empty(TimestampType::CreateTime, None),
            from: i64::MIN,
            until: i64::MAX,
            span: u64::MAX,
        }
    }
    /// The records of a v2 batch; `shared` is the walked input when the records' bytes are
    /// in it ([`Record::key_bytes`]).
    pub(crate) fn v2(records: V2Records<'b>, shared: Option<&'b Bytes>) -> Self {
        Records {
            current: Record::empty(records.header().timestamp_type, shared),
            inner: Inner::V2(records),
            from: i64::MIN,
            until: i64::MAX,
            span: u64::MAX,
        }
    }
    /// The records of a legacy batch; `shared` as for [`Records::v2`].
    pub(crate) fn legacy(records: LegacyRecords<'b>, shared: Option<&'b Bytes>) -> Self {
        Records {
            inner: Inner::Legacy(records),
            current: Record::empty(TimestampType::CreateTime, shared),
            from: i64::MIN,
            until: i64::MAX,
            span: u64::MAX,
        }
    }

    /// Yields only the records at or after `offset`; those before it are still checked (an
    /// error in them is still reported). A fetch from an offset inside a batch gets the whole
    /// batch from the broker, and the records before the fetch offset must not be delivered.
    pub fn from_offset(mut self, offset: i64) -> Self {
        self.from = offset;
        self.span = span(offset, self.until);
        self
    }

    /// Yields only the records before `offset` (exclusive); those at or after it are still
    /// checked. A share group's member owns only the offsets acquired for it, which may end
    /// inside a batch.
    pub fn until_offset(mut self, offset: i64) -> Self {
        self.until = offset;
        self.span = span(self.from, offset);
        self
    }

    /// The next data record, filled in place and lent until the next call; `None` after the
    /// last record or the first error. Yields exactly what the [`Iterator`] would, without
    /// moving a `Record` per step.
    #[inline]
    pub fn next_ref(&mut self) -> Option<Result<&Record<'b>, Error>> {
        loop {
            match &mut self.inner {
                Inner::Empty => return None,
                Inner::V2(r) => {
                    if let Err(e) = fill_v2(r, &mut self.current)? {
                        return Some(Err(e));
                    }
                }
                Inner::Legacy(r) => {
                    if let Err(e) = fill_legacy(r, &mut self.current)? {
                        return Some(Err(e));
                    }
                }
            }
            if (self.current.offset.wrapping_sub(self.from) as u64) < self.span {
                return Some(Ok(&self.current));
            }
        }
    }
}

/// How many offsets `from..until` holds (0 when empty).
fn span(from: i64, until: i64) -> u64 {
    (i128::from(until) - i128::from(from)).clamp(0, i128::from(u64::MAX)) as u64
}

/// Reads the next data record of `records` into `record`, the header index written straight
/// into it.
#[inline(always)]
fn fill_v2<'b>(records: &mut V2Records<'b>, record: &mut Record<'b>) -> Option<Result<(), Error>> {
    let (_, raw) = match records.next_raw(record.inline_index_mut())? {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    let header = records.header();
    let timestamp = match header.timestamp_type {
        TimestampType::LogAppendTime => header.max_timestamp,
        _ => header.base_timestamp.wrapping_add(raw.timestamp_delta),
    };
    record.set_fields(
        header.base_offset + raw.offset_delta as i64,
        timestamp,
        raw.key,
        raw.value,
        raw.headers,
        raw.header_count,
    );
    Some(Ok(()))
}

/// The next legacy message, written into `record` as [`fill_v2`] writes its records. Out of
/// line, and with `fill_v2`'s result type, so that the record loop the two share handles no
/// `Record` returned by value, which slowed the v2 records (see BENCHMARKS.md, krec-batch).
#[inline(never)]
fn fill_legacy<'b>(
    records: &mut LegacyRecords<'b>,
    record: &mut Record<'b>,
) -> Option<Result<(), Error>> {
    match records.next_record()? {
        Ok(next) => {
            *record = Record::without_headers(
                next.offset,
                next.timestamp,
                next.timestamp_type,
                next.key,
                next.value,
                record.shared,
            );
            Some(Ok(()))
        }
        Err(e) => Some(Err(e)),
    }
}

impl<'b> Iterator for Records<'b> {
    type Item = Result<Record<'b>, Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // Through the in-place path and a copy: one way to read a v2 record, so a program that
        // uses both ways does not get the hot path compiled twice (with two callers the
        // compiler inlined it differently, and slower).
        match self.next_ref()? {
            Ok(record) => Some(Ok(record.clone())),
            Err(e) => Some(Err(e)),
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
